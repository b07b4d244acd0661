"""Fast, allocation-light scanning of the records in a RecordBatch v2 payload.

`protocol.records.decode_batch` builds a `Record` per record; the cleaner (which
needs keys, null-ness and byte ranges) and timestamp lookups (which need offset
and timestamp deltas) only look at a few fields, so they use `scan_records`,
which decodes the short (one- and two-byte) zigzag varints inline and validates
lengths the same way: anything malformed raises `ProtocolError`.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import codecs
from protocol.errors import ProtocolError
from protocol.records import DEFAULT_MAX_DECOMPRESSED, RECORD_BATCH_OVERHEAD, BatchHeader
from protocol.varint import decode_varint, decode_varlong

# A scanned record: (offset delta, timestamp delta, key or None, value is null, start, end) where
# [start, end) are its bytes (length prefix included) in the decompressed payload.
Scanned = tuple[int, int, bytes | None, bool, int, int]


def batch_payload(data: bytes, h: BatchHeader) -> bytes:
    """The records of the batch ``data`` (header ``h``), decompressed (bounded like `decode_batch`)."""
    body = memoryview(data)[RECORD_BATCH_OVERHEAD : h.size]
    if h.codec == codecs.NONE:
        return bytes(body)
    return codecs.decompress(h.codec, body, DEFAULT_MAX_DECOMPRESSED)


def _zigzag(buf: bytes, pos: int, slow: Callable[[bytes, int], tuple[int, int]]) -> tuple[int, int]:
    """A zigzag varint at ``pos``: one- and two-byte forms inline, longer ones by ``slow``."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = buf[pos + 1]
    if b2 < 0x80:
        u = (b & 0x7F) | (b2 << 7)
        return (u >> 1) ^ -(u & 1), pos + 2
    return slow(buf, pos)


def scan_records(payload: bytes, count: int) -> list[Scanned]:
    """The fields listed in `Scanned` for each of the ``count`` records of ``payload``."""
    out: list[Scanned] = []
    n = len(payload)
    if count < 0 or count > n // 7:  # no record takes fewer than 7 bytes
        raise ProtocolError(f"record count {count} does not fit in {n} bytes")
    pos = 0
    varint, varlong = decode_varint, decode_varlong
    try:
        for _ in range(count):
            start = pos
            length, pos = _zigzag(payload, pos, varint)
            end = pos + length
            if length < 6 or end > n:
                raise ProtocolError(f"bad record length {length}")
            ts_delta, pos = _zigzag(payload, pos + 1, varlong)  # after the attributes byte
            offset_delta, pos = _zigzag(payload, pos, varint)
            key_length, pos = _zigzag(payload, pos, varint)
            key = None
            if key_length >= 0:
                if pos + key_length > end:
                    raise ProtocolError(f"bad key length {key_length}")
                key = payload[pos : pos + key_length]
                pos += key_length
            elif key_length != -1:
                raise ProtocolError(f"bad key length {key_length}")
            if pos >= end:
                raise ProtocolError("record ends before its value")
            out.append((offset_delta, ts_delta, key, payload[pos] == 0x01, start, end))
            pos = end
    except IndexError:
        raise ProtocolError("record runs past the end of the batch") from None
    if pos != n:
        raise ProtocolError(f"{n - pos} bytes left after {count} records")
    return out
