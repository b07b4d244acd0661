"""`__consumer_offsets` writes are acknowledged only once replicated (acks=-1), as Kafka's coordinator appends.

A leader (node 7) of replicas [7, 8, 9] with ISR [7, 8]: a commit's ``done``
waits for the HW to pass its batch, and answers the errors Kafka maps for a
write that could not be replicated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.group_commit import GroupCommit
from broker.groups.store import OFFSETS_TOPIC, BrokerOffsetsLog
from broker.groups.store_errors import group_store_error, offset_store_error, txn_store_error
from broker.replica import Partition, ReplicaManager
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set

NODE = BrokerNode(7, "broker.example", 9999)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    logs = LogManager(str(tmp_path / "data"), node_id=NODE.node_id)
    manager = ReplicaManager(logs, NODE.node_id, producer_expiration_ms=86_400_000)
    LocalCluster(manager, NODE).create_topic(OFFSETS_TOPIC, 1, {"cleanup.policy": "compact"})
    manager.isr_requests = lambda part, isr: None
    yield manager
    manager.close()


def _lead(manager: ReplicaManager, isr: list[int]) -> Partition:
    part = manager.leader(OFFSETS_TOPIC, 0)
    part.become_leader(1, [7, 8, 9], isr, now_ms=1_000, partition_epoch=3)
    return part


def _commit(store: BrokerOffsetsLog) -> asyncio.Future[ErrorCode]:
    answered: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    store.append(0, [(b"key", b"value")], lambda code: answered.done() or answered.set_result(code))
    return answered


async def test_a_commit_is_answered_once_the_isr_has_it(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    answered = _commit(store)
    await asyncio.sleep(0.2)  # long past the local fsync
    assert part.log.log_end_offset == 1
    assert not answered.done(), "acknowledged before follower 8 has the commit"
    replicas.follower_fetched(part, 8, 1, now_ms=2_000)
    assert await asyncio.wait_for(answered, 1) == ErrorCode.NONE


async def test_a_commit_that_cannot_be_replicated_is_not_acknowledged(replicas: ReplicaManager) -> None:
    _lead(replicas, [7, 8])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=0.3)
    code = await asyncio.wait_for(_commit(store), 2)
    assert code == ErrorCode.REQUEST_TIMED_OUT
    assert offset_store_error(code) == group_store_error(code) == ErrorCode.COORDINATOR_NOT_AVAILABLE


async def test_a_coordinator_that_lost_leadership_answers_not_coordinator(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    answered = _commit(store)
    await asyncio.sleep(0.1)
    part.become_follower(8, 2, [7, 8, 9], [8, 9], 4)  # a new leader elected while we were away
    code = await asyncio.wait_for(answered, 1)
    assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert offset_store_error(code) == group_store_error(code) == ErrorCode.NOT_COORDINATOR


async def test_a_single_replica_commit_needs_no_follower(replicas: ReplicaManager) -> None:
    _lead(replicas, [7])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    assert await asyncio.wait_for(_commit(store), 2) == ErrorCode.NONE


class HeldFsyncs:
    """A group commit whose fsyncs finish when the test says (``done(i)``), in any order."""

    def __init__(self) -> None:
        self.futures: list[asyncio.Future[None]] = []

    def sync(self, target: object, **_: object) -> asyncio.Future[None]:
        self.futures.append(asyncio.get_running_loop().create_future())
        return self.futures[-1]

    def done(self, i: int) -> None:
        self.futures[i].set_result(None)


async def test_commits_are_answered_in_the_order_they_were_written(replicas: ReplicaManager) -> None:
    """The coordinator applies a commit to its cache when it is answered: a later commit answered
    first would be overwritten by the earlier one (Kafka's olderThan guard)."""
    part = _lead(replicas, [7, 8])
    fsyncs = HeldFsyncs()
    store = BrokerOffsetsLog(replicas, fsyncs, 1, timeout_s=5)  # type: ignore[arg-type]
    answers: list[str] = []
    store.append(0, [(b"k", b"first")], lambda code: answers.append(f"first {code.name}"))
    await asyncio.sleep(0)
    store.append(0, [(b"k", b"second")], lambda code: answers.append(f"second {code.name}"))
    await asyncio.sleep(0)  # two batches written, neither fsynced
    assert len(fsyncs.futures) == 2
    fsyncs.done(0)
    await asyncio.sleep(0.05)  # the first waits for follower 8
    fsyncs.done(1)  # the second's fsync ends just as...
    replicas.follower_fetched(part, 8, 2, now_ms=2_000)  # ...the HW passes both
    await asyncio.sleep(0.1)
    assert answers == ["first NONE", "second NONE"]


async def test_a_replicated_write_below_min_insync_replicas_is_refused(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7])
    replicas.logs.alter_topic_configs(
        OFFSETS_TOPIC, {"cleanup.policy": "compact", "min.insync.replicas": "2"}
    )
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    code = await asyncio.wait_for(_commit(store), 2)
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS and part.log.log_end_offset == 0
    assert offset_store_error(code) == ErrorCode.COORDINATOR_NOT_AVAILABLE


