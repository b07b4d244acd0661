"""Kafka's replica placement, rack-unaware and rack-aware, against assignments worked out by hand from
its rules and the examples of AdminUtils' documentation."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from broker.cluster.assignment import added_partitions
from protocol.errors import ErrorCode, KafkaError
from protocol.placement import MixedRacks, assign_replicas, rack_alternated


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


# -- rack-aware ---------------------------------------------------------------------------------

KAFKA_EXAMPLE = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
SIX_IN_THREE = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


def test_rack_alternated_list_is_kafkas() -> None:
    assert rack_alternated(KAFKA_EXAMPLE) == [0, 3, 1, 5, 4, 2]
    three_by_three = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated(three_by_three) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_alternated_skips_a_rack_that_ran_out() -> None:
    assert rack_alternated({1: "a", 2: "a", 3: "a", 4: "b"}) == [1, 4, 2, 3]


def test_racks_are_ordered_as_java_strings() -> None:
    # Java compares UTF-16 code units: U+10000 (D800 DC00) sorts before U+FFFF, unlike code points
    assert rack_alternated({1: "\uffff", 2: "\U00010000"}) == [2, 1]


def test_fixed_start_matches_kafkas_rack_aware_example() -> None:
    got = assign_replicas(7, 3, list(KAFKA_EXAMPLE), racks=KAFKA_EXAMPLE, start_index=0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # past one round the followers shift, so partition 6 is not partition 0 again
    }


@pytest.mark.parametrize("seed", range(20))
def test_every_rf3_partition_spans_three_racks_and_leaders_spread(seed: int) -> None:
    got = assign_replicas(12, 3, list(SIX_IN_THREE), racks=SIX_IN_THREE, rng=random.Random(seed))
    assert all(sorted(SIX_IN_THREE[b] for b in r) == ["a", "b", "c"] for r in got.values())
    assert Counter(r[0] for r in got.values()) == {b: 2 for b in SIX_IN_THREE}  # 12 leaders over 6
    assert Counter(b for r in got.values() for b in r) == {b: 6 for b in SIX_IN_THREE}


@pytest.mark.parametrize("seed", range(10))
def test_fewer_replicas_than_racks_put_at_most_one_in_each(seed: int) -> None:
    got = assign_replicas(9, 2, list(SIX_IN_THREE), racks=SIX_IN_THREE, rng=random.Random(seed))
    assert all(SIX_IN_THREE[r[0]] != SIX_IN_THREE[r[1]] for r in got.values())


@pytest.mark.parametrize("start", range(5))
def test_more_replicas_than_racks_cover_every_rack_on_distinct_brokers(start: int) -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}  # Kafka's "skip a broker with a replica" case
    got = assign_replicas(6, 4, list(racks), racks=racks, start_index=start)
    for replicas in got.values():
        assert len(set(replicas)) == 4
        assert {racks[b] for b in replicas} == {"a", "b", "c"}
        assert {racks[b] for b in replicas[:3]} == {"a", "b", "c"}  # one per rack before any rack twice


def test_one_rack_places_like_round_robin_over_its_brokers() -> None:
    racks = dict.fromkeys(range(4), "only")
    got = assign_replicas(8, 3, list(racks), racks=racks, rng=random.Random(1))
    assert all(len(set(r)) == 3 for r in got.values())
    assert Counter(r[0] for r in got.values()) == dict.fromkeys(range(4), 2)


def test_brokers_without_racks_place_rack_unaware() -> None:
    unaware = assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0)
    assert assign_replicas(10, 3, [0, 1, 2, 3, 4], racks=dict.fromkeys(range(5)), start_index=0) == unaware


def test_only_some_brokers_with_a_rack_is_kafkas_unknown_server_error() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: None}
    with pytest.raises(MixedRacks) as info:
        assign_replicas(10, 5, list(racks), racks=racks)
    assert info.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "[4]" in str(info.value)
    with pytest.raises(KafkaError) as first:  # the partition count and the factor are checked first
        assign_replicas(10, 6, list(racks), racks=racks)
    assert first.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_added_partitions_place_rack_aware_from_partition_0s_position_among_the_ids() -> None:
    existing = {0: [3, 5, 1], 1: [5, 1, 3]}
    added = added_partitions("t", existing, 6, None, list(SIX_IN_THREE), SIX_IN_THREE)
    # broker 3 is at index 2 of the ids [1..6]; Kafka uses that index on the rack-alternated list
    expected = assign_replicas(4, 3, list(SIX_IN_THREE), racks=SIX_IN_THREE, start_index=2, first_partition=2)
    assert added == expected
    assert all(sorted(SIX_IN_THREE[b] for b in r) == ["a", "b", "c"] for r in added.values())


def test_added_partitions_refuse_mixed_racks() -> None:
    with pytest.raises(MixedRacks):
        added_partitions("t", {0: [1, 2]}, 2, None, [1, 2, 3], {1: "a", 2: "b", 3: None})
