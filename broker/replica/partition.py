"""One partition hosted on this broker: its log, role, leader epoch, replica set and ISR.

State, all on the event loop thread:

- ``log``: the `PartitionLog` (log start offset, high watermark, log end offset).
- ``leader_id`` / ``leader_epoch``: who leads and since which epoch; this broker
  is the leader when ``leader_id`` is its own id (`is_leader`).
- ``replicas`` (assignment order, first = preferred leader) and ``isr``.
- ``producers``: the idempotent-producer state, rebuilt from snapshots and the
  log at start (see broker/producer_state.py); ``snapshot_offset`` is the offset
  of its newest snapshot; ``snapshots_pending`` the offsets of snapshots taken
  and not yet on disk (they are written in the executor).
- ``waiters``: fetches parked until data arrives (`wake`).
- As leader: ``follower_leo``, ``follower_log_start`` and ``caught_up_ms`` per
  follower (from their fetches: fetch offset and log start offset), ``epoch_start`` (the LEO when this leadership began) and
  ``hw_waiters``, acks=all produces waiting for the HW to pass an offset.
- ``partition_epoch``: the version of the partition's state in the cluster
  metadata (ZooKeeper's znode version), for conditional ISR writes.
- ``pending_isr``: as leader, an ISR change asked for and not yet written (or
  whose write had an unknown outcome), else None. Until it is settled the HW
  counts the *maximal* ISR (`maximal_isr`: the committed ISR plus pending
  additions; a pending removal still counts), as Kafka's AlterPartition
  rules: a follower being added may be elected once the write lands, so the
  HW must not pass its log end meanwhile.
- ``lead_term``: bumped whenever this broker stops leading; an acks=all wait
  that began in another term fails (its batch may have been truncated),
  while a new leader epoch with this broker still leading does not end it.
- As follower: ``needs_truncation`` until the fetcher has asked the leader
  where its log and ours diverge (OffsetForLeaderEpoch).

A single broker leads every partition with replicas = ISR = [itself]; with
replication, the cluster side changes the role with `become_leader` and
`become_follower`.
"""

from __future__ import annotations

import asyncio

from broker.producer_state import PartitionProducers
from protocol.errors import ErrorCode, KafkaError
from storage.partition_log import PartitionLog


class Partition:
    __slots__ = (
        "topic",
        "index",
        "log",
        "local_id",
        "leader_id",
        "leader_epoch",
        "replicas",
        "isr",
        "producers",
        "snapshot_offset",
        "snapshots_pending",
        "waiters",
        "follower_leo",
        "follower_log_start",
        "caught_up_ms",
        "epoch_start",
        "hw_waiters",
        "partition_epoch",
        "needs_truncation",
        "pending_isr",
        "lead_term",
    )

    def __init__(self, topic: str, index: int, log: PartitionLog, local_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.local_id = local_id
        self.leader_id = -1
        self.leader_epoch = -1
        self.replicas: list[int] = [local_id]
        self.isr: list[int] = []
        self.producers: PartitionProducers | None = None
        self.snapshot_offset = -1
        self.snapshots_pending: set[int] = set()
        self.waiters: set[asyncio.Future[None]] = set()
        self.follower_leo: dict[int, int] = {}
        self.follower_log_start: dict[int, int] = {}
        self.caught_up_ms: dict[int, int] = {}
        self.epoch_start = 0
        self.hw_waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.partition_epoch = -1
        self.needs_truncation = False
        self.pending_isr: list[int] | None = None
        self.lead_term = 0

    @property
    def tp(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    @property
    def maximal_isr(self) -> list[int]:
        """The ISR the HW is computed over: the committed one plus any pending addition."""
        pending = self.pending_isr
        if pending is None:
            return self.isr
        return self.isr + [r for r in pending if r not in self.isr]

    def become_leader(
        self, leader_epoch: int, replicas: list[int], isr: list[int], now_ms: int, partition_epoch: int = -1
    ) -> None:
        """Lead from ``leader_epoch`` on: the epoch's start offset is recorded at the LEO (Kafka's makeLeader).

        Followers count as caught up now, so the ISR does not shrink before
        they have had ``replica.lag.time.max.ms`` to fetch from the new leader.
        """
        self.log.become_leader(leader_epoch)
        new_term = not self.is_leader or leader_epoch != self.leader_epoch
        self.leader_id = self.local_id
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self.needs_truncation = False
        self.pending_isr = None
        if new_term:
            self.epoch_start = self.log.log_end_offset
            self.follower_leo = {}
            self.follower_log_start = {}
            self.caught_up_ms = {r: now_ms for r in replicas if r != self.local_id}

    def become_follower(
        self, leader_id: int, leader_epoch: int, replicas: list[int], isr: list[int], partition_epoch: int
    ) -> None:
        """Follow ``leader_id`` (or nobody, -1) from ``leader_epoch`` on; acks=all waiters are failed."""
        if self.is_leader:
            self.lead_term += 1
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.partition_epoch = partition_epoch
        self.needs_truncation = True
        self.pending_isr = None
        self.follower_leo = {}
        self.follower_log_start = {}
        self.caught_up_ms = {}
        self.fail_hw_waiters()
        self.wake()

    def fail_hw_waiters(self) -> None:
        waiters, self.hw_waiters = self.hw_waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_result(None)  # the waiter re-checks leadership and answers accordingly

    def release_hw_waiters(self) -> None:
        """Resolve the acks=all waiters whose offset the HW has passed."""
        hw = self.log.high_watermark
        if not self.hw_waiters:
            return
        keep = []
        for offset, fut in self.hw_waiters:
            if offset <= hw:
                if not fut.done():
                    fut.set_result(None)
            elif not fut.done():
                keep.append((offset, fut))
        self.hw_waiters = keep

    def check_epoch(self, current: int) -> None:
        """Fencing of a request that names the leader epoch it believes current (-1: none given).

        Older than ours: FENCED_LEADER_EPOCH (the sender missed a leader change);
        newer: UNKNOWN_LEADER_EPOCH (we have not heard of it yet).
        """
        if current < 0 or current == self.leader_epoch:
            return
        if current < self.leader_epoch:
            raise KafkaError(
                f"leader epoch {current} is older than {self.leader_epoch}", ErrorCode.FENCED_LEADER_EPOCH
            )
        raise KafkaError(
            f"leader epoch {current} is newer than {self.leader_epoch}", ErrorCode.UNKNOWN_LEADER_EPOCH
        )

    def producer_state(self) -> PartitionProducers:
        if self.producers is None:
            self.producers = PartitionProducers()
        return self.producers

    def wake(self) -> None:
        """Resolve every fetch parked on this partition (new data, or the partition went away)."""
        waiters, self.waiters = self.waiters, set()
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={self.isr}, hw={self.log.high_watermark}, leo={self.log.log_end_offset})"
        )
