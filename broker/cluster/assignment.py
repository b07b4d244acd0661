"""Replica assignment: checks of requested replica lists, placement of added partitions, and a
partition's full assignment while it is reassigned (`FullAssignment`). Kafka's placement itself is
`protocol.placement` (`assign_replicas`, rack-aware when brokers have racks), shared with the tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import ErrorCode, KafkaError
from protocol.placement import MixedRacks, assign_replicas, check_racks
from storage.topic_registry import check_partition_increase

__all__ = [
    "FullAssignment",
    "MixedRacks",
    "added_partitions",
    "assign_replicas",
    "check_racks",
    "check_replicas",
]


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
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """{new partition: replicas} raising ``name`` from ``existing`` to ``count`` partitions (CreatePartitions).

    ``given``: the replicas asked for, one list per new partition, checked
    like Kafka checks them; None: placed by `assign_replicas` (rack-aware with
    ``racks``), continuing from the broker that leads partition 0 by
    preference: its position among the live brokers sorted by id is the fixed
    start index, which Kafka then applies to the rack-alternated list too.
    Raises `KafkaError` INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT or
    INVALID_REPLICATION_FACTOR, or `MixedRacks`.
    """
    current = len(existing)
    check_partition_increase(name, current, count)
    factor = len(existing[0]) if existing.get(0) else 1
    if given is None:
        ids = sorted(live)
        first = existing[0][0] if existing.get(0) else -1
        start = next((i for i, b in enumerate(ids) if b >= first), 0)
        return assign_replicas(
            count - current, factor, ids, racks=racks, start_index=start, first_partition=current
        )
    if len(given) != count - current:
        raise KafkaError(
            f"Increasing the number of partitions by {count - current} but {len(given)} assignments provided.",
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        )
    for index, replicas in enumerate(given, start=current):
        check_replicas(index, replicas, set(live), factor)
    return {index: list(replicas) for index, replicas in enumerate(given, start=current)}


@dataclass(frozen=True, slots=True)
class FullAssignment:
    """A partition's replicas and, while it is reassigned, those being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: tuple[int, ...]) -> FullAssignment:
        """The assignment while moving from this one's original replicas to ``target``."""
        origin = self.origin
        full = tuple(dict.fromkeys(target + origin))
        return FullAssignment(
            full, tuple(r for r in full if r not in origin), tuple(r for r in full if r not in target)
        )
