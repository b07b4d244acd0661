"""Kafka's default partitioning: murmur2 for keyed records, sticky for the rest.

murmur2 is Kafka's ``Utils.murmur2`` (`protocol.murmur2`). A keyed record goes to
``(murmur2(key) & 0x7fffffff) % partitions``, which is what the Java client,
kafka-python and librdkafka's ``murmur2_random`` partitioner compute (vectors:
tests/data/vectors/murmur2.tsv).
"""

from __future__ import annotations

import random

from protocol.murmur2 import murmur2, to_positive

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key"]

# Keys repeat a lot in practice; hashing in Python costs ~1 us per 16 bytes.
_CACHE: dict[bytes, int] = {}
_CACHE_MAX = 65536


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    positive = _CACHE.get(key)
    if positive is None:
        positive = to_positive(murmur2(key))
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = positive
    return positive % num_partitions


class StickyPartitioner:
    """Null-key records stick to one partition per topic until its batch fills (KIP-480).

    `partition(topic, n)` returns the current sticky partition; the producer
    calls `next(topic, n)` when the batch it was filling is full, which moves
    the topic to another random partition.
    """

    def __init__(self) -> None:
        self._current: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int) -> int:
        p = self._current.get(topic)
        if p is None or p >= num_partitions:
            p = random.randrange(num_partitions)
            self._current[topic] = p
        return p

    def next(self, topic: str, num_partitions: int) -> int:
        old = self._current.get(topic)
        if num_partitions <= 1:
            p = 0
        else:
            p = random.randrange(num_partitions - 1)
            if old is not None and p >= old:
                p += 1
        self._current[topic] = p
        return p
