"""The leader's ISR rules (Kafka's Partition): the HW over the maximal ISR, acks=all waits across epoch bumps.

A leader (node 7) of replicas [7, 8, 9] with ISR [7, 8]; ISR writes go to a
recorder standing in for ZooKeeper, so the test decides when (and whether)
a write lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.cluster import BrokerNode, LocalCluster
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
    LocalCluster(manager, NODE).create_topic("t", 1)
    yield manager
    manager.close()


class IsrWrites:
    """Records ISR change requests; nothing lands until the test says so."""

    def __init__(self, manager: ReplicaManager) -> None:
        self.requests: list[tuple[Partition, list[int]]] = []
        manager.isr_requests = lambda part, isr: self.requests.append((part, isr))


def _lead(manager: ReplicaManager, isr: list[int]) -> Partition:
    part = manager.leader("t", 0)
    part.become_leader(1, [7, 8, 9], isr, now_ms=1_000, partition_epoch=3)
    return part


def _append(manager: ReplicaManager, part: Partition, count: int) -> int:
    """Append ``count`` records; returns the new LEO."""
    buf, headers = record_set(build_batch([Record(i, 0, None, b"v") for i in range(count)]))
    manager.append(part, buf, headers, now_ms=2_000)
    return part.log.log_end_offset


def test_hw_waits_for_a_follower_whose_isr_addition_is_pending(replicas: ReplicaManager) -> None:
    writes = IsrWrites(replicas)
    part = _lead(replicas, [7, 8])
    leo = _append(replicas, part, 10)
    replicas.follower_fetched(part, 8, leo, now_ms=2_000)
    assert part.log.high_watermark == 10
    replicas.follower_fetched(part, 9, 10, now_ms=2_000)  # caught up to the HW: proposed for the ISR
    assert [isr for _, isr in writes.requests] == [[7, 8, 9]]
    leo = _append(replicas, part, 5)
    replicas.follower_fetched(part, 8, leo, now_ms=2_100)
    # The write has not landed, but 9 may be in the ISR once it does: the HW must not pass its LEO.
    assert part.log.high_watermark == 10
    replicas.follower_fetched(part, 9, leo, now_ms=2_100)
    assert part.log.high_watermark == 15
    replicas.isr_changed(part, [7, 8, 9], 4)
    assert part.isr == [7, 8, 9] and part.pending_isr is None


def test_hw_keeps_waiting_for_a_follower_whose_isr_removal_is_pending(replicas: ReplicaManager) -> None:
    writes = IsrWrites(replicas)
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 10)
    replicas.follower_fetched(part, 8, leo, now_ms=2_000)
    replicas.request_isr(part, [7, 8])  # 9 lags: its removal is asked for
    assert len(writes.requests) == 1
    replicas.follower_fetched(part, 8, _append(replicas, part, 5), now_ms=2_100)
    assert part.log.high_watermark == 0  # 9 still counts until the smaller ISR is written
    replicas.isr_changed(part, [7, 8], 4)
    assert part.log.high_watermark == 15


def test_an_isr_write_that_failed_leaves_the_committed_isr(replicas: ReplicaManager) -> None:
    IsrWrites(replicas)
    part = _lead(replicas, [7, 8])
    replicas.follower_fetched(part, 8, _append(replicas, part, 10), now_ms=2_000)
    replicas.follower_fetched(part, 9, 10, now_ms=2_000)
    assert part.pending_isr == [7, 8, 9]
    replicas.isr_write_failed(part)
    assert part.pending_isr is None and part.isr == [7, 8]
    replicas.follower_fetched(part, 8, _append(replicas, part, 5), now_ms=2_100)
    assert part.log.high_watermark == 15


def test_a_new_leadership_forgets_a_pending_isr_change(replicas: ReplicaManager) -> None:
    IsrWrites(replicas)
    part = _lead(replicas, [7, 8])
    replicas.follower_fetched(part, 9, 0, now_ms=2_000)
    assert part.pending_isr == [7, 8, 9]
    part.become_follower(8, 2, [7, 8, 9], [7, 8, 9], 5)
    assert part.pending_isr is None
    part.become_leader(3, [7, 8, 9], [7, 8, 9], now_ms=3_000, partition_epoch=6)
    assert part.pending_isr is None


async def test_acks_all_keeps_waiting_when_the_epoch_bumps_and_the_leader_stays(
    replicas: ReplicaManager,
) -> None:
    """Kafka's ZK controller bumps the leader epoch when it drops a dead follower from the ISR; a
    produce waiting for replication on the leader that stays must be answered by the HW, not failed
    (a NOT_LEADER_OR_FOLLOWER answer for an appended batch makes producers resend it)."""
    IsrWrites(replicas)
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 10)
    waiting = asyncio.ensure_future(replicas.wait_for_replication(part, leo, timeout_s=5))
    await asyncio.sleep(0.01)
    part.become_leader(2, [7, 8, 9], [7, 8], now_ms=3_000, partition_epoch=4)  # 9 died: the controller
    part.fail_hw_waiters()  # whatever wakes the waiter, it must look again and keep waiting
    await asyncio.sleep(0.01)
    assert not waiting.done()
    replicas.follower_fetched(part, 8, leo, now_ms=3_100)
    assert await asyncio.wait_for(waiting, 1) == ErrorCode.NONE


async def test_acks_all_fails_once_the_leadership_was_lost_even_if_regained(replicas: ReplicaManager) -> None:
    IsrWrites(replicas)
    part = _lead(replicas, [7, 8])
    leo = _append(replicas, part, 10)
    waiting = asyncio.ensure_future(replicas.wait_for_replication(part, leo, timeout_s=5))
    await asyncio.sleep(0.01)
    part.become_follower(8, 2, [7, 8], [7, 8], 4)  # the follower may truncate our batch
    part.become_leader(3, [7, 8], [7, 8], now_ms=3_000, partition_epoch=5)
    replicas.follower_fetched(part, 8, leo, now_ms=3_100)
    assert await asyncio.wait_for(waiting, 1) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_of_a_broker_not_registered_is_not_proposed_for_the_isr(replicas: ReplicaManager) -> None:
    """Kafka's isReplicaIsrEligible: a zombie follower (its session expired) would flap in and out."""
    writes = IsrWrites(replicas)
    replicas.isr_eligible = lambda node: node != 9
    part = _lead(replicas, [7, 8])
    replicas.follower_fetched(part, 9, 0, now_ms=2_000)
    assert writes.requests == [] and part.pending_isr is None


