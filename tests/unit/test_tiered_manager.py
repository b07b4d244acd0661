"""The remote log manager (broker/tiered/manager.py) on a real leader partition: a new leader's copied
offset comes from remote metadata read up to date."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.replica import ReplicaManager
from broker.tiered.manager import RemoteLogManager
from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.metadata_records import (
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)
from protocol.records import Record, build_batch
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set

NODE = BrokerNode(2, "new-leader.example", 9092)
TIP = TopicIdPartition("t", uuid.UUID(int=5), 0)


def _finished(start: int, end: int) -> list[Any]:
    """The two records of a segment [start, end] copied by broker 1 in leader epoch 0."""
    md = SegmentMetadata(
        TIP, uuid.uuid4(), start, end, 1, 0, 0, ((0, start),), 100, None, SegmentState.COPY_SEGMENT_STARTED
    )
    return [md, SegmentMetadataUpdate(TIP, md.segment_id, 1, 0, None, SegmentState.COPY_SEGMENT_FINISHED)]


class LaggingMetadata:
    """__remote_log_metadata as a new leader's reader sees it: loaded long ago, and the old leader's
    last copy committed but not read yet; `catch_up` reads it."""

    def __init__(self, rlm: RemoteLogManager) -> None:
        self.rlm = rlm
        self.unread = _finished(100, 199)

    async def load(self, tip: TopicIdPartition) -> None:
        self.rlm.metadata_store.mark_loaded(tip)

    async def catch_up(self, tip: TopicIdPartition) -> None:
        for rec in self.unread:
            self.rlm.metadata_store.apply(rec)
        self.unread = []


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    logs = LogManager(str(tmp_path / "data"), node_id=NODE.node_id, remote_log_system_enabled=True)
    replicas = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    LocalCluster(replicas, NODE).create_topic("t", 1, {"remote.storage.enable": "true"})
    yield replicas
    replicas.close()


def _manager(replicas: ReplicaManager) -> RemoteLogManager:
    return RemoteLogManager(
        node_id=NODE.node_id,
        replicas=replicas,
        cluster=None,  # type: ignore[arg-type]  # not used: the metadata topic is replaced
        admin=None,  # type: ignore[arg-type]
        links=None,  # type: ignore[arg-type]
        leader_links=None,  # type: ignore[arg-type]
        store=MemoryObjectStore(),
        key_prefix="",
        interval_s=1.0,
        pool_size=1,
        retry_backoff_s=0.1,
        retry_backoff_max_s=1.0,
        metadata_partitions=1,
        metadata_replication_factor=1,
        metadata_timeout_s=1.0,
    )


async def test_a_new_leader_counts_the_old_leaders_last_copies(replicas: ReplicaManager) -> None:
    part = replicas.partition("t", 0)
    batch = build_batch([Record(i, 0, None, b"v") for i in range(300)])
    buf, headers = record_set(batch)
    replicas.append(part, buf, headers, now_ms=1_000)  # offsets [0, 300) in leader epoch 0
    part.become_leader(1, [2, 1], [2], now_ms=2_000)  # the old leader (broker 1) died; this one leads
    rlm = _manager(replicas)
    metadata = LaggingMetadata(rlm)
    rlm.metadata = metadata  # type: ignore[assignment]
    for rec in _finished(0, 99):
        rlm.metadata_store.apply(rec)

    state = await rlm._become_leader(part, TIP)

    assert state.copied_offset == 199  # not 99: [100, 199] is not copied again
    assert part.log.remote is not None and part.log.remote.highest_offset == 199
