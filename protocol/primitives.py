"""Bounded Kafka wire primitives as `construct` constructs.

construct's own `PascalString`, `Array` and `VarInt` trust the input: a count of
0x7FFFFFFF makes them loop or allocate. These wrappers check every length and
count against the bytes left in the stream before reading, cap varints at five
bytes, and reject invalid UTF-8, raising `ProtocolError` for all of it.

Formats (all integers big-endian):
- INT8/16/32/64, BOOL (one byte, non-zero is true).
- STRING: INT16 length + UTF-8; NULLABLE_STRING: length -1 is null.
- BYTES: INT32 length + bytes; NULLABLE_BYTES (also RECORDS): length -1 is null.
- ARRAY: INT32 count + elements; nullable arrays use count -1 for null.
- Flexible (compact) forms: UNSIGNED_VARINT(length + 1), 0 is null.
- TAG_BUFFER: UNSIGNED_VARINT count, then (UNSIGNED_VARINT tag, UNSIGNED_VARINT size, bytes).
"""

from __future__ import annotations

import io
import struct
from typing import Any

from construct import (
    Construct,
    Flag,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    ListContainer,
    SizeofError,
)

from protocol.errors import ProtocolError
from protocol.varint import encode_uvarint

__all__ = [
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Bool",
    "String",
    "NullableString",
    "CompactString",
    "CompactNullableString",
    "Bytes",
    "NullableBytes",
    "Records",
    "Array",
    "CompactArray",
    "TaggedFields",
    "UVarInt",
]

Int8 = Int8sb
Int16 = Int16sb
Int32 = Int32sb
Int64 = Int64sb
Bool = Flag

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def remaining(stream: io.BytesIO) -> int:
    """Bytes left to read in `stream` (a seekable in-memory stream)."""
    pos = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end - pos


