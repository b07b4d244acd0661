"""Kafka's murmur2 hash (``org.apache.kafka.common.utils.Utils.murmur2``).

The 32-bit MurmurHash2 variant Kafka uses in two places: the default producer
partitioner (``(murmur2(key) & 0x7fffffff) % partitions``) and the partitioner
of the ``__remote_log_metadata`` topic (KIP-405). It lives in protocol/ so that
both the client and the broker can use it.

Algorithm: seed 0x9747b28c, m 0x5bd1e995, r 24; 4-byte little-endian blocks;
tail bytes folded in from the highest down; final mix ``h ^= h >>> 13;
h *= m; h ^= h >>> 15``; all arithmetic modulo 2**32 and the result read as a
signed int32 (vectors: tests/data/vectors/murmur2.tsv).
"""

from __future__ import annotations

import struct

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


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


def to_positive(h: int) -> int:
    """Kafka's ``Utils.toPositive``: the low 31 bits of a signed int32 (not ``abs``)."""
    return h & 0x7FFFFFFF
