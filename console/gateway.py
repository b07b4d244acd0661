"""The console's one door to the cluster: the bundled client, with a short-lived cache.

Pages never talk to the client directly; they ask the `Gateway`, which keeps one
`AIOAdminClient` and a `ClusterSnapshot` refreshed at most every ``max_age`` seconds (so a
topics page with 2,000 partitions costs a handful of requests, whoever asks, however often).
A snapshot costs: DescribeCluster, Metadata (every topic), ListOffsets earliest and latest for
every partition (one request per leader each) and DescribeLogDirs (one per live broker, each
given `LOG_DIRS_TIMEOUT_S` to answer: a hung broker leaves its sizes unknown instead of holding
every page for the client's request timeout). The snapshot keeps each broker's own DescribeLogDirs
answer (`ClusterSnapshot.log_dirs`), from which come a partition's size (its leader's copy) and
the brokers page's bytes per broker and reassignment progress.

Also cached for ``max_age``: the group list (ListGroups) and the reassignments in progress
(ListPartitionReassignments, one request to the controller); for `BALANCE_MAX_AGE_S`, the
controller's leader-balance settings (DescribeConfigs of that one broker).

Errors from the client propagate as `client.errors.KafkaError`; the web layer turns them into
a banner (cluster unreachable) or a readable message (bad input).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client.admin import BROKER, AIOAdminClient, PartitionReassignment
from client.errors import KafkaError, KafkaResponseError, KafkaTimeoutError
from client.types import OffsetAndTimestamp, TopicPartition

log = logging.getLogger(__name__)

LOG_DIRS_TIMEOUT_S = 5.0
BALANCE_MAX_AGE_S = 60.0
IMBALANCE_KEY = "leader.imbalance.per.broker.percentage"
AUTO_REBALANCE_KEY = "auto.leader.rebalance.enable"
CHECK_INTERVAL_KEY = "leader.imbalance.check.interval.seconds"
DEFAULT_IMBALANCE_PERCENTAGE = 10  # Kafka's default of leader.imbalance.per.broker.percentage

LogDirs = dict[TopicPartition, int] | KafkaError  # one broker's DescribeLogDirs answer, or its error


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start: int | None
    high_watermark: int | None
    size: int | None  # bytes on disk (the leader's copy), None where the cluster does not say

    @property
    def records(self) -> int | None:
        if self.log_start is None or self.high_watermark is None:
            return None
        return max(self.high_watermark - self.log_start, 0)

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader < 0


@dataclass(frozen=True)
class TopicRow:
    name: str
    internal: bool
    partitions: tuple[PartitionRow, ...]

    @property
    def replication(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)

    @property
    def records(self) -> int | None:
        counts = [p.records for p in self.partitions]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)

    @property
    def size(self) -> int | None:
        sizes = [p.size for p in self.partitions if p.size is not None]
        return sum(sizes) if sizes else None

    @property
    def under_replicated(self) -> int:
        return sum(p.under_replicated for p in self.partitions)

    @property
    def offline(self) -> int:
        return sum(p.offline for p in self.partitions)


@dataclass(frozen=True)
class BrokerRow:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class ClusterSnapshot:
    """The cluster at ``taken_ms``: ``brokers`` are the live ones (DescribeCluster), ``log_dirs``
    each live broker's DescribeLogDirs answer ({partition: bytes of its replica there}) or error."""

    taken_ms: int
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerRow, ...]
    topics: dict[str, TopicRow] = field(default_factory=dict)
    log_dirs: dict[int, LogDirs] = field(default_factory=dict)

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    @property
    def under_replicated(self) -> int:
        return sum(t.under_replicated for t in self.topics.values())

    @property
    def offline(self) -> int:
        return sum(t.offline for t in self.topics.values())


@dataclass(frozen=True)
class LeaderBalanceConfig:
    """The controller's leader-balance settings (Kafka's controller is the one that checks).

    ``percentage`` is `DEFAULT_IMBALANCE_PERCENTAGE` and ``error`` says why when the controller's
    configs could not be read; ``auto`` and ``interval_s`` are None when not known."""

    percentage: int
    controller_id: int
    auto: bool | None = None
    interval_s: int | None = None
    error: str | None = None


