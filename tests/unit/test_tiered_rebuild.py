"""A follower rebuilding its state from remote storage (broker/tiered/rebuild.py, Kafka's TierStateMachine),
on a real follower log, a memory object store and a leader answering from its leader-epoch cache;
and the replica fetcher's bookkeeping around it."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.replica import ReplicaManager
from broker.replica.fetcher import REBUILD_RETRY_S, ReplicaFetcher
from broker.replica.partition import Partition
from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.metadata_cache import RemoteLogMetadataCache
from broker.tiered.metadata_records import (
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)
from broker.tiered.object_store import ObjectStoreError
from broker.tiered.reader import segment_ref
from broker.tiered.rebuild import RebuildFailed, rebuild_follower
from broker.tiered.segment_store import RemoteSegmentStore
from protocol.errors import ErrorCode
from storage import naming
from storage.checkpoint import format_checkpoint
from storage.log_manager import LogManager
from tests.tiered.segment_files import PRODUCER_ID, write_log

NODE = BrokerNode(2, "follower.example", 9092)
LEADER = 1
LEADER_EPOCH = 5
TOPIC_ID = uuid.UUID("31627a14-74df-458c-baee-3cf065d7aa49")


@dataclass
class FakeLeader:
    """The leader's side of the rebuild: ListOffsets -4 and OffsetForLeaderEpoch from its epochs
    (BrokerLinks' ``call``). ``before_answer`` runs before each answer (to change the world)."""

    epochs: list[tuple[int, int]]
    local_start: int
    log_end: int
    error: int = 0
    calls: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    before_answer: Any = None

    def _epoch_of(self, offset: int) -> int:
        return max((e for e, start in self.epochs if start <= offset), default=-1)

    def _end_for(self, epoch: int) -> tuple[int, int]:
        """Kafka's endOffsetFor on the leader's cache."""
        if epoch >= self.epochs[-1][0]:
            return (epoch, self.log_end) if epoch == self.epochs[-1][0] else (-1, -1)
        below = [(e, s) for e, s in self.epochs if e <= epoch]
        following = next(s for e, s in self.epochs if e > epoch)
        return (below[-1][0] if below else epoch), following

    async def call(
        self, node_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> Any:
        assert node_id == LEADER
        self.calls.append((api_key, version, body))
        if self.before_answer is not None:
            self.before_answer()
        if api_key == 2:
            p = body["topics"][0]["partitions"][0]
            assert (version, p["timestamp"], p["current_leader_epoch"]) == (8, -4, LEADER_EPOCH)
            part = SimpleNamespace(
                error_code=self.error, offset=self.local_start, leader_epoch=self._epoch_of(self.local_start)
            )
            return SimpleNamespace(topics=[SimpleNamespace(partitions=[part])])
        assert (api_key, version) == (23, 3)
        epoch, end = self._end_for(body["topics"][0]["partitions"][0]["leader_epoch"])
        part = SimpleNamespace(error_code=self.error, leader_epoch=epoch, end_offset=end)
        return SimpleNamespace(topics=[SimpleNamespace(partitions=[part])])


@dataclass
class FakeMetadata:
    loads: int = 0
    catch_ups: int = 0

    async def load(self, tip: TopicIdPartition) -> None:
        self.loads += 1

    async def catch_up(self, tip: TopicIdPartition) -> None:
        self.catch_ups += 1


@dataclass
class FakeRLM:
    """What `rebuild_follower` uses of the remote log manager."""

    replicas: ReplicaManager
    leader_links: FakeLeader
    segments: RemoteSegmentStore
    remote: RemoteLogMetadataCache
    metadata: FakeMetadata = field(default_factory=FakeMetadata)

    def tip(self, part: Partition) -> TopicIdPartition:
        return TopicIdPartition(part.topic, TOPIC_ID, part.index)

    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache:
        return self.remote


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    """Broker 2's replicas: partition t-0, tiered, following broker 1 in leader epoch 5."""
    logs = LogManager(str(tmp_path / "follower"), node_id=NODE.node_id, remote_log_system_enabled=True)
    replicas = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    LocalCluster(replicas, NODE).create_topic("t", 1, {"remote.storage.enable": "true"})
    part = replicas.partition("t", 0)
    part.become_follower(LEADER, LEADER_EPOCH, [LEADER, NODE.node_id], [LEADER, NODE.node_id], 1)
    part.needs_truncation = False  # the fetcher has asked the leader already
    assert part.log.remote is not None
    yield replicas
    replicas.close()


@pytest.fixture
def follower(replicas: ReplicaManager) -> Partition:
    return replicas.partition("t", 0)


async def _remote_segment(
    tmp_path: Path, store: RemoteSegmentStore, start: int, end: int, epochs: tuple[tuple[int, int], ...]
) -> SegmentMetadata:
    """Segment [start, end] of t-0 uploaded to ``store``, its metadata in COPY_SEGMENT_STARTED
    (`_cache` finishes it). Its data: a real segment of `write_log`, with that log's producer snapshot
    (producer `PRODUCER_ID`); its leader-epoch checkpoint: ``epochs``."""
    written = write_log(tmp_path / "leader", batches=60)
    files, _, _ = written.files(0)
    md = SegmentMetadata(
        TopicIdPartition("t", TOPIC_ID, 0),
        uuid.uuid4(),
        start,
        end,
        LEADER,
        0,
        0,
        epochs,
        1000,
        None,
        SegmentState.COPY_SEGMENT_STARTED,
    )
    await store.copy(segment_ref(md), dataclasses.replace(files, leader_epochs=format_checkpoint(epochs)))
    written.log.close()
    return md


def _cache(*finished: SegmentMetadata) -> RemoteLogMetadataCache:
    cache = RemoteLogMetadataCache(finished[0].tip if finished else None)
    for md in finished:
        cache.add_copy_started(md)
        cache.update(
            SegmentMetadataUpdate(md.tip, md.segment_id, LEADER, 0, None, SegmentState.COPY_SEGMENT_FINISHED)
        )
    return cache


async def test_the_follower_starts_after_the_remote_segment_with_its_epochs_and_producers(
    tmp_path: Path, follower: Partition, replicas: ReplicaManager
) -> None:
    store = RemoteSegmentStore(MemoryObjectStore())
    epochs = ((0, 0), (3, 150))
    md = await _remote_segment(tmp_path, store, 0, 299, epochs)
    leader = FakeLeader(epochs=[(0, 0), (3, 150), (5, 400)], local_start=300, log_end=500)
    rlm = FakeRLM(replicas, leader, store, _cache(md))

    assert await rebuild_follower(rlm, follower, leader_log_start=0)  # type: ignore[arg-type]

    plog = follower.log
    assert (plog.log_start_offset, plog.local_log_start_offset, plog.log_end_offset) == (0, 300, 300)
    assert plog.high_watermark == 300
    assert plog.leader_epochs.entries == [(0, 0), (3, 150)]
    assert plog.remote is not None and plog.remote.highest_offset == 299
    assert follower.producers is not None and PRODUCER_ID in follower.producers.last_offsets()
    assert [n for n in sorted(Path(plog.directory).iterdir()) if n.suffix == ".snapshot"] == [
        Path(naming.snapshot_file(plog.directory, 300))
    ]
    assert rlm.metadata.loads == 1 and rlm.metadata.catch_ups == 1
    # epoch 3 of offset 300 is > 0: the epoch of 299 was asked for with OffsetForLeaderEpoch(2)
    assert [(k, v) for k, v, _ in leader.calls] == [(2, 8), (23, 3)]


async def test_an_epoch_without_records_is_skipped_as_kafka_does(
    tmp_path: Path, follower: Partition, replicas: ReplicaManager
) -> None:
    # Kafka's example (TierStateMachine): epochs 0@20, 1@85, 2 without records, 3@90, 4@98; the leader's
    # local log starts at 90 (epoch 3); offset 89 was written in epoch 1, which OffsetForLeaderEpoch(2) answers
    store = RemoteSegmentStore(MemoryObjectStore())
    md = await _remote_segment(tmp_path, store, 20, 89, ((0, 20), (1, 85)))
    leader = FakeLeader(epochs=[(0, 20), (1, 85), (3, 90), (4, 98)], local_start=90, log_end=120)
    rlm = FakeRLM(replicas, leader, store, _cache(md))

    assert await rebuild_follower(rlm, follower, leader_log_start=20)  # type: ignore[arg-type]
    plog = follower.log
    assert (plog.log_start_offset, plog.log_end_offset) == (20, 90)
    assert plog.leader_epochs.entries == [(0, 20), (1, 85)]


async def test_leader_epoch_0_needs_no_second_question(
    tmp_path: Path, follower: Partition, replicas: ReplicaManager
) -> None:
    store = RemoteSegmentStore(MemoryObjectStore())
    md = await _remote_segment(tmp_path, store, 100, 199, ((0, 100),))
    leader = FakeLeader(epochs=[(0, 0)], local_start=200, log_end=300)
    rlm = FakeRLM(replicas, leader, store, _cache(md))
    assert await rebuild_follower(rlm, follower, leader_log_start=100)  # type: ignore[arg-type]
    assert [k for k, _, _ in leader.calls] == [2]
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (100, 200)


async def test_failures_leave_the_log_as_it_was(
    tmp_path: Path, follower: Partition, replicas: ReplicaManager
) -> None:
    store = RemoteSegmentStore(MemoryObjectStore())
    md = await _remote_segment(tmp_path, store, 0, 199, ((0, 0),))
    before = (follower.log.log_start_offset, follower.log.log_end_offset, follower.log.leader_epochs.entries)

    def unchanged() -> bool:
        return (
            follower.log.log_start_offset,
            follower.log.log_end_offset,
            follower.log.leader_epochs.entries,
        ) == before

    # no remote segment known for the offset below the leader's local start (this broker's metadata lags)
    leader = FakeLeader(epochs=[(0, 0)], local_start=300, log_end=400)
    with pytest.raises(RebuildFailed, match="no remote segment holds offset 299"):
        await rebuild_follower(FakeRLM(replicas, leader, store, _cache(md)), follower, 0)  # type: ignore[arg-type]
    assert unchanged()

    # the object store fails
    failing = MemoryObjectStore()
    broken = RemoteSegmentStore(failing)
    md2 = await _remote_segment(tmp_path / "2", broken, 0, 199, ((0, 0),))
    failing.offline = True
    leader = FakeLeader(epochs=[(0, 0)], local_start=200, log_end=400)
    with pytest.raises(ObjectStoreError):
        await rebuild_follower(FakeRLM(replicas, leader, broken, _cache(md2)), follower, 0)  # type: ignore[arg-type]
    assert unchanged()

    # the leader says it is not the leader (any more): not now, quietly
    leader = FakeLeader(epochs=[(0, 0)], local_start=200, log_end=400, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert not await rebuild_follower(FakeRLM(replicas, leader, store, _cache(md)), follower, 0)  # type: ignore[arg-type]
    assert unchanged()

    # a new leader epoch arrives while the remote reads are on their way: the log is left alone
    leader = FakeLeader(epochs=[(0, 0)], local_start=200, log_end=400)
    leader.before_answer = lambda: follower.become_follower(
        LEADER, LEADER_EPOCH + 1, [LEADER, 2], [LEADER, 2], 2
    )
    assert not await rebuild_follower(FakeRLM(replicas, leader, store, _cache(md)), follower, 0)  # type: ignore[arg-type]
    assert unchanged()


async def test_a_topic_not_tiered_here_is_not_rebuilt(
    tmp_path: Path, follower: Partition, replicas: ReplicaManager
) -> None:
    follower.log.set_tiered(False)
    leader = FakeLeader(epochs=[(0, 0)], local_start=200, log_end=400)
    rlm = FakeRLM(replicas, leader, RemoteSegmentStore(MemoryObjectStore()), _cache())
    with pytest.raises(RebuildFailed, match="not enabled"):
        await rebuild_follower(rlm, follower, 0)  # type: ignore[arg-type]
    assert leader.calls == []


async def test_the_fetcher_leaves_a_rebuilding_partition_alone_and_retries_later(
    follower: Partition, replicas: ReplicaManager
) -> None:
    outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    handed: list[tuple[Partition, int]] = []

    async def hook(part: Partition, leader_log_start: int) -> bool:
        handed.append((part, leader_log_start))
        return await outcome

    fetcher = ReplicaFetcher(replicas, LEADER, lambda _: None)
    fetcher.on_offset_moved_to_tiered = hook
    fetcher.partitions = {follower.tp: follower}
    assert fetcher._ready() == [follower]
    fetcher._rebuild(follower, 42)
    await asyncio.sleep(0)
    assert handed == [(follower, 42)] and fetcher._ready() == []
    outcome.set_result(False)  # not rebuilt: fetched again only after the backoff
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fetcher._ready() == []
    fetcher._rebuild_after[follower.tp] -= REBUILD_RETRY_S
    assert fetcher._ready() == [follower]
    await fetcher.stop()
