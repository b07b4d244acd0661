"""The leader's copy pass (broker/tiered/copier.py, Kafka's RLMCopyTask) on a real tiered partition and a
memory object store: what it copies, and that a segment goes up with the producer snapshot at its end."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.producer_state import PartitionProducers
from broker.replica import ReplicaManager
from broker.replica.partition import Partition
from broker.tiered.context import TieredMetrics
from broker.tiered.copier import LeaderState, copy_pass
from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.metadata_records import (
    MetadataRecord,
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)
from broker.tiered.reader import segment_ref
from broker.tiered.segment_store import IndexType, RemoteSegmentStore
from protocol.records import Record, build_batch
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set

NODE = BrokerNode(1, "leader.example", 9092)
TIP = TopicIdPartition("t", uuid.UUID(int=9), 0)


@dataclass
class FakeMetadata:
    published: list[MetadataRecord] = field(default_factory=list)

    async def publish(self, rec: MetadataRecord) -> None:
        self.published.append(rec)


@dataclass
class FakeRLM:
    """What the copier uses of the remote log manager."""

    segments: RemoteSegmentStore
    node_id: int = NODE.node_id
    metadata: FakeMetadata = field(default_factory=FakeMetadata)
    metrics: TieredMetrics = field(default_factory=TieredMetrics)
    deleted: list[SegmentMetadata] = field(default_factory=list)

    async def delete_segment(self, md: SegmentMetadata, *, best_effort: bool = False) -> None:
        self.deleted.append(md)
        await self.segments.delete(segment_ref(md))


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    """Partition t-0, tiered, led here, with 1000-byte segments."""
    logs = LogManager(str(tmp_path / "data"), node_id=NODE.node_id, remote_log_system_enabled=True)
    replicas = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    LocalCluster(replicas, NODE).create_topic(
        "t", 1, {"remote.storage.enable": "true", "segment.bytes": "1000"}
    )
    yield replicas
    replicas.close()


@pytest.fixture
def leader(replicas: ReplicaManager) -> Partition:
    return replicas.partition("t", 0)


def _produce(replicas: ReplicaManager, part: Partition, batches: int) -> None:
    """Idempotent batches of ~400 bytes: a segment rolls every two of them."""
    for i in range(batches):
        seq = part.log.log_end_offset
        batch = build_batch(
            [Record(0, 0, None, b"x" * 300)], producer_id=77, producer_epoch=0, base_sequence=seq
        )
        buf, headers = record_set(batch)
        replicas.append(part, buf, headers, now_ms=1_000 + i)


async def _written(part: Partition) -> None:
    """Until the executor has written the partition's producer snapshots (and the loop heard of it)."""
    for _ in range(100):
        if not part.snapshots_pending:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("producer snapshots not written")


async def test_a_segment_waits_for_its_producer_snapshot(replicas: ReplicaManager, leader: Partition) -> None:
    rlm = FakeRLM(RemoteSegmentStore(MemoryObjectStore()))
    state = LeaderState(TIP, leader.leader_epoch)
    _produce(replicas, leader, 5)
    rolled = [s.base_offset for s in leader.log.segments[1:]]
    assert rolled and set(rolled) <= leader.snapshots_pending  # written in the executor, not yet done

    assert await copy_pass(rlm, leader, state) == 0  # nothing goes up without its snapshot
    assert rlm.metadata.published == []

    await _written(leader)
    copied = await copy_pass(rlm, leader, state)
    assert copied == len(rolled) and state.copied_offset == rolled[-1] - 1
    finished = [r for r in rlm.metadata.published if isinstance(r, SegmentMetadata)]
    for md in finished:
        snapshot = await rlm.segments.fetch_index(segment_ref(md), IndexType.PRODUCER_SNAPSHOT)
        assert snapshot, f"segment [{md.start_offset}, {md.end_offset}] copied without its producer snapshot"
    assert leader.log.remote is not None and leader.log.remote.highest_offset == rolled[-1] - 1


async def test_a_leader_deposed_during_an_upload_deletes_it_instead_of_finishing_it(
    replicas: ReplicaManager, leader: Partition
) -> None:
    store = MemoryObjectStore()
    rlm = FakeRLM(RemoteSegmentStore(store))
    state = LeaderState(TIP, leader.leader_epoch)
    _produce(replicas, leader, 5)
    await _written(leader)
    # the controller elects broker 2 while the first segment's objects go up
    real_put = store.put

    async def put_then_deposed(key: str, data: bytes | memoryview) -> None:
        await real_put(key, data)
        if leader.is_leader:
            leader.become_follower(2, leader.leader_epoch + 1, [1, 2], [1, 2], 5)

    store.put = put_then_deposed  # type: ignore[method-assign]
    assert await copy_pass(rlm, leader, state) == 0
    started = [r for r in rlm.metadata.published if isinstance(r, SegmentMetadata)]
    assert len(started) == 1 and rlm.deleted == started
    assert not [r for r in rlm.metadata.published if isinstance(r, SegmentMetadataUpdate)]  # no FINISHED
    assert store.objects == {}
    assert (
        state.copied_offset == -1 and leader.log.remote is not None and leader.log.remote.highest_offset == -1
    )
    assert started[0].state == SegmentState.COPY_SEGMENT_STARTED


async def test_a_segment_rolled_by_local_retention_gets_its_producer_snapshot(tmp_path: Path) -> None:
    # an idle tiered topic past local.retention.ms: retention rolls the active segment so it can be copied
    logs = LogManager(str(tmp_path / "idle"), node_id=NODE.node_id, remote_log_system_enabled=True)
    replicas = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    try:
        LocalCluster(replicas, NODE).create_topic(
            "t", 1, {"remote.storage.enable": "true", "local.retention.ms": "1"}
        )
        part = replicas.partition("t", 0)
        _produce(replicas, part, 1)
        end = part.log.log_end_offset
        later = time.time_ns() // 1_000_000 + 60_000
        assert logs.delete_old_segments(now_ms=later) == 0  # nothing remote yet: rolled, not deleted
        assert [s.base_offset for s in part.log.segments] == [0, end]
        replicas.snapshot_rolled_segments()
        await _written(part)
        rlm = FakeRLM(RemoteSegmentStore(MemoryObjectStore()))
        assert await copy_pass(rlm, part, LeaderState(TIP, part.leader_epoch)) == 1
        (md,) = [r for r in rlm.metadata.published if isinstance(r, SegmentMetadata)]
        snapshot = await rlm.segments.fetch_index(segment_ref(md), IndexType.PRODUCER_SNAPSHOT)
        assert snapshot and 77 in PartitionProducers.from_snapshot(snapshot).last_offsets()
    finally:
        replicas.close()
