"""Example messages derived from the schemas, for round-trip tests, fuzzers and benchmarks.

`shape(con)` walks a construct tree built from `protocol.primitives` and
`protocol.schema` and returns a small description of it (`Scalar`, `Seq`,
`Record`), so tests can derive values or Hypothesis strategies without knowing
construct internals. `example(con, variant)` builds an object that `con.build`
accepts and that decodes back to an equal object, for one of `VARIANTS`:

- "full": every nullable field set, every array two elements long, integers
  spread over the whole range of their width (negative ones included), strings
  non-ASCII, tagged-field buffers non-empty. Leaves get distinct values, so a
  decoder that swaps two fields of the same type is caught.
- "null": every nullable string, bytes and array null; other arrays one element.
- "empty": every array, string and bytes empty (not null); integers 0, bools false.

`all_schemas()` lists every (api_key, version, "request"/"response", Struct) in
`protocol.messages.MODULES`.

Only `error_response` (answers to failed requests) uses this outside tests.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from construct import Construct, Flag, FormatField, Renamed, Struct

from protocol.primitives import ArrayCon, BytesCon, StringCon, TaggedFieldsCon, UVarIntCon
from protocol.schema import Message, NullableStructCon, UuidCon

__all__ = [
    "Scalar",
    "Seq",
    "Record",
    "Node",
    "Variant",
    "VARIANTS",
    "shape",
    "example",
    "all_schemas",
]

Variant = Literal["full", "null", "empty"]
VARIANTS: tuple[Variant, ...] = ("full", "null", "empty")


@dataclass(frozen=True)
class Scalar:
    """A leaf. kind: "int" (signed, `bits` wide), "uint" (unsigned, `bits` wide), "uuid",
    "float" (float64), "bool", "string", "bytes" or "tags" (a TAG_BUFFER as {tag: bytes}).
    `compact`: a string/bytes length is an UNSIGNED_VARINT(len + 1)."""

    kind: str
    bits: int = 0
    nullable: bool = False
    compact: bool = False


@dataclass(frozen=True)
class Seq:
    """An ARRAY (COMPACT_ARRAY if `compact`) of `element`; null allowed if `nullable`."""

    element: Node
    nullable: bool = False
    compact: bool = False


@dataclass(frozen=True)
class Record:
    """A Struct: named fields in wire order (a Message's tagged fields last, by tag); a nullable one
    (INT8 -1 for null, 1 before the fields) if `nullable`."""

    fields: tuple[tuple[str, Node], ...]
    nullable: bool = False


Node = Scalar | Seq | Record


def shape(con: Construct, tagged: bool = True) -> Node:
    """Describe a construct built from our primitives; TypeError for anything else.

    With ``tagged=False`` a Message's tagged fields are left out.
    """
    if isinstance(con, Message):
        named = [(slot.name, shape(slot.con, tagged)) for slot in con.regular]
        if tagged:
            named += [(slot.name, shape(slot.con, tagged)) for _, slot in sorted(con.tagged.items())]
        return Record(tuple(named))
    if isinstance(con, Struct):
        fields = []
        for sub in con.subcons:
            if not isinstance(sub, Renamed) or not sub.name:
                raise TypeError(f"unnamed field in {con!r}")
            fields.append((sub.name, shape(sub.subcon, tagged)))
        return Record(tuple(fields))
    if isinstance(con, NullableStructCon):
        inner = shape(con.subcon, tagged)
        assert isinstance(inner, Record)
        return Record(inner.fields, nullable=True)
    if isinstance(con, Renamed):
        return shape(con.subcon, tagged)
    if isinstance(con, ArrayCon):
        return Seq(shape(con.subcon, tagged), con.nullable, con.compact)
    if isinstance(con, StringCon):
        return Scalar("string", nullable=con.nullable, compact=con.compact)
    if isinstance(con, BytesCon):
        return Scalar("bytes", nullable=con.nullable, compact=con.compact)
    if isinstance(con, TaggedFieldsCon):
        return Scalar("tags")
    if isinstance(con, UVarIntCon):
        return Scalar("uint", bits=32)
    if isinstance(con, UuidCon):
        return Scalar("uuid")
    if isinstance(con, FormatField) and con.fmtstr in (">H", ">I"):
        return Scalar("uint", bits=8 * struct.calcsize(con.fmtstr))
    if isinstance(con, FormatField) and con.fmtstr == ">d":
        return Scalar("float")
    if isinstance(con, type(Flag)):  # construct exports Flag as an instance
        return Scalar("bool")
    if isinstance(con, FormatField) and con.fmtstr in (">b", ">h", ">i", ">l", ">q"):
        return Scalar("int", bits=8 * struct.calcsize(con.fmtstr))
    raise TypeError(f"no shape for construct {con!r}")


class _Values:
    """Deterministic, distinct leaf values: the n-th leaf gets the n-th value."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


def _leaf(node: Scalar, name: str, variant: Variant, values: _Values) -> Any:
    n = values.next()
    if node.nullable and variant == "null":
        return None
    empty = variant == "empty"
    if node.kind == "int":
        if empty:
            return 0
        lo, span = -(1 << (node.bits - 1)), 1 << node.bits
        # Golden-ratio stride: spreads leaves over the full range, sign bit included.
        return lo + (n * 0x9E3779B97F4A7C15) % span
    if node.kind == "uint":
        return 0 if empty else (n * 0x9E3779B1) % (1 << node.bits)
    if node.kind == "uuid":
        return uuid.UUID(int=0) if empty else uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % (1 << 128))
    if node.kind == "float":
        return 0.0 if empty else n * -1.5
    if node.kind == "bool":
        return False if empty else n % 2 == 1
    if node.kind == "string":
        return "" if empty else f"{name}-{n}-é✓"
    if node.kind == "bytes":
        return b"" if empty else bytes([n % 256, 0, 0xFF]) + name.encode()
    if node.kind == "tags":
        return {} if empty else {0: b"", 3: bytes([n % 256])}
    raise TypeError(f"unknown scalar kind {node.kind}")


def _example(node: Node, name: str, variant: Variant, values: _Values) -> Any:
    if isinstance(node, Record):
        if variant == "null" and node.nullable:
            values.next()
            return None
        return {fname: _example(fnode, fname, variant, values) for fname, fnode in node.fields}
    if isinstance(node, Seq):
        if variant == "null" and node.nullable:
            values.next()
            return None
        count = {"full": 2, "null": 1, "empty": 0}[variant]
        return [_example(node.element, name, variant, values) for _ in range(count)]
    return _leaf(node, name, variant, values)


def example(con: Construct | Node, variant: Variant = "full", tagged: bool = True) -> Any:
    """An object `con.build` accepts, shaped by `variant` (see the module docstring).

    With ``tagged=False`` tagged fields are left out (they are built as their defaults).
    """
    node = con if isinstance(con, Scalar | Seq | Record) else shape(con, tagged)
    return _example(node, "", variant, _Values())


def all_schemas() -> Iterator[tuple[int, int, str, Struct]]:
    """(api_key, version, "request" | "response", Struct) for every registered schema."""
    from protocol.messages import MODULES

    for api_key, module in sorted(MODULES.items()):
        for version, schema in sorted(module.REQUEST.items()):
            yield api_key, version, "request", schema
        for version, schema in sorted(module.RESPONSE.items()):
            yield api_key, version, "response", schema
