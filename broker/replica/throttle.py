"""Replication throttles: the bytes a reassignment's copying may use, as Kafka's ReplicationQuotaManager.

Kafka's keys and rules:

- Broker ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` (bytes/s; unset: no limit). Kafka
  measures them with its Rate over 11 one-second windows, which lets a copy
  burst ten seconds' worth at full speed each time the windows expire (the
  long-run rate is right, the copy arrives in 11 s pulses); here a token
  bucket holding one second's worth gives the same long-run rate with no
  such pulses, which is what the throttle is for: producers beside the copy
  see a steady load.
- Topic ``leader.replication.throttled.replicas`` and
  ``follower.replication.throttled.replicas``: ``partition:broker`` pairs
  (``0:101,1:102``) or ``*`` (every replica); a broker throttles the
  partitions listed with its own id.
- Leader side: a follower fetch for a throttled partition from a replica
  that is not in the ISR gets no records while the leader quota is exceeded.
  Follower side: a partition this broker follows without being in the ISR,
  throttled here, is left out of its fetches while the follower quota is
  exceeded. Both count the bytes of every throttled partition, in-sync
  replicas' too (Kafka's sizeOfThrottledPartitions and the follower's
  accounting), but in-sync replicas are never held back, so producers'
  acks=all never wait on a throttle.
"""

from __future__ import annotations

import time

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
ALL = frozenset({-1})  # "*": every partition


class Quota:
    """A byte rate: ``rate`` bytes/s (None: unlimited), with bursts of at most ``burst_s`` seconds' worth.

    A token bucket: it fills at ``rate`` up to ``rate * burst_s`` and `record`
    takes from it (it may go below zero: a response is never cut short);
    `exceeded` while it is empty.
    """

    def __init__(self, rate: float | None = None, burst_s: float = 1.0) -> None:
        self.rate = rate
        self._burst_s = burst_s
        self._tokens = 0.0 if rate is None else rate * burst_s
        self._at: float | None = None  # when the bucket was last filled

    def set_rate(self, rate: float | None) -> None:
        if rate is not None:
            full = rate * self._burst_s
            self._tokens = full if self.rate is None else min(self._tokens, full)
        self.rate = rate

    def _fill(self, now: float) -> None:
        if self.rate is not None and self._at is not None:
            self._tokens = min(self._tokens + (now - self._at) * self.rate, self.rate * self._burst_s)
        self._at = now

    def record(self, nbytes: int, now: float | None = None) -> None:
        self._fill(time.monotonic() if now is None else now)
        self._tokens -= nbytes

    def exceeded(self, now: float | None = None) -> bool:
        if self.rate is None:
            return False
        self._fill(time.monotonic() if now is None else now)
        return self._tokens <= 0


def throttled_partitions(value: str | None, broker_id: int) -> frozenset[int]:
    """The partitions a ``*.replication.throttled.replicas`` value throttles on ``broker_id`` (`ALL` for
    ``*``); entries that do not parse are ignored, as Kafka's config handler ignores them."""
    if not value or not value.strip():
        return frozenset()
    if value.strip() == "*":
        return ALL
    out = set()
    for entry in value.split(","):
        partition, _, broker = entry.strip().partition(":")
        if partition.strip().isdigit() and broker.strip().lstrip("-").isdigit() and int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


class ReplicationThrottles:
    """This broker's leader and follower quotas, and which of its partitions they apply to."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.leader = Quota()
        self.follower = Quota()
        self._parsed: dict[str | None, frozenset[int]] = {}  # by config value

    def set_rates(self, leader: float | None, follower: float | None) -> None:
        self.leader.set_rate(leader)
        self.follower.set_rate(follower)

    def _applies(self, value: str | None, partition: int) -> bool:
        parsed = self._parsed.get(value)
        if parsed is None:
            if len(self._parsed) > 1024:
                self._parsed.clear()
            parsed = self._parsed[value] = throttled_partitions(value, self.broker_id)
        return parsed is ALL or partition in parsed

    def leader_throttled(self, configs: dict[str, str], partition: int) -> bool:
        """Whether a fetch by an out-of-sync follower of ``partition`` (its topic's ``configs``) waits."""
        return (
            self.leader.rate is not None
            and self._applies(configs.get(LEADER_REPLICAS), partition)
            and self.leader.exceeded()
        )

    def leader_counts(self, configs: dict[str, str], partition: int) -> bool:
        return self.leader.rate is not None and self._applies(configs.get(LEADER_REPLICAS), partition)

    def follower_throttled(self, configs: dict[str, str], partition: int) -> bool:
        """Whether this broker, out of sync for ``partition``, leaves it out of its next fetch."""
        return (
            self.follower.rate is not None
            and self._applies(configs.get(FOLLOWER_REPLICAS), partition)
            and self.follower.exceeded()
        )

    def follower_counts(self, configs: dict[str, str], partition: int) -> bool:
        return self.follower.rate is not None and self._applies(configs.get(FOLLOWER_REPLICAS), partition)
