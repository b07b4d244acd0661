"""Kafka's rack-unaware replica placement, against assignments worked out by hand from its rules."""

from __future__ import annotations

import random

import pytest

from broker.cluster.assignment import added_partitions, assign_replicas
from protocol.errors import ErrorCode, KafkaError


def test_fixed_start_matches_kafkas_layout() -> None:
    # brokers 0-4, 10 partitions, RF 3, start index 0 (shift 0): Kafka's documented example layout
    got = assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0)
    assert got == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_broker_ids_are_sorted_and_need_not_be_contiguous() -> None:
    got = assign_replicas(3, 2, [30, 10, 20], start_index=1)
    assert got == {0: [20, 10], 1: [30, 20], 2: [10, 30]}


@pytest.mark.parametrize("seed", range(20))
def test_random_start_spreads_leaders_and_never_repeats_a_broker(seed: int) -> None:
    got = assign_replicas(12, 3, [1, 2, 3], rng=random.Random(seed))
    assert all(len(set(r)) == 3 for r in got.values())
    leaders = [r[0] for r in got.values()]
    assert sorted(leaders.count(b) for b in (1, 2, 3)) == [4, 4, 4]


def test_first_partition_continues_numbering() -> None:
    assert list(assign_replicas(2, 1, [5], first_partition=3)) == [3, 4]


@pytest.mark.parametrize(
    ("partitions", "factor", "code"),
    [
        (0, 1, ErrorCode.INVALID_PARTITIONS),
        (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
        (1, 4, ErrorCode.INVALID_REPLICATION_FACTOR),
    ],
)
def test_invalid(partitions: int, factor: int, code: int) -> None:
    with pytest.raises(KafkaError) as info:
        assign_replicas(partitions, factor, [1, 2, 3])
    assert info.value.code == code


def test_added_partitions_continue_kafkas_round_robin_from_partition_0s_broker() -> None:
    existing = {0: [2, 3, 1], 1: [3, 1, 2]}
    added = added_partitions("t", existing, 5, None, [1, 2, 3])
    # Kafka continues with start index = position of partition 0's first replica (broker 2 -> 1)
    assert added == assign_replicas(3, 3, [1, 2, 3], start_index=1, first_partition=2)
    assert sorted(added) == [2, 3, 4] and all(sorted(r) == [1, 2, 3] for r in added.values())


@pytest.mark.parametrize(
    ("count", "given", "code"),
    [
        (2, None, ErrorCode.INVALID_PARTITIONS),
        (1, None, ErrorCode.INVALID_PARTITIONS),
        (4, [[1, 2]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # two new partitions, one list
        (3, [[1, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (3, [[1, 9]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (3, [[1, 2, 3]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # the topic has two replicas each
    ],
)
def test_added_partitions_refusals(count: int, given: list[list[int]] | None, code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as info:
        added_partitions("t", {0: [1, 2], 1: [2, 3]}, count, given, [1, 2, 3])
    assert info.value.code == code


def test_added_partitions_take_a_valid_assignment_as_given() -> None:
    assert added_partitions("t", {0: [1, 2]}, 3, [[3, 1], [2, 3]], [1, 2, 3]) == {1: [3, 1], 2: [2, 3]}
