"""Bounded wire primitives (protocol/primitives.py).

Contract: every length, count and varint is checked against the bytes left
before anything is read or allocated, and every malformed input raises
ProtocolError (not construct's errors, not UnicodeDecodeError, never a hang).
"""

from __future__ import annotations

import contextlib
import io
import time
from typing import Any

import pytest
from construct import Construct, Struct
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.primitives import (
    Array,
    Bool,
    Bytes,
    CompactArray,
    CompactNullableString,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    NullableBytes,
    NullableString,
    Records,
    String,
    TaggedFields,
    UVarInt,
    read_uvarint,
    write_uvarint,
)


def parse(con: Construct, data: bytes) -> Any:
    return con.parse_stream(io.BytesIO(data))


# --- fixed-width integers and bool -------------------------------------------


@pytest.mark.parametrize(
    ("con", "value", "wire"),
    [
        (Int8, -1, "ff"),
        (Int16, -2, "fffe"),
        (Int32, 0x01020304, "01020304"),
        (Int32, -(1 << 31), "80000000"),
        (Int64, (1 << 63) - 1, "7fffffffffffffff"),
        (Bool, True, "01"),
        (Bool, False, "00"),
    ],
)
def test_fixed_width_big_endian(con: Construct, value: Any, wire: str) -> None:
    assert con.build(value) == bytes.fromhex(wire)
    assert con.parse(bytes.fromhex(wire)) == value


def test_bool_nonzero_is_true() -> None:
    assert parse(Bool, b"\x02") is True


# --- strings -------------------------------------------------------------------


def test_string_round_trip_utf8() -> None:
    data = String.build("héllo")
    assert data == b"\x00\x06h\xc3\xa9llo"
    assert parse(String, data) == "héllo"
    assert parse(String, b"\x00\x00") == ""


def test_nullable_string_null_vs_empty() -> None:
    assert NullableString.build(None) == b"\xff\xff"
    assert parse(NullableString, b"\xff\xff") is None
    assert parse(NullableString, b"\x00\x00") == ""


