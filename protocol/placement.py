"""Kafka's replica placement for new topics and partitions, rack-aware when brokers have racks; shared
by the broker and the tools (``minikafka partitions reassign --generate``).

Kafka's AdminUtils.assignReplicasToBrokers, as a ZooKeeper-mode broker runs it
for CreateTopics, CreatePartitions and the topics it creates itself:

- Rack-unaware (no broker has a ``broker.rack``): for brokers sorted by id, a
  start index s and a shift k (both random in [0, n) unless fixed), partition
  p's first replica is broker[(p + s) % n]; the shift grows by one each time p
  passes a multiple of n (p > 0), and follower j (0-based) sits
  ``1 + (k + j) % (n - 1)`` places after the first. Leaders (the first
  replicas) are spread evenly and followers of consecutive partitions are
  staggered, so losing one broker spreads its load over the others.
- Rack-aware (every broker has a rack): the same round robin over the
  *rack-alternated* broker list (racks in sorted order, each rack's brokers by
  id, taking one broker from each rack in turn: 1a 2b 3c 4a 5b 6c ...), with
  the followers' shift multiplied by the number of racks. Walking on from the
  leader, a follower is skipped while its rack already holds a replica and
  some rack holds none, or while it already holds one and some broker holds
  none: a partition gets one replica per rack until every rack has one, so
  with as many replicas as racks each replica sits in a rack of its own.
- Some brokers with a rack and some without: Kafka refuses the placement
  (AdminOperationException, which Kafka answers as UNKNOWN_SERVER_ERROR, with
  no message); so does this module (`MixedRacks`, with a message).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from protocol.errors import ErrorCode, KafkaError


class MixedRacks(KafkaError):
    """Some live brokers have a rack and some do not: no placement (Kafka's UNKNOWN_SERVER_ERROR)."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


def check_racks(racks: Mapping[int, str | None]) -> bool:
    """Whether to place rack-aware: True when every broker has a rack, False when none has.

    Raises `MixedRacks` when only some have one."""
    missing = sorted(b for b, rack in racks.items() if rack is None)
    if not missing:
        return bool(racks)
    if len(missing) < len(racks):
        raise MixedRacks(
            f"brokers {missing} have no broker.rack while others have one: rack-aware replica "
            "placement needs a rack on every broker (or on none)"
        )
    return False


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Broker ids taking one from each rack in turn: racks in Kafka's order (Java's string
    order: UTF-16 code units), a rack's brokers by id; a rack that runs out is passed over."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack, key=lambda r: r.encode("utf-16-be"))]
    out: list[int] = []
    depth = 0
    while len(out) < len(racks):
        out += [q[depth] for q in queues if depth < len(q)]
        depth += 1
    return out


def _follower_index(first: int, shift: int, j: int, n: int) -> int:
    """Kafka's replicaIndex: where follower ``j`` of a partition led from ``first`` sits."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_replicas(
    partitions: int,
    replication_factor: int,
    brokers: Sequence[int],
    *,
    racks: Mapping[int, str | None] | None = None,
    start_index: int = -1,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """{partition: replicas} for ``partitions`` new partitions numbered from ``first_partition``.

    ``racks``: each broker's rack (None: no rack; brokers missing from it have
    none). Raises `KafkaError` INVALID_PARTITIONS or INVALID_REPLICATION_FACTOR
    (more replicas than brokers, Kafka's message), then `MixedRacks`.
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
    of = {b: (racks or {}).get(b) for b in ids}
    rng = rng or random.Random()
    if check_racks(of):
        racked = {b: rack for b, rack in of.items() if rack is not None}  # every one of them
        return _rack_aware(partitions, replication_factor, racked, start_index, first_partition, rng)
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        out[p] = [ids[first]] + [
            ids[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1)
        ]
    return out


def _rack_aware(
    partitions: int,
    replication_factor: int,
    racks: Mapping[int, str],
    start_index: int,
    first_partition: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n = len(arranged)
    rack_count = len(set(racks.values()))
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        k = 0
        while len(replicas) < replication_factor:
            broker = arranged[_follower_index(first, shift * rack_count, k, n)]
            rack = racks[broker]
            k += 1
            if rack in racks_used and len(racks_used) < rack_count:
                continue  # a rack with no replica yet comes first
            if broker in replicas and len(replicas) < n:
                continue  # so does a broker with none
            replicas.append(broker)
            racks_used.add(rack)
        out[p] = replicas
    return out