async def test_a_new_coordinator_reads_its_log_to_the_end_not_to_its_hw(replicas: ReplicaManager) -> None:
    """A follower elected leader may not have heard of the HW that acknowledged its last commits."""
    part = replicas.partition(OFFSETS_TOPIC, 0)
    part.become_follower(8, 1, [7, 8, 9], [7, 8, 9], 3)
    batch = build_batch([Record(0, 0, b"k", b"acknowledged")])
    buf, headers = record_set(batch)
    replicas.follower_append(part, buf, headers, leader_hw=0, now_ms=1_000)
    assert part.log.high_watermark == 0 and part.log.log_end_offset == 1
    part.become_leader(2, [7, 8, 9], [7, 9], now_ms=2_000, partition_epoch=4)
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    assert list(store.read(0)) == [(b"k", b"acknowledged")]


def test_transaction_state_append_failures_are_answered_as_kafka_maps_them() -> None:
    """TransactionStateManager.appendTransactionToLog: clients retry on another lookup, never give up."""
    assert {
        code.name: txn_store_error(code).name
        for code in (
            ErrorCode.NONE,
            ErrorCode.NOT_ENOUGH_REPLICAS,
            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            ErrorCode.REQUEST_TIMED_OUT,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ErrorCode.KAFKA_STORAGE_ERROR,
            ErrorCode.MESSAGE_TOO_LARGE,
        )
    } == {
        "NONE": "NONE",
        "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
        "REQUEST_TIMED_OUT": "COORDINATOR_NOT_AVAILABLE",
        "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
        "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
        "MESSAGE_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    }


def _barrier(store: BrokerOffsetsLog) -> asyncio.Future[ErrorCode]:
    answered: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
    store.when_committed(0, lambda code: answered.done() or answered.set_result(code))
    return answered


async def test_when_committed_waits_for_every_earlier_write_to_reach_the_isr(
    replicas: ReplicaManager,
) -> None:
    part = _lead(replicas, [7, 8])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=5)
    assert _barrier(store).result() == ErrorCode.NONE  # nothing written: answered inside the call
    commit = _commit(store)
    queued = _barrier(store)  # asked while the commit is still queued
    await asyncio.sleep(0.2)
    written = _barrier(store)  # asked once it is written, above the high watermark
    await asyncio.sleep(0.1)
    assert not commit.done() and not queued.done() and not written.done()
    replicas.follower_fetched(part, 8, 1, now_ms=2_000)
    assert [await asyncio.wait_for(f, 1) for f in (commit, queued, written)] == [ErrorCode.NONE] * 3
    assert _barrier(store).result() == ErrorCode.NONE


async def test_when_committed_reports_a_write_the_isr_never_got(replicas: ReplicaManager) -> None:
    _lead(replicas, [7, 8])
    store = BrokerOffsetsLog(replicas, GroupCommit(), 1, timeout_s=0.3)
    commit = _commit(store)
    await asyncio.sleep(0.1)
    assert await asyncio.wait_for(_barrier(store), 2) == ErrorCode.REQUEST_TIMED_OUT
    assert await commit == ErrorCode.REQUEST_TIMED_OUT
