"""Replica placement for new topics and partitions: Kafka's rack-unaware round robin.

For brokers sorted by id, a start index s and a shift k (both random in
[0, n) unless fixed), partition p's first replica is broker[(p + s) % n]; the
shift grows by one each time p passes a multiple of n (p > 0), and follower j
(0-based) sits ``1 + (k + j) % (n - 1)`` places after the first. Leaders (the
first replicas) are spread evenly and followers of consecutive partitions are
staggered, so losing one broker spreads its load over the others.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from protocol.errors import ErrorCode, KafkaError
from storage.topic_registry import check_partition_increase


def assign_replicas(
    partitions: int,
    replication_factor: int,
    brokers: Sequence[int],
    *,
    start_index: int = -1,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """{partition: replicas} for ``partitions`` new partitions numbered from ``first_partition``.

    Raises `KafkaError` INVALID_PARTITIONS or INVALID_REPLICATION_FACTOR (more
    replicas than brokers, Kafka's message).
    """
    if partitions < 1:
        raise KafkaError(
            f"number of partitions must be larger than 0, got {partitions}", ErrorCode.INVALID_PARTITIONS
        )
    if replication_factor < 1:
        raise KafkaError(
            f"replication factor must be larger than 0, got {replication_factor}",
            ErrorCode.INVALID_REPLICATION_FACTOR,
        )
    ids = sorted(brokers)
    n = len(ids)
    if replication_factor > n:
        raise KafkaError(
            f"replication factor: {replication_factor} larger than available brokers: {n}",
            ErrorCode.INVALID_REPLICATION_FACTOR,
        )
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[(first + 1 + (shift + j) % (n - 1)) % n])
        out[p] = replicas
    return out


def check_replicas(
    partition: int, replicas: Sequence[int], live: set[int], factor: int | None = None
) -> None:
    """A requested replica list: distinct live brokers, ``factor`` of them when given.

    Raises `KafkaError` INVALID_REPLICA_ASSIGNMENT.
    """
    if not replicas or len(set(replicas)) != len(replicas) or not set(replicas) <= live:
        raise KafkaError(
            f"partition {partition}: replicas {list(replicas)} are not distinct live brokers (live: {sorted(live)})",
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        )
    if factor is not None and len(replicas) != factor:
        raise KafkaError(
            f"Inconsistent replication factor: the topic has {factor} replicas per partition, "
            f"partition {partition} was given {len(replicas)}",
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        )


def added_partitions(
    name: str,
    existing: dict[int, list[int]],
    count: int,
    given: Sequence[Sequence[int]] | None,
    live: Sequence[int],
) -> dict[int, list[int]]:
    """{new partition: replicas} raising ``name`` from ``existing`` to ``count`` partitions (CreatePartitions).

    ``given``: the replicas asked for, one list per new partition, checked
    like Kafka checks them; None: placed by `assign_replicas`, continuing
    from the broker that leads partition 0 by preference. Raises `KafkaError`
    INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT or INVALID_REPLICATION_FACTOR.
    """
    current = len(existing)
    check_partition_increase(name, current, count)
    factor = len(existing[0]) if existing.get(0) else 1
    if given is None:
        ids = sorted(live)
        first = existing[0][0] if existing.get(0) else -1
        start = next((i for i, b in enumerate(ids) if b >= first), 0)
        return assign_replicas(count - current, factor, ids, start_index=start, first_partition=current)
    if len(given) != count - current:
        raise KafkaError(
            f"Increasing the number of partitions by {count - current} but {len(given)} assignments provided.",
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        )
    for index, replicas in enumerate(given, start=current):
        check_replicas(index, replicas, set(live), factor)
    return {index: list(replicas) for index, replicas in enumerate(given, start=current)}
