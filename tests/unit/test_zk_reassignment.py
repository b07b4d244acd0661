"""Partition reassignment decisions without ZooKeeper: Kafka's replica arithmetic, refusals, completion,
the /admin/reassign_partitions entries, and the topic znode's adding/removing replicas."""

from __future__ import annotations

import json

import pytest

from broker.cluster.assignment import FullAssignment
from broker.cluster.view import BrokerNode
from broker.cluster.zk import znodes
from broker.cluster.zk.reassigner import topic_znode
from broker.cluster.zk.reassignment import Change, completions, start, zk_requests
from broker.cluster.zk.snapshot import Snapshot, StateRecord
from broker.cluster.zk.znodes import LeaderAndIsr
from protocol.errors import ErrorCode


def _snap(live: list[int], replicas: list[int], state: LeaderAndIsr, **moving: list[int]) -> Snapshot:
    snap = Snapshot()
    snap.brokers = {b: BrokerNode(b, "h", 9000 + b) for b in live}
    snap.assignments = {"t": {0: replicas}}
    snap.topic_versions = {"t": 3}
    snap.states = {("t", 0): StateRecord(state, version=4, mzxid=10)}
    if moving.get("adding"):
        snap.adding[("t", 0)] = moving["adding"]
    if moving.get("removing"):
        snap.removing[("t", 0)] = moving["removing"]
    return snap


def test_reassign_to_puts_the_target_first_as_kafka() -> None:
    moving = FullAssignment((1, 2, 3)).reassign_to((4, 5, 6))
    assert moving == FullAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert moving.origin == (1, 2, 3) and moving.target == (4, 5, 6)
    # replacing a reassignment in progress starts again from the original replicas
    assert moving.reassign_to((3, 4, 2)) == FullAssignment((3, 4, 2, 1), (4,), (1,))
    # back to the original replicas: nothing moves any more (the order may differ, as in Kafka)
    assert not FullAssignment((3, 4, 2, 1), (4,), (1,)).reassign_to((2, 1, 3)).reassigning


