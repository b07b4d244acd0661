"""The controller's decisions and the znode formats, without ZooKeeper (pure functions)."""

from __future__ import annotations

import json
import uuid

import pytest

from broker.cluster.view import BrokerNode
from broker.cluster.zk import znodes
from broker.cluster.zk.controller import plan_state_writes
from broker.cluster.zk.snapshot import Snapshot, StateRecord
from broker.cluster.zk.znodes import LeaderAndIsr


def _snap(
    live: list[int], assignment: dict[int, list[int]], states: dict[int, LeaderAndIsr], czxid: int = 1
) -> Snapshot:
    snap = Snapshot()
    snap.brokers = {b: BrokerNode(b, "h", 9000 + b) for b in live}
    snap.broker_czxid = {b: czxid for b in live}
    snap.assignments = {"t": assignment}
    snap.states = {("t", p): StateRecord(s, version=4, mzxid=10) for p, s in states.items()}
    return snap


def _plan(snap: Snapshot, unclean: bool = False) -> dict[int, tuple[int, int, tuple[int, ...], int]]:
    return {
        w.tp[1]: (w.state.leader, w.state.leader_epoch, w.state.isr, w.expected_version)
        for w in plan_state_writes(snap, 7, unclean=lambda topic: unclean)
    }


def test_new_partitions_get_the_first_live_replica_and_live_isr() -> None:
    snap = _snap([1, 3], {0: [2, 3, 1], 1: [2]}, {})
    assert _plan(snap) == {0: (3, 0, (3, 1), -1)}  # partition 1 has no live replica: it waits


def test_dead_leader_is_replaced_by_first_live_isr_member_in_assignment_order() -> None:
    snap = _snap([1, 3], {0: [2, 3, 1]}, {0: LeaderAndIsr(2, 5, (2, 1, 3), 1)})
    assert _plan(snap) == {0: (3, 6, (1, 3), 4)}


def test_dead_followers_leave_the_isr_under_the_same_leader() -> None:
    snap = _snap([1, 2], {0: [1, 2, 3]}, {0: LeaderAndIsr(1, 2, (1, 2, 3), 1)})
    assert _plan(snap) == {0: (1, 3, (1, 2), 4)}


def test_no_live_isr_member_takes_the_partition_offline_keeping_its_isr() -> None:
    snap = _snap([3], {0: [1, 2, 3]}, {0: LeaderAndIsr(1, 2, (1, 2), 1)})
    assert _plan(snap) == {0: (-1, 3, (1, 2), 4)}  # 3 is alive but out of sync: no unclean election
    offline = _snap([3], {0: [1, 2, 3]}, {0: LeaderAndIsr(-1, 3, (1, 2), 1)})
    assert _plan(offline) == {}
    back = _snap([2, 3], {0: [1, 2, 3]}, {0: LeaderAndIsr(-1, 3, (1, 2), 1)})
    assert _plan(back) == {0: (2, 4, (2,), 4)}


def test_a_restarted_leader_gets_a_new_epoch_before_it_may_lead() -> None:
    snap = _snap(
        [1, 2], {0: [1, 2]}, {0: LeaderAndIsr(1, 2, (1, 2), 1)}, czxid=11
    )  # registered after the write
    assert _plan(snap) == {0: (1, 3, (1, 2), 4)}


def test_leadership_does_not_move_back_to_the_preferred_replica_by_itself() -> None:
    snap = _snap([1, 2], {0: [1, 2]}, {0: LeaderAndIsr(2, 2, (2, 1), 1)})
    assert _plan(snap) == {}  # that is an election of its own (test_zk_elections.py)


def test_unclean_election_picks_the_first_live_replica_only_when_allowed() -> None:
    snap = _snap([3, 2], {0: [1, 3, 2]}, {0: LeaderAndIsr(1, 2, (1,), 1)})
    assert _plan(snap) == {0: (-1, 3, (1,), 4)}
    assert _plan(snap, unclean=True) == {0: (3, 3, (3,), 4)}
    in_sync_alive = _snap([3, 2], {0: [1, 3, 2]}, {0: LeaderAndIsr(1, 2, (1, 2), 1)})
    assert _plan(in_sync_alive, unclean=True) == {0: (2, 3, (2,), 4)}  # an in-sync replica first
    offline = _snap([2], {0: [1, 3, 2]}, {0: LeaderAndIsr(-1, 3, (1,), 1)})
    assert _plan(offline, unclean=True) == {0: (2, 4, (2,), 4)}


