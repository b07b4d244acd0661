"""Which `__consumer_offsets` partition holds a group: Kafka's formula, bit for bit.

``partition = abs(javaStringHashCode(group_id)) % num_partitions`` where

- ``javaStringHashCode`` is Java's ``String.hashCode``: ``h = 31 * h + c`` over the
  string's UTF-16 code units (a character outside the BMP counts as its two
  surrogates), in 32-bit two's-complement arithmetic;
- ``abs`` is Kafka's ``Utils.abs``, which maps ``Integer.MIN_VALUE`` to 0 (Java's
  ``Math.abs`` would leave it negative).

Vectors: ``tests/data/vectors/group_partition.tsv``.
"""

from __future__ import annotations

import functools

_MASK32 = 0xFFFFFFFF


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` of ``s`` as a signed 32-bit int."""
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


@functools.lru_cache(maxsize=4096)
def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition of ``group_id`` among ``num_partitions`` (cached: the
    transaction coordinator asks it for the same few ids at every request)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
