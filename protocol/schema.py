"""Kafka's versioned message definitions as construct schemas, one per version.

A message is declared once as a list of `F` fields, in the notation of Kafka's
message JSON (`clients/src/main/resources/common/message/`): each field has a
type, the versions it exists in (``"3+"``, ``"0-12"``, ``"none"``), the
versions in which it may be null, and, for tagged fields, its tag and tagged
versions. `message_versions(fields, lo, hi, flexible)` turns that into
``{version: Message}``; the modules of `protocol.messages` are generated from
Kafka's JSON by `protocol.gen_messages` in this notation.

Field types: "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
"bool", "string", "bytes", "records", "uuid", ``Arr(type)`` (an array of a
primitive), ``Arr(F, ...)`` (an array of structs) and ``Obj(F, ...)`` (one
nested struct).

Encodings (KIP-482): in a flexible version strings, bytes, records and arrays
use compact forms (UNSIGNED_VARINT length + 1, 0 meaning null) and every
struct, the message itself included, ends with a TAG_BUFFER holding its tagged
fields, ordered by tag. A field may opt out of compact forms with its own
``flexible`` range (the request header's client_id does).

Values: decoded messages are construct `Container`s with snake_case keys;
uuids are `uuid.UUID`; absent tagged fields decode to their defaults. Building
takes plain dicts: a missing key (regular or tagged) is written as the field's
default (Kafka's ``default`` or the zero of its type), a tagged field equal to
its default is not written, and unknown tags are skipped when parsing.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field
from typing import Any

from construct import Construct, Container, Float64b, Int16ub, Int32ub, SizeofError, Struct

from protocol.errors import ProtocolError
from protocol.primitives import (
    ArrayCon,
    Bool,
    BytesCon,
    Int8,
    Int16,
    Int32,
    Int64,
    StringCon,
    TaggedFields,
)

__all__ = [
    "F",
    "Arr",
    "Obj",
    "Message",
    "Uuid",
    "message_versions",
    "parse_versions",
    "ZERO_UUID",
    "PRIMITIVES",
]

ZERO_UUID = uuid.UUID(int=0)
_MISSING = object()
_TOP = 1 << 15  # above every version


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version range notation: "3+", "0-12", "5", "none" (None) -> (lo, hi) inclusive."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), _TOP
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True)
class Arr:
    """An array of a primitive type name, or of structs made of the given fields."""

    element: str | tuple[F, ...]

    def __init__(self, *element: Any) -> None:
        value = element[0] if len(element) == 1 and isinstance(element[0], str) else tuple(element)
        object.__setattr__(self, "element", value)


@dataclass(frozen=True)
class Obj:
    """One nested struct (not an array) made of the given fields."""

    fields: tuple[F, ...]

    def __init__(self, *fields: F) -> None:
        object.__setattr__(self, "fields", fields)


@dataclass(frozen=True)
class F:
    """One field of a message, in Kafka's JSON terms (see the module docstring)."""

    name: str
    kind: str | Arr | Obj
    versions: str = "0+"
    nullable: str | None = None
    tag: int | None = None
    tagged: str | None = None
    default: Any = _MISSING
    flexible: str | None = None  # overrides the message's flexible versions for this field
    _ranges: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_ranges",
            (parse_versions(self.versions), parse_versions(self.nullable), parse_versions(self.tagged)),
        )

    def present(self, version: int) -> bool:
        return _within(self._ranges[0], version)

    def nullable_at(self, version: int) -> bool:
        return _within(self._ranges[1], version)

    def tagged_at(self, version: int) -> bool:
        return _within(self._ranges[2], version)


class UuidCon(Construct):
    """UUID: 16 bytes, as `uuid.UUID`."""

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        data = stream.read(16)
        if len(data) != 16:
            raise ProtocolError("uuid cut short")
        return uuid.UUID(bytes=data)

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if isinstance(obj, uuid.UUID):
            stream.write(obj.bytes)
        elif isinstance(obj, bytes | bytearray) and len(obj) == 16:
            stream.write(obj)
        else:
            raise ProtocolError(f"not a uuid: {obj!r}")
        return obj

    def _sizeof(self, context, path):  # type: ignore[no-untyped-def]
        return 16


Uuid = UuidCon()


