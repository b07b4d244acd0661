"""`Reader`: Kafka's wire primitives read straight from a buffer, for the hand-written fast codecs.

Classic (INT16/INT32 length prefixes) and compact (KIP-482: UNSIGNED_VARINT
length + 1, 0 = null) reads, with the generic primitives' bounds: every length
and count is checked against the bytes left before anything is read or
allocated, varints are at most five bytes and fit 32 bits, and malformed
input raises ProtocolError. Reads past the end raise ``struct.error``, which
the decoders turn into ProtocolError with the position. `string_bytes` and
`compact_string_bytes` write the two string forms for the fast encoders.
"""

from __future__ import annotations

import struct
import uuid

from protocol.errors import ProtocolError
from protocol.varint import encode_uvarint

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")


def string_bytes(text: str) -> bytes:
    """STRING: INT16 length, then UTF-8; ProtocolError past 32767 bytes, as the schema's String."""
    data = text.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ProtocolError(f"string too long: {len(data)}")
    return I16.pack(len(data)) + data


def compact_string_bytes(text: str) -> bytes:
    """COMPACT_STRING: UNSIGNED_VARINT length + 1, then UTF-8."""
    data = text.encode("utf-8")
    return encode_uvarint(len(data) + 1) + data


def uvarint_at(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the unsigned varint at ``buf[pos]``: at most five bytes, its
    value fitting 32 bits, not past ``end``."""
    result = 0
    for i in range(5):
        if pos >= end:
            raise ProtocolError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            if result > 0xFFFFFFFF:
                raise ProtocolError("varint out of range")
            return result, pos
    raise ProtocolError("varint longer than 5 bytes")


def compact_length_at(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(length or count, next position) of the compact length at ``buf[pos]``: the varint minus
    one, so -1 is null; unchecked (`check_length`). Decoders inline the one-byte case:
    ``n, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)``."""
    value, pos = uvarint_at(buf, pos, end)
    return value - 1, pos


def check_length(n: int, left: int, what: str) -> None:
    """A length or count read by a decoder, against the bytes left (null, -1, is the caller's)."""
    if n < 0:
        raise ProtocolError(f"invalid length {n}")
    if n > left:
        raise ProtocolError(f"{what} {n} exceeds the bytes left")


def text_at(buf: bytes | bytearray | memoryview, pos: int, n: int) -> str:
    """``n`` bytes of UTF-8 at ``buf[pos]``; ProtocolError if they are not UTF-8."""
    try:
        return str(buf[pos : pos + n], "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"invalid UTF-8 in string: {exc.reason}") from None


def nullable_text_at(buf: bytes | bytearray | memoryview, pos: int, n: int) -> tuple[str | None, int]:
    """(text or None, next position) of a nullable string of length ``n`` (-1: null) at ``buf[pos]``."""
    if n == -1:
        return None, pos
    check_length(n, len(buf) - pos, "string length")
    return text_at(buf, pos, n), pos + n


def nullable_view_at(view: memoryview, pos: int, n: int) -> tuple[memoryview | None, int]:
    """(a view of the bytes or None, next position) of nullable bytes of length ``n`` (-1: null)."""
    if n == -1:
        return None, pos
    check_length(n, len(view) - pos, "bytes length")
    return view[pos : pos + n], pos + n


class Struct(dict):  # type: ignore[type-arg]
    """A decoded struct for the hot paths: a dict whose keys read and write as attributes, like
    construct's `Container` (and equal to one with the same items), but through dict's own C
    methods. Every field of the version is set, so a missing one is a bug: it raises KeyError."""

    __slots__ = ()
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class HasTaggedFields(Exception):
    """A tag buffer holds fields: the caller decodes the message with its schema instead."""


class Reader:
    """A position in ``buf`` with the reads of the Kafka primitives."""

    __slots__ = ("buf", "pos", "end", "view")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.view = memoryview(buf)

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        values = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return values

    def i32(self) -> int:
        (n,) = I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return n

    def i32s(self, count: int) -> tuple[int, ...]:
        """``count`` INT32s in a row (the caller checked they fit: `compact_length` with unit 4)."""
        values = struct.unpack_from(f">{count}i", self.buf, self.pos)
        self.pos += 4 * count
        return values

    def i64(self) -> int:
        (n,) = I64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return n

    def count(self, nullable: bool = False) -> int:
        """An INT32 array count (-1 for a null array when ``nullable``), checked against the bytes left."""
        n = self.i32()
        if n == -1 and nullable:
            return -1
        if n < 0:
            raise ProtocolError(f"invalid length {n}")
        if n > self.end - self.pos:
            raise ProtocolError(f"array count {n} exceeds the bytes left")
        return n

    def _text(self, n: int) -> str:
        try:
            text = str(self.buf[self.pos : self.pos + n], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"invalid UTF-8 in string: {exc.reason}") from None
        self.pos += n
        return text

    def _slice(self, n: int) -> memoryview:
        data = self.view[self.pos : self.pos + n]
        self.pos += n
        return data

    def string(self) -> str:
        (n,) = I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        if n < 0:
            raise ProtocolError(f"invalid length {n}")
        if n > self.end - self.pos:
            raise ProtocolError(f"string length {n} exceeds the bytes left")
        return self._text(n)

    def nullable_bytes(self) -> memoryview | None:
        n = self.i32()
        if n == -1:
            return None
        if n < 0:
            raise ProtocolError(f"invalid length {n}")
        if n > self.end - self.pos:
            raise ProtocolError(f"bytes length {n} exceeds the bytes left")
        return self._slice(n)

    def uvarint(self) -> int:
        """An unsigned varint of at most five bytes whose value fits 32 bits (as the schema reads it)."""
        buf, pos = self.buf, self.pos
        if pos < self.end and buf[pos] < 0x80:
            self.pos = pos + 1
            return buf[pos]
        value, self.pos = uvarint_at(buf, pos, self.end)
        return value

    def compact_length(self, nullable: bool, what: str, unit: int = 1) -> int:
        """A compact length or count (-1: null), checked against the bytes left (``unit`` bytes each)."""
        n = self.uvarint() - 1
        if n < 0:
            if nullable:
                return -1
            raise ProtocolError(f"invalid length {n}")
        if n * unit > self.end - self.pos:
            raise ProtocolError(f"{what} {n} exceeds the bytes left")
        return n

    def compact_string(self, nullable: bool = False) -> str | None:
        n = self.compact_length(nullable, "string length")
        return None if n < 0 else self._text(n)

    def compact_bytes(self) -> memoryview | None:
        """COMPACT_NULLABLE_BYTES / COMPACT_RECORDS as a view into the buffer (writable when it is)."""
        n = self.compact_length(True, "bytes length")
        return None if n < 0 else self._slice(n)

    def uuid(self) -> uuid.UUID:
        if self.end - self.pos < 16:
            raise ProtocolError("uuid truncated")
        value = uuid.UUID(bytes=bytes(self.buf[self.pos : self.pos + 16]))
        self.pos += 16
        return value

    def no_tags(self) -> None:
        """An empty tag buffer; `HasTaggedFields` if it holds any."""
        if self.uvarint() != 0:
            raise HasTaggedFields
