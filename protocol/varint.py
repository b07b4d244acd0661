"""Variable-length integers used by Kafka.

Two families, both base-128 little-endian groups of 7 bits with the high bit of
each byte meaning "more bytes follow":

* Signed zigzag varints, used inside records (RecordBatch v2): the signed value
  ``n`` is mapped to ``(n << 1) ^ (n >> 63)`` first, so small magnitudes of either
  sign stay short: 0->00, -1->01, 1->02, 63->7e, -64->7f, 64->8001, 300->d804,
  -300->d704. ``varint`` holds an int32 (at most 5 bytes), ``varlong`` an int64
  (at most 10 bytes).
* Unsigned varints (``uvarint``), used by the flexible protocol versions for
  lengths and tagged fields: no zigzag, uint32, at most 5 bytes.

Decoders take ``(buf, pos)`` and return ``(value, new_pos)``. A truncated or
over-long encoding raises `ProtocolError`. Like Kafka's Java reader, bits beyond
the type's width in the last allowed byte are dropped rather than rejected, so
every accepted encoding maps to an in-range value.

Encoders raise `ValueError` for out-of-range input: that is a programming error,
not malformed wire data.
"""

from __future__ import annotations

from protocol.errors import ProtocolError

BytesLike = bytes | bytearray | memoryview

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1
_SINGLE_BYTES = [bytes((i,)) for i in range(0x80)]


def _encode_unsigned(n: int) -> bytes:
    if n < 0x80:
        return _SINGLE_BYTES[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _decode_unsigned(buf: BytesLike, pos: int, max_bytes: int, kind: str) -> tuple[int, int]:
    start = pos
    end = min(len(buf), pos + max_bytes)
    result = 0
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    if pos - start >= max_bytes:
        raise ProtocolError(f"{kind} longer than {max_bytes} bytes at position {start}")
    raise ProtocolError(f"truncated {kind} at position {start}")


def encode_varint(n: int) -> bytes:
    """Encode a signed int32 as a zigzag varint (1 to 5 bytes)."""
    if not INT32_MIN <= n <= INT32_MAX:
        raise ValueError(f"varint out of int32 range: {n}")
    return _encode_unsigned((n << 1) ^ (n >> 31))


def encode_varlong(n: int) -> bytes:
    """Encode a signed int64 as a zigzag varlong (1 to 10 bytes)."""
    if not INT64_MIN <= n <= INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {n}")
    return _encode_unsigned((n << 1) ^ (n >> 63))


def encode_uvarint(n: int) -> bytes:
    """Encode an unsigned uint32 as a plain (non-zigzag) varint (1 to 5 bytes).

    The flexible encoders call this for every length and count: the one- and two-byte forms
    (below 16384) are made without the general loop."""
    if 0 <= n < 0x80:
        return _SINGLE_BYTES[n]
    if 0x80 <= n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if not 0 <= n <= UINT32_MAX:
        raise ValueError(f"uvarint out of uint32 range: {n}")
    return _encode_unsigned(n)


def decode_varint(buf: BytesLike, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag int32 varint at ``pos``; returns ``(value, new_pos)``."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:  # fast path: one byte covers -64..63
            return (b >> 1) ^ -(b & 1), pos + 1
    u, pos = _decode_unsigned(buf, pos, 5, "varint")
    u &= _MASK32
    return (u >> 1) ^ -(u & 1), pos


def decode_varlong(buf: BytesLike, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag int64 varlong at ``pos``; returns ``(value, new_pos)``."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    u, pos = _decode_unsigned(buf, pos, 10, "varlong")
    u &= _MASK64
    return (u >> 1) ^ -(u & 1), pos


def decode_uvarint(buf: BytesLike, pos: int = 0) -> tuple[int, int]:
    """Decode an unsigned uint32 varint at ``pos``; returns ``(value, new_pos)``."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    u, pos = _decode_unsigned(buf, pos, 5, "uvarint")
    return u & _MASK32, pos