def _offset(value: object) -> int | None:
    return value.offset if isinstance(value, OffsetAndTimestamp) else None


def partition_sizes(
    log_dirs: Mapping[int, LogDirs], leaders: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Bytes of each partition: its leader's replica, else the largest replica that was reported
    (as `AIOAdminClient.describe_log_dirs` computes it)."""
    reported: dict[TopicPartition, dict[int, int]] = {}
    for node, sizes in log_dirs.items():
        if isinstance(sizes, KafkaError):
            continue
        for tp, size in sizes.items():
            reported.setdefault(tp, {})[node] = size
    return {
        tp: by_node[leaders[tp]] if leaders.get(tp) in by_node else max(by_node.values())
        for tp, by_node in reported.items()
    }


class Gateway:
    """The admin client and the cached cluster snapshot; ``await start()`` / ``close()``."""

    def __init__(self, client_config: Mapping[str, Any], max_age: float = 3.0) -> None:
        self.client_config = dict(client_config)
        self.admin = AIOAdminClient(self.client_config)
        self.max_age = max_age
        self._snapshot: ClusterSnapshot | None = None
        self._taken = 0.0
        self._lock = asyncio.Lock()
        self._groups: dict[str, str] | None = None
        self._groups_taken = 0.0
        self._groups_lock = asyncio.Lock()
        self._reassignments: dict[TopicPartition, PartitionReassignment] | None = None
        self._reassignments_taken = 0.0
        self._reassignments_lock = asyncio.Lock()
        self._balance: LeaderBalanceConfig | None = None
        self._balance_taken = 0.0

    async def start(self) -> None:
        await self.admin.start()

    async def close(self) -> None:
        await self.admin.close()

    def forget(self) -> None:
        """Drop the cached snapshot, group list and reassignments (after a change made through the
        console)."""
        self._snapshot = None
        self._groups = None
        self._reassignments = None

    async def groups(self) -> dict[str, str]:
        """{group id: protocol type} of every group the cluster lists (ListGroups on each broker)."""
        async with self._groups_lock:
            if self._groups is None or time.monotonic() - self._groups_taken > self.max_age:
                self._groups = await self.admin.list_groups()
                self._groups_taken = time.monotonic()
            return self._groups

    async def reassignments(self) -> dict[TopicPartition, PartitionReassignment]:
        """The partition reassignments in progress (ListPartitionReassignments to the controller)."""
        async with self._reassignments_lock:
            if self._reassignments is None or time.monotonic() - self._reassignments_taken > self.max_age:
                self._reassignments = await self.admin.list_partition_reassignments()
                self._reassignments_taken = time.monotonic()
            return self._reassignments

    async def leader_balance(self, controller_id: int) -> LeaderBalanceConfig:
        """``controller_id``'s leader-balance settings (DescribeConfigs of that broker), kept for
        `BALANCE_MAX_AGE_S`; Kafka's default percentage, with the reason, when they cannot be read."""
        kept = self._balance
        if (
            kept is not None
            and kept.controller_id == controller_id
            and time.monotonic() - self._balance_taken < BALANCE_MAX_AGE_S
        ):
            return kept
        self._balance = await self._read_balance(controller_id)
        self._balance_taken = time.monotonic()
        return self._balance

    async def _read_balance(self, controller_id: int) -> LeaderBalanceConfig:
        default = DEFAULT_IMBALANCE_PERCENTAGE
        if controller_id < 0:
            return LeaderBalanceConfig(default, controller_id, error="the cluster names no controller")
        resource = (BROKER, str(controller_id))
        keys = (IMBALANCE_KEY, AUTO_REBALANCE_KEY, CHECK_INTERVAL_KEY)
        try:
            found = (await self.admin.describe_configs([resource], keys)).get(resource)
        except KafkaError as exc:
            found = exc
        if not isinstance(found, dict):
            if isinstance(found, KafkaResponseError):  # its text starts with the resource name
                why = f"DescribeConfigs of broker {controller_id}: {getattr(found.code, 'name', found.code)}"
            else:
                why = str(found) if found is not None else f"no answer for broker {controller_id}"
            return LeaderBalanceConfig(default, controller_id, error=why)
        values = {k: e.value for k, e in found.items() if e.value is not None}
        try:
            percentage = int(values[IMBALANCE_KEY])
        except (KeyError, ValueError):
            return LeaderBalanceConfig(
                default, controller_id, error=f"the controller does not report {IMBALANCE_KEY}"
            )
        auto = values.get(AUTO_REBALANCE_KEY)
        interval = values.get(CHECK_INTERVAL_KEY)
        return LeaderBalanceConfig(
            percentage,
            controller_id,
            auto=None if auto is None else auto.lower() == "true",
            interval_s=int(interval) if interval is not None and interval.isdigit() else None,
        )

    async def snapshot(self, max_age: float | None = None) -> ClusterSnapshot:
        age = self.max_age if max_age is None else max_age
        async with self._lock:
            if self._snapshot is None or time.monotonic() - self._taken > age:
                self._snapshot = await self._take()
                self._taken = time.monotonic()
            return self._snapshot

    async def topic(self, name: str) -> TopicRow | None:
        snap = await self.snapshot()
        if name not in snap.topics:  # created a moment ago, perhaps: look again before saying no
            snap = await self.snapshot(max_age=0)
        return snap.topics.get(name)

    async def _take(self) -> ClusterSnapshot:
        admin = self.admin
        described = await admin.describe_cluster()
        topics = await admin.list_topics(internal=True)
        tps = [TopicPartition(t.name, p) for t in topics.values() for p in sorted(t.partitions)]
        earliest: dict[TopicPartition, Any] = {}
        latest: dict[TopicPartition, Any] = {}
        log_dirs_of = self._log_dirs([b.node_id for b in described.brokers])
        if tps:
            earliest, latest, log_dirs = await asyncio.gather(
                admin.list_offsets(dict.fromkeys(tps, "earliest")),
                admin.list_offsets(dict.fromkeys(tps, "latest")),
                log_dirs_of,
            )
        else:
            log_dirs = await log_dirs_of
        leaders = {
            TopicPartition(t.name, p): pi.leader for t in topics.values() for p, pi in t.partitions.items()
        }
        sizes = partition_sizes(log_dirs, leaders)
        rows: dict[str, TopicRow] = {}
        for name in sorted(topics):
            info = topics[name]
            parts = tuple(
                PartitionRow(
                    name,
                    p,
                    pi.leader,
                    tuple(pi.replicas),
                    tuple(pi.isr),
                    _offset(earliest.get(TopicPartition(name, p))),
                    _offset(latest.get(TopicPartition(name, p))),
                    sizes.get(TopicPartition(name, p)),
                )
                for p, pi in sorted(info.partitions.items())
            )
            rows[name] = TopicRow(name, info.internal, parts)
        brokers = tuple(
            BrokerRow(b.node_id, b.host, b.port, b.rack)
            for b in sorted(described.brokers, key=lambda b: b.node_id)
        )
        return ClusterSnapshot(
            int(time.time() * 1000), described.cluster_id, described.controller_id, brokers, rows, log_dirs
        )

    async def _log_dirs(self, nodes: list[int]) -> dict[int, LogDirs]:
        """Each broker's DescribeLogDirs answer (or error: an older broker, no permission, no answer
        within `LOG_DIRS_TIMEOUT_S`), the brokers asked concurrently, one request each."""

        async def one(node: int) -> LogDirs:
            try:
                async with asyncio.timeout(LOG_DIRS_TIMEOUT_S):
                    return (await self.admin.describe_log_dirs_by_broker([node]))[node]
            except TimeoutError:
                return KafkaTimeoutError(
                    f"broker {node} did not answer DescribeLogDirs within {LOG_DIRS_TIMEOUT_S:g} s"
                )

        answers = await asyncio.gather(*(one(n) for n in sorted(set(nodes))))
        return dict(zip(sorted(set(nodes)), answers, strict=True))
