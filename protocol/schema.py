"""A small declarative layer that turns Kafka's versioned field lists into construct Structs.

A message is declared once as a list of `Field`s, each valid for a version range
(like the `versions` in Kafka's message JSON). `build_struct(fields, version)`
keeps the fields valid for that version and nests `ArrayOf` element structs, so
every supported version gets its own construct `Struct`.

Example::

    FIELDS = [
        Field("transactional_id", NullableString, 3),
        Field("acks", Int16),
        Field("topic_data", ArrayOf(Field("name", String), ...)),
    ]
    REQUEST = {v: build_struct(FIELDS, v) for v in range(3, 8)}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from construct import Construct, Struct

from protocol.primitives import Array


@dataclass(frozen=True)
class ArrayOf:
    """An array whose elements are structs of the given fields."""

    fields: tuple[Field, ...]
    nullable: bool = False

    def __init__(self, *fields: Field, nullable: bool = False) -> None:
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "nullable", nullable)


@dataclass(frozen=True)
class Field:
    """One field, present in versions min_version..max_version inclusive."""

    name: str
    kind: Construct | ArrayOf
    min_version: int = 0
    max_version: int = 999


def _construct_for(kind: Construct | ArrayOf, version: int) -> Construct:
    if isinstance(kind, ArrayOf):
        return Array(build_struct(kind.fields, version), nullable=kind.nullable)
    return kind


def build_struct(fields: tuple[Field, ...] | list[Field], version: int) -> Struct:
    """The construct Struct for `version`: the fields valid at that version, in order."""
    return Struct(
        *(
            f.name / _construct_for(f.kind, version)
            for f in fields
            if f.min_version <= version <= f.max_version
        )
    )


def versions(fields: list[Field], lo: int, hi: int) -> dict[int, Any]:
    """{version: Struct} for every version in lo..hi."""
    return {v: build_struct(fields, v) for v in range(lo, hi + 1)}