def _read_exact(stream: io.BytesIO, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise ProtocolError(f"need {n} bytes, {len(data)} left")
    return data


def read_uvarint(stream: io.BytesIO) -> int:
    """Read an unsigned LEB128 varint of at most five bytes (an unsigned int32)."""
    result = 0
    for i in range(5):
        b = stream.read(1)
        if not b:
            raise ProtocolError("truncated varint")
        byte = b[0]
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if result > 0xFFFFFFFF:
                raise ProtocolError("varint out of range")
            return result
    raise ProtocolError("varint longer than 5 bytes")


def write_uvarint(stream: io.BytesIO, value: int) -> None:
    try:
        stream.write(encode_uvarint(value))
    except ValueError as exc:
        raise ProtocolError(str(exc)) from None


class _Primitive(Construct):
    """Base for our constructs: a variable size, no compiled form."""

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("variable size")


class UVarIntCon(_Primitive):
    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        return read_uvarint(stream)

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        write_uvarint(stream, obj)
        return obj


UVarInt = UVarIntCon()


class _Length(_Primitive):
    """Shared length prefix handling for strings, bytes and arrays."""

    def __init__(self, width: int, nullable: bool, compact: bool) -> None:
        super().__init__()
        self.width = width  # 2 or 4 for classic prefixes
        self.nullable = nullable
        self.compact = compact

    def _read_length(self, stream: io.BytesIO) -> int | None:
        if self.compact:
            n = read_uvarint(stream) - 1
        elif self.width == 2:
            n = _I16.unpack(_read_exact(stream, 2))[0]
        else:
            n = _I32.unpack(_read_exact(stream, 4))[0]
        if n < 0:
            if n == -1 and self.nullable:
                return None
            raise ProtocolError(f"invalid length {n}")
        return n

    def _write_length(self, stream: io.BytesIO, n: int | None) -> None:
        if n is None:
            if not self.nullable:
                raise ProtocolError("null given for a non-nullable field")
            if self.compact:
                stream.write(b"\x00")
            else:
                stream.write(b"\xff\xff" if self.width == 2 else b"\xff\xff\xff\xff")
            return
        if self.compact:
            write_uvarint(stream, n + 1)
        elif self.width == 2:
            if n > 0x7FFF:
                raise ProtocolError(f"string too long: {n}")
            stream.write(_I16.pack(n))
        else:
            stream.write(_I32.pack(n))


class StringCon(_Length):
    """STRING / NULLABLE_STRING / COMPACT_(NULLABLE_)STRING, decoded as `str`."""

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        n = self._read_length(stream)
        if n is None:
            return None
        if n > remaining(stream):
            raise ProtocolError(f"string length {n} exceeds the bytes left")
        try:
            return _read_exact(stream, n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"invalid UTF-8 in string: {exc.reason}") from None

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if obj is None:
            self._write_length(stream, None)
            return obj
        data = obj.encode("utf-8")
        self._write_length(stream, len(data))
        stream.write(data)
        return obj


class BytesCon(_Length):
    """BYTES / NULLABLE_BYTES / RECORDS with an INT32 (or compact) length."""

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        n = self._read_length(stream)
        if n is None:
            return None
        if n > remaining(stream):
            raise ProtocolError(f"bytes length {n} exceeds the bytes left")
        return _read_exact(stream, n)

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if obj is None:
            self._write_length(stream, None)
            return obj
        self._write_length(stream, len(obj))
        stream.write(obj)
        return obj


class ArrayCon(_Length):
    """ARRAY of `subcon` with an INT32 (or compact) count, checked against the bytes left.

    Every Kafka array element takes at least one byte (fixed-size elements take
    their size), so a count larger than the bytes left is rejected up front.
    """

    def __init__(self, subcon: Construct, nullable: bool, compact: bool) -> None:
        super().__init__(4, nullable, compact)
        self.subcon = subcon
        try:
            self.min_element = max(1, subcon.sizeof())
        except SizeofError:
            self.min_element = 1

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        n = self._read_length(stream)
        if n is None:
            return None
        if n * self.min_element > remaining(stream):
            raise ProtocolError(f"array count {n} exceeds the bytes left")
        parse = self.subcon._parsereport
        return ListContainer([parse(stream, context, path) for _ in range(n)])

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if obj is None:
            self._write_length(stream, None)
            return obj
        self._write_length(stream, len(obj))
        build = self.subcon._build
        for item in obj:
            build(item, stream, context, path)
        return obj


class TaggedFieldsCon(_Primitive):
    """TAG_BUFFER: parsed into {tag: raw bytes}; built from such a dict (None or {} -> 0x00).

    Tags must come in strictly increasing order, as Kafka writes and requires them.
    """

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        count = read_uvarint(stream)
        if count > remaining(stream):
            raise ProtocolError(f"tagged field count {count} exceeds the bytes left")
        fields: dict[int, bytes] = {}
        last = -1
        for _ in range(count):
            tag = read_uvarint(stream)
            size = read_uvarint(stream)
            if tag <= last:
                raise ProtocolError(f"tagged fields out of order: {tag} after {last}")
            last = tag
            if size > remaining(stream):
                raise ProtocolError(f"tagged field size {size} exceeds the bytes left")
            fields[tag] = _read_exact(stream, size)
        return fields

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        fields = obj or {}
        write_uvarint(stream, len(fields))
        for tag in sorted(fields):
            write_uvarint(stream, tag)
            write_uvarint(stream, len(fields[tag]))
            stream.write(fields[tag])
        return obj


String = StringCon(2, nullable=False, compact=False)
NullableString = StringCon(2, nullable=True, compact=False)
CompactString = StringCon(0, nullable=False, compact=True)
CompactNullableString = StringCon(0, nullable=True, compact=True)
Bytes = BytesCon(4, nullable=False, compact=False)
NullableBytes = BytesCon(4, nullable=True, compact=False)
Records = NullableBytes
TaggedFields = TaggedFieldsCon()


def Array(subcon: Construct, nullable: bool = False) -> ArrayCon:  # noqa: N802 - reads like a type
    return ArrayCon(subcon, nullable=nullable, compact=False)


def CompactArray(subcon: Construct, nullable: bool = False) -> ArrayCon:  # noqa: N802
    return ArrayCon(subcon, nullable=nullable, compact=True)
