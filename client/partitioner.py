"""Kafka's default partitioning: murmur2 for keyed records, sticky for the rest.

murmur2 is the 32-bit MurmurHash2 variant of Kafka's ``Utils.murmur2``: seed
0x9747b28c, m 0x5bd1e995, r 24, 4-byte little-endian blocks, tail bytes
folded in from the highest down, final mix ``h ^= h >>> 13; h *= m;
h ^= h >>> 15``; all arithmetic modulo 2**32 and the result read as a signed
int32. A keyed record goes to ``(murmur2(key) & 0x7fffffff) % partitions``,
which is what the Java client, kafka-python and librdkafka's
``murmur2_random`` partitioner compute (vectors: tests/data/vectors/murmur2.tsv).
"""

from __future__ import annotations

import random
import struct

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF

# Keys repeat a lot in practice; hashing in Python costs ~1 us per 16 bytes.
_CACHE: dict[bytes, int] = {}
_CACHE_MAX = 65536


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data`` as a signed int32."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length >> 2
    if n4:
        for k in struct.unpack_from(f"<{n4}I", data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail:
        base = n4 << 2
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    positive = _CACHE.get(key)
    if positive is None:
        positive = murmur2(key) & 0x7FFFFFFF
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