def test_a_late_answer_to_an_isr_write_leaves_a_newer_pending_change(replicas: ReplicaManager) -> None:
    IsrWrites(replicas)
    part = _lead(replicas, [7, 8])
    replicas.isr_changed(part, [7, 8], 4)  # the refresh read our first write (version 4)
    replicas.follower_fetched(part, 9, 0, now_ms=2_000)
    assert part.pending_isr == [7, 8, 9]
    replicas.isr_changed(part, [7, 8], 4)  # the first write's own answer, arriving late
    assert part.pending_isr == [7, 8, 9]


async def test_acks_all_counts_the_maximal_isr_against_min_insync_replicas(replicas: ReplicaManager) -> None:
    """Kafka's checkEnoughReplicasReachOffset: once the HW is there, the maximal ISR's size decides."""
    IsrWrites(replicas)
    replicas.logs.alter_topic_configs("t", {"min.insync.replicas": "2"})
    part = _lead(replicas, [7])
    replicas.follower_fetched(part, 8, 0, now_ms=2_000)  # 8 proposed: the maximal ISR is [7, 8]
    leo = _append(replicas, part, 10)
    waiting = asyncio.ensure_future(replicas.wait_for_replication(part, leo, timeout_s=5))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    replicas.follower_fetched(part, 8, leo, now_ms=2_100)
    assert await asyncio.wait_for(waiting, 1) == ErrorCode.NONE
