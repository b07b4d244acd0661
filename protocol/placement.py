"""Kafka's replica placement for new topics and partitions, shared by the broker and the tools.

Rack-unaware round robin: for brokers sorted by id, a start index s and a
shift k (both random in [0, n) unless fixed), partition p's first replica is
broker[(p + s) % n]; the shift grows by one each time p passes a multiple of n
(p > 0), and follower j (0-based) sits ``1 + (k + j) % (n - 1)`` places after
the first. Leaders (the first replicas) are spread evenly and followers of
consecutive partitions are staggered, so losing one broker spreads its load
over the others.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from protocol.errors import ErrorCode, KafkaError


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
