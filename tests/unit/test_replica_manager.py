"""ReplicaManager and LocalCluster on a real data directory: lookup, leadership, appends, parked fetches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.replica import ReplicaManager
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set

NODE = BrokerNode(7, "broker.example", 9999)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    logs = LogManager(str(tmp_path / "data"), node_id=NODE.node_id)
    replicas = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    local = LocalCluster(replicas, NODE)
    local.create_topic("t", 2)
    yield local
    replicas.close()


def _idempotent(seq: int, count: int = 1) -> bytes:
    records = [Record(i, 0, None, b"v") for i in range(count)]
    return build_batch(records, producer_id=42, producer_epoch=0, base_sequence=seq)


def test_every_partition_is_led_here_with_epoch_0(cluster: LocalCluster) -> None:
    state = cluster.topic("t")
    assert state is not None and [p.index for p in state.partitions] == [0, 1]
    assert all((p.leader, p.leader_epoch, p.replicas, p.isr) == (7, 0, (7,), (7,)) for p in state.partitions)
    assert cluster.brokers() == [NODE] and cluster.controller_id == 7 and cluster.broker(8) is None
    part = cluster.replicas.leader("t", 1)
    assert part.is_leader and part.log.leader_epochs.entries == [(0, 0)]


def test_lookup_errors(cluster: LocalCluster) -> None:
    with pytest.raises(KafkaError) as unknown:
        cluster.replicas.partition("t", 2)
    assert unknown.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    cluster.replicas.partition("t", 0).leader_id = 3  # another broker leads it now
    with pytest.raises(KafkaError) as not_leader:
        cluster.replicas.leader("t", 0)
    assert not_leader.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_append_advances_hw_wakes_fetches_and_drops_duplicates(cluster: LocalCluster) -> None:
    replicas = cluster.replicas
    part = replicas.leader("t", 0)
    parked = replicas.park([("t", 0), ("t", 1), ("gone", 0)])
    buf, headers = record_set(_idempotent(0, 3))
    first = replicas.append(part, buf, headers, now_ms=1_000)
    assert (first.base_offset, first.appended) == (0, True)
    assert part.log.high_watermark == 3 and parked.done()
    buf, headers = record_set(_idempotent(0, 3))  # the same batch again: a retry
    again = replicas.append(part, buf, headers, now_ms=1_001)
    assert (again.base_offset, again.appended) == (0, False) and part.log.log_end_offset == 3
    assert replicas.producer_last_offsets(("t", 0)) == {42: 2}


async def test_close_waiters_answers_parked_and_later_fetches(cluster: LocalCluster) -> None:
    replicas = cluster.replicas
    parked = replicas.park([("t", 1)])
    replicas.close_waiters()
    assert parked.done() and replicas.closing
    await asyncio.sleep(0)


def test_delete_topic_forgets_partitions_and_tells_listeners(cluster: LocalCluster) -> None:
    deleted: list[str] = []
    cluster.topic_deleted.append(deleted.append)
    cluster.delete_topic("t")
    assert deleted == ["t"] and cluster.topic("t") is None and cluster.replicas.get(("t", 0)) is None


def test_view_follows_config_changes(cluster: LocalCluster) -> None:
    cluster.alter_topic_configs("t", {"retention.ms": "1000"})
    state = cluster.topic("t")
    assert state is not None and state.configs == {"retention.ms": "1000"}
