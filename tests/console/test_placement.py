"""console.placement on hand-made snapshots: broker loads with offline brokers, the leader
imbalance as Kafka's controller computes it (broker/cluster/zk/elections.py `imbalance`), and
reassignment progress from DescribeLogDirs sizes. The pages themselves run against real brokers
in test_pages.py and tests/cluster/test_console.py."""

from __future__ import annotations

from client.admin import PartitionReassignment
from client.errors import KafkaError, KafkaTimeoutError
from client.types import TopicPartition
from console.gateway import BrokerRow, ClusterSnapshot, LogDirs, PartitionRow, TopicRow, partition_sizes
from console.placement import broker_loads, leader_imbalance, reassignment_rows

T = "orders"


def _snap(
    parts: list[tuple[int, tuple[int, ...], tuple[int, ...]]], live: list[int], log_dirs: dict[int, LogDirs]
) -> ClusterSnapshot:
    """Topic ``orders`` with partitions (leader, replicas, isr), brokers ``live`` (rack = "r<id>")."""
    rows = tuple(
        PartitionRow(T, i, leader, replicas, isr, 0, 0, None)
        for i, (leader, replicas, isr) in enumerate(parts)
    )
    brokers = tuple(BrokerRow(n, "127.0.0.1", 9000 + n, f"r{n}") for n in live)
    return ClusterSnapshot(0, "c", live[0], brokers, {T: TopicRow(T, False, rows)}, log_dirs)


def tp(p: int) -> TopicPartition:
    return TopicPartition(T, p)


def test_broker_loads_count_leaders_replicas_bytes_and_offline_brokers() -> None:
    snap = _snap(
        [(1, (1, 2), (1, 2)), (2, (2, 3), (2,)), (1, (3, 1), (1,))],
        live=[1, 2],
        log_dirs={1: {tp(0): 100, tp(2): 50}, 2: KafkaTimeoutError("broker 2 did not answer")},
    )
    loads = {b.node_id: b for b in broker_loads(snap)}
    assert sorted(loads) == [1, 2, 3]
    one, two, three = loads[1], loads[2], loads[3]
    assert (one.online, one.controller, one.host, one.port, one.rack) == (True, True, "127.0.0.1", 9001, "r1")
    assert (one.leaders, one.replicas, one.bytes) == (2, 2, 150)
    assert (two.leaders, two.replicas, two.bytes, two.bytes_error) == (1, 2, None, "broker 2 did not answer")
    assert (three.online, three.controller, three.host, three.rack) == (False, False, None, None)
    assert (three.leaders, three.replicas, three.bytes, three.bytes_error) == (0, 2, None, "offline")


def test_leader_imbalance_is_kafkas_ratio_above_the_percentage() -> None:
    # broker 1 is preferred leader of 0-9; broker 2 leads 1 of them (10 %: not above 10),
    # then 2 of them (20 %); broker 3 of partition 10, which has no leader (counts as elsewhere)
    parts = [(1, (1, 2), (1, 2))] * 9 + [(2, (1, 2), (1, 2)), (-1, (3, 1), ())]
    rows = {r.node_id: r for r in leader_imbalance(_snap(parts, live=[1, 2], log_dirs={}))}
    assert (rows[1].preferred, rows[1].elsewhere, rows[1].percent) == (10, 1, 10.0)
    assert not rows[1].above(10) and rows[1].above(9)
    assert (rows[2].preferred, rows[2].elsewhere, rows[2].ratio, rows[2].above(10)) == (0, 0, None, False)
    assert (rows[3].online, rows[3].preferred, rows[3].elsewhere, rows[3].above(10)) == (False, 1, 1, True)
    parts[0] = (2, (1, 2), (1, 2))
    rows = {r.node_id: r for r in leader_imbalance(_snap(parts, live=[1, 2], log_dirs={}))}
    assert (rows[1].elsewhere, rows[1].percent, rows[1].above(10)) == (2, 20.0, True)


def test_reassignment_progress_is_bytes_against_the_leaders() -> None:
    moving = {
        tp(0): PartitionReassignment((3, 4, 1, 2), (3, 4), (1, 2)),  # 3 half way, 4 offline
        tp(1): PartitionReassignment((3, 2), (3,), (2,)),  # 3 in the ISR already
        tp(2): PartitionReassignment((4, 3, 1), (4, 3), (1,)),  # leader 1 does not report it, then refuses
        TopicPartition("later", 0): PartitionReassignment((2, 1), (2,), (1,)),  # not in the snapshot
    }
    snap = _snap(
        [(1, (3, 4, 1, 2), (1, 2)), (2, (3, 2), (2, 3)), (1, (4, 3, 1), (1,))],
        live=[1, 2, 3],
        log_dirs={1: {tp(0): 1000}, 2: {tp(1): 80}, 3: {tp(0): 500, tp(1): 70}},
    )
    rows = reassignment_rows(snap, moving)
    assert [r.tp for r in rows] == [TopicPartition("later", 0), tp(0), tp(1), tp(2)]
    later, zero, one, _ = rows
    assert later.leader is None and later.progress[0].percent is None
    assert later.progress[0].why == "not in the snapshot yet"
    assert (zero.leader, zero.target, zero.adding, zero.removing) == (1, (3, 4), (3, 4), (1, 2))
    three, four = zero.progress
    assert (three.bytes, three.leader_bytes, three.percent, three.in_sync) == (500, 1000, 50.0, False)
    assert (four.bytes, four.percent, four.why) == (None, None, "broker 4 is offline")
    assert [(p.node_id, p.bytes, p.percent, p.why) for p in rows[3].progress] == [
        (4, None, None, "broker 4 is offline"),
        (3, 0, None, "leader 1 does not report the partition"),
    ]
    assert (one.progress[0].percent, one.progress[0].in_sync) == (100.0, True)
    snap.log_dirs[1] = KafkaError("no permission")
    (two,) = [r for r in reassignment_rows(snap, moving) if r.tp == tp(2)]
    assert [(p.node_id, p.bytes, p.percent, p.why) for p in two.progress] == [
        (4, None, None, "broker 4 is offline"),
        (3, 0, None, "no permission"),
    ]


def test_a_replica_never_exceeds_the_leader_and_an_empty_leader_is_copied() -> None:
    moving = {
        tp(0): PartitionReassignment((2, 1), (2,), (1,)),
        tp(1): PartitionReassignment((2, 1), (2,), (1,)),
    }
    snap = _snap(
        [(1, (2, 1), (1,)), (1, (2, 1), (1,))],
        live=[1, 2],
        log_dirs={1: {tp(0): 100, tp(1): 0}, 2: {tp(0): 120}},
    )
    zero, one = reassignment_rows(snap, moving)
    assert zero.progress[0].percent == 100.0  # 120 bytes of the leader's 100: capped
    assert one.progress[0].percent == 100.0 and one.progress[0].bytes == 0


def test_partition_sizes_prefer_the_leaders_replica() -> None:
    sizes = partition_sizes(
        {1: {tp(0): 10, tp(1): 30}, 2: {tp(0): 20, tp(1): 40}, 3: KafkaError("old broker")},
        {tp(0): 1, tp(1): 3},
    )
    assert sizes == {tp(0): 10, tp(1): 40}