def test_starting_writes_the_full_replica_set_and_no_state() -> None:
    snap = _snap([1, 2, 3, 4], [1, 2, 3], LeaderAndIsr(1, 5, (1, 2, 3), 1))
    change = start(snap, ("t", 0), [4, 2, 3], 7)
    assert isinstance(change, Change)
    assert change.assignment == FullAssignment((4, 2, 3, 1), (4,), (1,))
    assert change.state is None  # the leader and ISR stay until the new replica caught up


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ([], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ([1, 1], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ([1, -2], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ([1, 9], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # broker 9 is not alive
        (None, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
    ],
)
def test_refusals(target: list[int] | None, code: int) -> None:
    snap = _snap([1, 2, 3], [1, 2], LeaderAndIsr(1, 5, (1, 2), 1))
    outcome = start(snap, ("t", 0), target, 7)
    assert not isinstance(outcome, Change) and outcome[0] == code


def test_unknown_deleting_and_replication_factor_refusals() -> None:
    snap = _snap([1, 2, 3], [1, 2], LeaderAndIsr(1, 5, (1, 2), 1))
    assert start(snap, ("t", 1), [1], 7)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[index]
    refused = start(snap, ("t", 0), [1, 2, 3], 7, allow_rf_change=False)
    assert not isinstance(refused, Change) and refused[0] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert isinstance(start(snap, ("t", 0), [3, 2], 7, allow_rf_change=False), Change)
    snap.deleting = ["t"]
    assert start(snap, ("t", 0), [1], 7)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[index]


def test_completion_waits_for_the_isr_then_moves_leadership_and_shrinks_the_isr() -> None:
    waiting = _snap([1, 2, 3, 4], [4, 2, 1], LeaderAndIsr(1, 5, (1, 2), 1), adding=[4], removing=[1])
    assert completions(waiting, 7) == []
    caught_up = _snap([1, 2, 3, 4], [4, 2, 1], LeaderAndIsr(1, 5, (1, 2, 4), 1), adding=[4], removing=[1])
    [done] = completions(caught_up, 7)
    assert done.assignment == FullAssignment((4, 2))
    assert done.state is not None and done.state.expected_version == 4
    # the leader leaves: the first target replica alive and in sync leads
    assert done.state.state == LeaderAndIsr(4, 6, (2, 4), 7)


def test_completion_keeps_a_leader_that_stays_and_waits_for_a_live_one() -> None:
    stays = _snap([1, 2, 3], [2, 3, 1], LeaderAndIsr(2, 5, (2, 1, 3), 1), adding=[3], removing=[1])
    [done] = completions(stays, 7)
    assert done.state is not None and done.state.state == LeaderAndIsr(2, 6, (2, 3), 7)
    # every target replica in the ISR but none alive to lead: the reassignment waits
    dead = _snap([1], [2, 3, 1], LeaderAndIsr(1, 5, (1, 2, 3), 1), adding=[2, 3], removing=[1])
    assert completions(dead, 7) == []


def test_cancelling_drops_the_added_replicas_from_isr_and_leadership() -> None:
    snap = _snap([1, 2, 3, 4], [4, 2, 1], LeaderAndIsr(4, 6, (1, 2, 4), 1), adding=[4], removing=[1])
    change = start(snap, ("t", 0), None, 7)
    assert isinstance(change, Change)
    assert change.assignment == FullAssignment((2, 1))
    assert change.state is not None and change.state.state == LeaderAndIsr(2, 7, (1, 2), 7)


def test_zookeeper_requests_start_wait_and_drop() -> None:
    snap = _snap([1, 2, 3], [1, 2], LeaderAndIsr(1, 5, (1, 2), 1))
    snap.reassign_requests = {("t", 0): [3, 2], ("t", 5): [1], ("gone", 0): [1]}
    requests = zk_requests(snap)
    assert requests.start == {("t", 0): [3, 2]}
    assert set(requests.drop) == {("t", 5), ("gone", 0)}
    moving = _snap([1, 2, 3], [3, 2, 1], LeaderAndIsr(1, 5, (1, 2), 1), adding=[3], removing=[1])
    moving.reassign_requests = {("t", 0): [3, 2]}
    assert zk_requests(moving).start == {} and zk_requests(moving).drop == {}
    done = _snap([1, 2, 3], [3, 2], LeaderAndIsr(3, 6, (3, 2), 1))
    done.reassign_requests = {("t", 0): [3, 2]}
    assert zk_requests(done).drop == {("t", 0): "completed"}


def test_topic_znode_round_trip_with_kafkas_fields() -> None:
    snap = _snap([1, 2, 3], [1, 2], LeaderAndIsr(1, 5, (1, 2), 1))
    snap.assignments["t"][1] = [2, 3]
    data = topic_znode(snap, "t", {0: FullAssignment((3, 2, 1), (3,), (1,))})
    doc = json.loads(data)
    assert doc["partitions"] == {"0": [3, 2, 1], "1": [2, 3]}
    assert doc["adding_replicas"] == {"0": [3]} and doc["removing_replicas"] == {"0": [1]}
    decoded = znodes.decode_assignment("t", data)
    assert decoded.adding == {0: [3]} and decoded.removing == {0: [1]}
    with pytest.raises(ValueError):
        znodes.decode_assignment("t", json.dumps({**doc, "adding_replicas": {"7": [1]}}).encode())
    entries = {("t", 0): [3, 2]}
    assert znodes.decode_reassignments(znodes.encode_reassignments(entries)) == entries


def test_the_controller_drops_unassigned_replicas_from_the_isr_and_leadership() -> None:
    from broker.cluster.zk.controller import plan_state_writes

    # broker 1 left the replica set, then rejoined the ISR through a leader that still listed it
    snap = _snap([1, 2, 3], [2, 3], LeaderAndIsr(2, 6, (2, 3, 1), 1))
    [write] = plan_state_writes(snap, 7)
    assert write.state == LeaderAndIsr(2, 7, (2, 3), 7)
    # a leader that is no longer assigned is replaced as a dead one would be
    led = _snap([1, 2, 3], [2, 3], LeaderAndIsr(1, 6, (1, 2, 3), 1))
    [write] = plan_state_writes(led, 7)
    assert write.state == LeaderAndIsr(2, 7, (2, 3), 7)


def test_kafkas_order_of_refusals() -> None:
    snap = _snap([1, 2, 3], [1, 2], LeaderAndIsr(1, 5, (1, 2), 1))
    # the replicas are checked before the partition's existence; cancelling an unknown one is "none"
    assert start(snap, ("t", 9), [1, 9], 7)[0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT  # type: ignore[index]
    assert start(snap, ("t", 9), None, 7)[0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS  # type: ignore[index]
    assert start(snap, ("t", 9), [1, 2], 7)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[index]


def test_an_unreadable_topic_znode_keeps_what_the_last_snapshot_knew() -> None:
    from broker.cluster.zk.snapshot import carry_over

    old = _snap([1, 2, 3], [3, 2, 1], LeaderAndIsr(1, 5, (1, 2, 3), 1), adding=[3], removing=[1])
    old.configs["t"] = {"cleanup.policy": "compact"}
    new = Snapshot()
    new.unreadable = {"t", "gone"}
    carry_over(old, new)
    assert new.assignments == old.assignments and new.adding == old.adding and new.removing == old.removing
    assert new.states == old.states and new.configs["t"] == {"cleanup.policy": "compact"}
    unreadable_configs = _snap([1], [1], LeaderAndIsr(1, 5, (1,), 1))
    unreadable_configs.configs["t"] = {}
    unreadable_configs.unreadable_configs = {"t"}
    carry_over(old, unreadable_configs)
    assert unreadable_configs.configs["t"] == {"cleanup.policy": "compact"}
