"""The console's one door to the cluster: the bundled client, with a short-lived cache.

Pages never talk to the client directly; they ask the `Gateway`, which keeps one
`AIOAdminClient` and a `ClusterSnapshot` refreshed at most every ``max_age`` seconds (so a
topics page with 2,000 partitions costs a handful of requests, whoever asks, however often).
A snapshot costs: Metadata (every topic), ListOffsets earliest and latest for every partition
(one request per leader each), DescribeLogDirs (one per broker) and DescribeCluster.

Errors from the client propagate as `client.errors.KafkaError`; the web layer turns them into
a banner (cluster unreachable) or a readable message (bad input).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client.admin import AIOAdminClient
from client.errors import KafkaError
from client.types import OffsetAndTimestamp, TopicPartition

log = logging.getLogger(__name__)


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
    taken_ms: int
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerRow, ...]
    topics: dict[str, TopicRow] = field(default_factory=dict)

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    @property
    def under_replicated(self) -> int:
        return sum(t.under_replicated for t in self.topics.values())

    @property
    def offline(self) -> int:
        return sum(t.offline for t in self.topics.values())


def _offset(value: object) -> int | None:
    return value.offset if isinstance(value, OffsetAndTimestamp) else None


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

    async def start(self) -> None:
        await self.admin.start()

    async def close(self) -> None:
        await self.admin.close()

    def forget(self) -> None:
        """Drop the cached snapshot and group list (after a change made through the console)."""
        self._snapshot = None
        self._groups = None

    async def groups(self) -> dict[str, str]:
        """{group id: protocol type} of every group the cluster lists (ListGroups on each broker)."""
        async with self._groups_lock:
            if self._groups is None or time.monotonic() - self._groups_taken > self.max_age:
                self._groups = await self.admin.list_groups()
                self._groups_taken = time.monotonic()
            return self._groups

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
        sizes: dict[TopicPartition, int] = {}
        if tps:
            earliest, latest = await asyncio.gather(
                admin.list_offsets(dict.fromkeys(tps, "earliest")),
                admin.list_offsets(dict.fromkeys(tps, "latest")),
            )
            with contextlib.suppress(KafkaError):  # an older cluster, or no permission: sizes unknown
                sizes = await admin.describe_log_dirs()
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
            int(time.time() * 1000), described.cluster_id, described.controller_id, brokers, rows
        )