def test_topics_being_deleted_are_left_alone() -> None:
    snap = _snap([1], {0: [2]}, {0: LeaderAndIsr(2, 0, (2,), 1)})
    snap.deleting = ["t"]
    assert _plan(snap) == {}


def test_znodes_round_trip_and_read_kafkas_json() -> None:
    state = LeaderAndIsr(3, 9, (3, 1), 4)
    assert znodes.decode_state("s", znodes.encode_state(state)) == state
    kafka_state = b'{"controller_epoch":4,"leader":3,"version":1,"leader_epoch":9,"isr":[3,1]}'
    assert znodes.decode_state("s", kafka_state) == state
    topic_id = uuid.UUID(bytes=bytes(range(16)))
    decoded = znodes.decode_assignment("t", znodes.encode_assignment({0: [1, 2], 1: [2, 1]}, topic_id))
    assert decoded == znodes.TopicAssignment(topic_id, {0: [1, 2], 1: [2, 1]})
    # Kafka 2.8+ writes the topic's id in its text form; earlier versions wrote none.
    kafka_topic = b'{"version":3,"topic_id":"AAECAwQFBgcICQoLDA0ODw","partitions":{"0":[2]},' + (
        b'"adding_replicas":{},"removing_replicas":{}}'
    )
    assert znodes.decode_assignment("t", kafka_topic) == znodes.TopicAssignment(topic_id, {0: [2]})
    legacy = b'{"version":1,"partitions":{"0":[2,1]}}'
    assert znodes.decode_assignment("t", legacy) == znodes.TopicAssignment(None, {0: [2, 1]})
    assert b"topic_id" not in znodes.encode_assignment({0: [1]}, None)
    kafka_broker = json.dumps(
        {"endpoints": ["CONTROLLER://h:1", "PLAINTEXT://kafka-1:9092"], "host": "x", "port": 1, "version": 5}
    ).encode()
    kafka_1 = znodes.decode_broker(1, kafka_broker)
    assert (kafka_1.host, kafka_1.port) == ("kafka-1", 9092)
    assert kafka_1.address("CONTROLLER") == ("h", 1) and kafka_1.address("EXTERNAL") is None
    two = BrokerNode(
        2,
        "b2",
        19092,
        None,
        (("INTERNAL", "b2", 19092), ("EXTERNAL", "::1", 9093)),
        (("INTERNAL", "PLAINTEXT"), ("EXTERNAL", "SASL_SSL")),
    )
    assert znodes.decode_broker(2, znodes.encode_broker(two)) == two
    assert b'"EXTERNAL": "SASL_SSL"' in znodes.encode_broker(two)
    assert b"EXTERNAL://[::1]:9093" in znodes.encode_broker(two)
    assert znodes.decode_broker(3, znodes.encode_broker(BrokerNode(3, "h", 7))).address("PLAINTEXT") == (
        "h",
        7,
    )
    # broker.rack: registered as Kafka registers it ("rack": null without one)
    racked = BrokerNode(4, "h", 7, "eu-1a", (("PLAINTEXT", "h", 7),), (("PLAINTEXT", "PLAINTEXT"),))
    assert json.loads(znodes.encode_broker(racked))["rack"] == "eu-1a"
    assert znodes.decode_broker(4, znodes.encode_broker(racked)) == racked
    assert json.loads(znodes.encode_broker(BrokerNode(5, "h", 7)))["rack"] is None
    assert znodes.decode_broker(1, kafka_broker).rack is None  # a registration without the field
    with pytest.raises(ValueError, match="rack"):
        znodes.decode_broker(6, json.dumps({"host": "h", "port": 1, "rack": 3}).encode())
    assert znodes.decode_producer_id_block_end(znodes.encode_producer_id_block(1, 2000)) == 2999
    assert znodes.decode_cluster_id(znodes.encode_cluster_id("abc")) == "abc"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"[]",
        b'{"partitions": {"0": [1], "2": [1]}}',
        b'{"partitions": {"0": ["x"]}}',
        b"\xff",
        b'{"topic_id": "short", "partitions": {"0": [1]}}',
    ],
)
def test_malformed_assignments_are_value_errors(data: bytes) -> None:
    with pytest.raises(ValueError):
        znodes.decode_assignment("t", data)