@pytest.mark.parametrize("con", [String, NullableString])
@pytest.mark.parametrize(
    "wire",
    [
        b"",  # no length at all
        b"\x00",  # half a length
        b"\x00\x05abc",  # length beyond the input
        b"\x7f\xff" + b"a" * 10,  # huge length, little input
        b"\xff\xfe",  # -2
        b"\x80\x00",  # -32768
        b"\x00\x02\xc3\x28",  # invalid UTF-8
        b"\x00\x01\xff",  # invalid UTF-8 byte
        b"\x00\x03\xed\xa0\x80",  # UTF-8-encoded surrogate
    ],
)
def test_bad_strings_raise_protocol_error(con: Construct, wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(con, wire)


def test_non_nullable_string_rejects_null_both_ways() -> None:
    with pytest.raises(ProtocolError):
        parse(String, b"\xff\xff")
    with pytest.raises(ProtocolError):
        String.build(None)


def test_string_longer_than_int16_cannot_be_built() -> None:
    with pytest.raises(ProtocolError):
        String.build("x" * 0x8000)
    assert len(String.build("x" * 0x7FFF)) == 2 + 0x7FFF


# --- bytes ---------------------------------------------------------------------


def test_bytes_round_trip() -> None:
    assert Bytes.build(b"ab") == b"\x00\x00\x00\x02ab"
    assert parse(Bytes, b"\x00\x00\x00\x00") == b""
    assert parse(NullableBytes, b"\xff\xff\xff\xff") is None
    assert Records is NullableBytes


@pytest.mark.parametrize("con", [Bytes, NullableBytes])
@pytest.mark.parametrize(
    "wire",
    [
        b"\x00\x00\x00",
        b"\x00\x00\x00\x03ab",
        b"\x7f\xff\xff\xff" + b"\x00" * 10,
        b"\xff\xff\xff\xfe",
        b"\x80\x00\x00\x00",
    ],
)
def test_bad_bytes_raise_protocol_error(con: Construct, wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(con, wire)


def test_non_nullable_bytes_rejects_null_both_ways() -> None:
    with pytest.raises(ProtocolError):
        parse(Bytes, b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError):
        Bytes.build(None)


# --- arrays --------------------------------------------------------------------


def test_array_round_trip_and_null() -> None:
    assert Array(Int32).build([1, -1]) == bytes.fromhex("00000002 00000001 ffffffff")
    assert parse(Array(String), bytes.fromhex("00000001 0001 61")) == ["a"]
    assert parse(Array(Int32), b"\x00\x00\x00\x00") == []
    assert parse(Array(Int32, nullable=True), b"\xff\xff\xff\xff") is None
    assert Array(Int32, nullable=True).build(None) == b"\xff\xff\xff\xff"


@pytest.mark.parametrize(
    "element", [Int8, Int64, String, Bytes, Struct("a" / Int32, "b" / String), Array(Int32)]
)
def test_huge_array_count_with_ten_bytes_left_fails_fast(element: Construct) -> None:
    wire = b"\x7f\xff\xff\xff" + b"\x00" * 10
    start = time.perf_counter()
    with pytest.raises(ProtocolError):
        parse(Array(element), wire)
    assert time.perf_counter() - start < 0.1


def test_fixed_size_elements_checked_against_their_size() -> None:
    # Two INT64s need 16 bytes; 15 are left.
    with pytest.raises(ProtocolError):
        parse(Array(Int64), b"\x00\x00\x00\x02" + b"\x00" * 15)
    assert parse(Array(Int64), b"\x00\x00\x00\x02" + b"\x00" * 16) == [0, 0]


@pytest.mark.parametrize("nullable", [False, True])
@pytest.mark.parametrize("count", [b"\xff\xff\xff\xfe", b"\x80\x00\x00\x00"])
def test_negative_array_count_is_an_error(nullable: bool, count: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(Array(Int32, nullable=nullable), count)


def test_non_nullable_array_rejects_null_both_ways() -> None:
    with pytest.raises(ProtocolError):
        parse(Array(Int32), b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError):
        Array(Int32).build(None)


def test_truncated_array_count() -> None:
    with pytest.raises(ProtocolError):
        parse(Array(Int32), b"\x00\x00")


# --- unsigned varints ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16384, "808001"),
        (0xFFFFFFFF, "ffffffff0f"),
    ],
)
def test_uvarint_vectors(value: int, wire: str) -> None:
    out = io.BytesIO()
    write_uvarint(out, value)
    assert out.getvalue() == bytes.fromhex(wire)
    assert read_uvarint(io.BytesIO(bytes.fromhex(wire))) == value
    assert parse(UVarInt, bytes.fromhex(wire)) == value


@pytest.mark.parametrize(
    "wire",
    [
        "",  # nothing
        "80",  # continuation, then end of input
        "ffffffff",  # four continuation bytes, then end of input
        "ffffffffff01",  # six bytes
        "808080808000",  # six bytes, value 0
        "ffffffff1f",  # five bytes, but more than 32 bits
        "ffffffff7f",
    ],
)
def test_bad_uvarints(wire: str) -> None:
    with pytest.raises(ProtocolError):
        read_uvarint(io.BytesIO(bytes.fromhex(wire)))


@pytest.mark.parametrize("value", [-1, 1 << 32])
def test_uvarint_out_of_range_cannot_be_written(value: int) -> None:
    with pytest.raises(ProtocolError):
        write_uvarint(io.BytesIO(), value)


# --- compact (flexible-version) forms ------------------------------------------------


def test_compact_string_lengths_are_len_plus_one() -> None:
    assert CompactString.build("abc") == b"\x04abc"
    assert CompactString.build("") == b"\x01"
    assert CompactNullableString.build(None) == b"\x00"
    assert parse(CompactNullableString, b"\x00") is None
    assert parse(CompactString, b"\x04abc") == "abc"


@pytest.mark.parametrize("wire", [b"\x00", b"\x05abc", b"\xff\xff\xff\xff\x0f", b"\x03\xc3\x28"])
def test_bad_compact_strings(wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(CompactString, wire)


def test_compact_array() -> None:
    con = CompactArray(Int16, nullable=True)
    assert con.build([1, 2]) == b"\x03\x00\x01\x00\x02"
    assert con.build(None) == b"\x00"
    assert parse(con, b"\x00") is None
    with pytest.raises(ProtocolError):
        parse(CompactArray(Int16), b"\x00")
    with pytest.raises(ProtocolError):
        parse(con, b"\xff\xff\xff\xff\x07" + b"\x00" * 10)


# --- tagged fields ---------------------------------------------------------------------


def test_tagged_fields_round_trip() -> None:
    assert TaggedFields.build({}) == b"\x00"
    assert TaggedFields.build(None) == b"\x00"
    assert parse(TaggedFields, b"\x00") == {}
    wire = b"\x02\x00\x01a\x05\x00"
    assert parse(TaggedFields, wire) == {0: b"a", 5: b""}
    assert TaggedFields.build({5: b"", 0: b"a"}) == wire  # written in tag order


@pytest.mark.parametrize(
    "wire",
    [
        b"",  # no count
        b"\x01",  # count 1, no tag
        b"\x01\x00",  # tag, no size
        b"\x01\x00\x05ab",  # size beyond the input
        b"\xff\xff\xff\xff\x0f",  # huge count
        b"\x7f" + b"\x00" * 10,  # count beyond the bytes left
        b"\x01\x00\xff\xff\xff\xff\x0f",  # huge size
        b"\x02\x05\x00\x00\x00",  # tags out of order: 5, then 0
        b"\x02\x03\x00\x03\x00",  # tag 3 twice
    ],
)
def test_bad_tagged_fields(wire: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(TaggedFields, wire)


# --- property: arbitrary input only ever raises ProtocolError ------------------------------

_BOUNDED = [
    String,
    NullableString,
    CompactString,
    CompactNullableString,
    Bytes,
    NullableBytes,
    Array(Int32),
    Array(String, nullable=True),
    Array(Array(Bytes)),
    CompactArray(CompactString, nullable=True),
    TaggedFields,
    UVarInt,
]


@settings(max_examples=300, deadline=None)
@given(index=st.integers(0, len(_BOUNDED) - 1), data=st.binary(max_size=40))
def test_arbitrary_bytes_parse_or_raise_protocol_error(index: int, data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        parse(_BOUNDED[index], data)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=5))
def test_nullable_string_array_round_trip(values: list[str | None]) -> None:
    con = Array(NullableString)
    assert parse(con, con.build(values)) == values