class NullableStructCon(Construct):
    """A nullable struct field: INT8 -1 for null, else 1 followed by the struct (Kafka's encoding)."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        marker = stream.read(1)
        if len(marker) != 1:
            raise ProtocolError("nullable struct marker cut short")
        if marker == b"\xff":
            return None
        if marker != b"\x01":
            raise ProtocolError(f"nullable struct marker {marker[0]} is neither -1 nor 1")
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if obj is None:
            stream.write(b"\xff")
            return obj
        stream.write(b"\x01")
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context, path):  # type: ignore[no-untyped-def]
        raise SizeofError("nullable struct has no fixed size")


_FIXED: dict[str, Construct] = {
    "int8": Int8,
    "int16": Int16,
    "int32": Int32,
    "int64": Int64,
    "uint16": Int16ub,
    "uint32": Int32ub,
    "float64": Float64b,
    "bool": Bool,
    "uuid": Uuid,
}
_ZERO: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": ZERO_UUID,
    "string": "",
    "bytes": b"",
    "records": None,
}
PRIMITIVES = frozenset(_ZERO)  # every primitive type name of Kafka's JSON we know
_LENGTHED: dict[tuple[str, bool, bool], Construct] = {}


def _lengthed(kind: str, nullable: bool, compact: bool) -> Construct:
    key = (kind, nullable, compact)
    con = _LENGTHED.get(key)
    if con is None:
        if kind == "string":
            con = StringCon(0 if compact else 2, nullable=nullable, compact=compact)
        else:  # bytes, records
            con = BytesCon(0 if compact else 4, nullable=nullable, compact=compact)
        _LENGTHED[key] = con
    return con


def _primitive(kind: str, nullable: bool, compact: bool) -> Construct:
    if kind in _FIXED:
        return _FIXED[kind]
    if kind in ("string", "bytes"):
        return _lengthed(kind, nullable, compact)
    if kind == "records":
        return _lengthed("bytes", True, compact)
    raise ValueError(f"unknown field type {kind!r}")


@dataclass(frozen=True)
class _Slot:
    name: str
    con: Construct
    default: Any


class Message(Struct):  # type: ignore[misc]
    """A struct of one message version: regular fields in order, then (flexible) a TAG_BUFFER.

    It is a construct `Struct` (its `subcons` are the regular fields) whose
    parsing and building also handle defaults and tagged fields.
    """

    def __init__(self, regular: list[_Slot], tagged: dict[int, _Slot], flexible: bool) -> None:
        super().__init__(*(s.name / s.con for s in regular))
        self.regular = regular
        self.tagged = dict(sorted(tagged.items()))
        self.flexible = flexible
        # What each tagged field's default encodes to: a value encoding the same is not written.
        self.tagged_defaults = {
            tag: _encode(s.con, s.default, Container(), "") for tag, s in self.tagged.items()
        }

    def _parse(self, stream, context, path):  # type: ignore[no-untyped-def]
        obj = Container()
        for slot in self.regular:
            obj[slot.name] = slot.con._parsereport(stream, context, path)
        if self.flexible:
            for tag, data in TaggedFields._parsereport(stream, context, path).items():
                slot = self.tagged.get(tag)
                if slot is None:
                    continue  # a tag this version does not know: skipped, as Kafka does
                sub = io.BytesIO(data)
                obj[slot.name] = slot.con._parsereport(sub, context, path)
                if sub.tell() != len(data):
                    raise ProtocolError(
                        f"tagged field {slot.name} has {len(data) - sub.tell()} bytes left over"
                    )
            for slot in self.tagged.values():
                if slot.name not in obj:
                    obj[slot.name] = _fresh(slot.default)
        return obj

    def _build(self, obj, stream, context, path):  # type: ignore[no-untyped-def]
        if obj is None:
            obj = {}
        get = obj.get
        for slot in self.regular:
            value = get(slot.name, _MISSING)
            slot.con._build(slot.default if value is _MISSING else value, stream, context, path)
        if self.flexible:
            chunks: dict[int, bytes] = {}
            for tag, slot in self.tagged.items():
                value = get(slot.name, _MISSING)
                if value is _MISSING:
                    continue
                data = _encode(slot.con, value, context, path)
                if data != self.tagged_defaults[tag]:
                    chunks[tag] = data
            TaggedFields._build(chunks, stream, context, path)
        return obj

    def _sizeof(self, context, path):  # type: ignore[no-untyped-def]
        raise SizeofError("variable size")


def _encode(con: Construct, value: Any, context: Any, path: Any) -> bytes:
    out = io.BytesIO()
    con._build(value, out, context, path)
    return out.getvalue()


def _fresh(default: Any) -> Any:
    """A default safe to hand out: containers are copied, not shared."""
    if isinstance(default, list):
        return list(default)
    if isinstance(default, dict):
        return Container(default)
    return default


def _default(f: F, version: int) -> Any:
    nullable = f.nullable_at(version)
    if f.default is not _MISSING:
        if f.default is None and not nullable:
            raise ValueError(f"{f.name}: null default for a non-nullable field")
        return f.default
    if isinstance(f.kind, Arr):
        return []
    if isinstance(f.kind, Obj):
        return {s.name: s.default for s in _slots(f.kind.fields, version, False)[0]}
    return _ZERO[f.kind]


def _construct(f: F, version: int, flexible: bool) -> Construct:
    compact = flexible if f.flexible is None else _within(parse_versions(f.flexible), version)
    nullable = f.nullable_at(version)
    kind = f.kind
    if isinstance(kind, Obj):
        struct = _message(kind.fields, version, flexible)
        return NullableStructCon(struct) if nullable else struct
    if isinstance(kind, Arr):
        element = kind.element
        if isinstance(element, str):
            sub = _primitive(element, False, compact)
        else:
            sub = _message(element, version, flexible)
        return ArrayCon(sub, nullable=nullable, compact=compact)
    return _primitive(kind, nullable, compact)


def _slots(
    fields: tuple[F, ...] | list[F], version: int, flexible: bool
) -> tuple[list[_Slot], dict[int, _Slot]]:
    regular: list[_Slot] = []
    tagged: dict[int, _Slot] = {}
    for f in fields:
        if not f.present(version):
            continue
        slot = _Slot(f.name, _construct(f, version, flexible), _default(f, version))
        if flexible and f.tagged_at(version):
            if f.tag is None:
                raise ValueError(f"{f.name}: tagged without a tag")
            tagged[f.tag] = slot
        else:
            regular.append(slot)
    return regular, tagged


def _message(fields: tuple[F, ...] | list[F], version: int, flexible: bool) -> Message:
    regular, tagged = _slots(fields, version, flexible)
    return Message(regular, tagged, flexible)


def message_versions(fields: list[F], lo: int, hi: int, flexible: str | None) -> dict[int, Message]:
    """{version: Message} for every version in lo..hi; flexible from the `flexible` range on."""
    rng = parse_versions(flexible)
    return {v: _message(fields, v, _within(rng, v)) for v in range(lo, hi + 1)}
