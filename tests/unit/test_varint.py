"""Zigzag varints/varlongs (records) and unsigned varints (flexible protocol)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    UINT32_MAX,
    decode_uvarint,
    decode_varint,
    decode_varlong,
    encode_uvarint,
    encode_varint,
    encode_varlong,
)

ZIGZAG_VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (300, "d804"),
    (-300, "d704"),
]


@pytest.mark.parametrize(("value", "hexed"), ZIGZAG_VECTORS)
def test_zigzag_vectors(value: int, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert encode_varint(value) == raw
    assert encode_varlong(value) == raw
    assert decode_varint(raw, 0) == (value, len(raw))
    assert decode_varlong(raw, 0) == (value, len(raw))


@pytest.mark.parametrize(
    ("value", "hexed"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (UINT32_MAX, "ffffffff0f")],
)
def test_uvarint_vectors(value: int, hexed: str) -> None:
    raw = bytes.fromhex(hexed)
    assert encode_uvarint(value) == raw
    assert decode_uvarint(raw, 0) == (value, len(raw))


def test_extremes_use_the_maximum_length() -> None:
    assert encode_varint(INT32_MIN) == bytes.fromhex("ffffffff0f")
    assert encode_varint(INT32_MAX) == bytes.fromhex("feffffff0f")
    assert len(encode_varlong(INT64_MIN)) == 10
    assert decode_varlong(encode_varlong(INT64_MIN)) == (INT64_MIN, 10)
    assert decode_varlong(encode_varlong(INT64_MAX)) == (INT64_MAX, 10)


def test_decode_at_position_in_any_buffer_type() -> None:
    raw = b"\xaa\xbb" + encode_varint(-300) + encode_varlong(1 << 40) + encode_uvarint(1000)
    for buf in (raw, bytearray(raw), memoryview(raw)):
        value, pos = decode_varint(buf, 2)
        assert value == -300
        value, pos = decode_varlong(buf, pos)
        assert value == 1 << 40
        assert decode_uvarint(buf, pos) == (1000, len(raw))


@pytest.mark.parametrize(
    ("decoder", "too_long"),
    [
        (decode_varint, b"\x80" * 5 + b"\x00"),
        (decode_uvarint, b"\xff" * 5 + b"\x01"),
        (decode_varlong, b"\x80" * 10 + b"\x00"),
    ],
)
def test_too_long_raises(decoder, too_long: bytes) -> None:
    with pytest.raises(ProtocolError, match="longer"):
        decoder(too_long, 0)


@pytest.mark.parametrize("decoder", [decode_varint, decode_varlong, decode_uvarint])
@pytest.mark.parametrize(("raw", "pos"), [(b"", 0), (b"\x80", 0), (b"\xff\xff", 0), (b"\x01\x80", 1)])
def test_truncated_raises(decoder, raw: bytes, pos: int) -> None:
    with pytest.raises(ProtocolError, match="truncated"):
        decoder(raw, pos)


def test_reading_past_the_end_raises() -> None:
    with pytest.raises(ProtocolError):
        decode_varint(b"\x00", 1)


@pytest.mark.parametrize(
    ("encoder", "value"),
    [
        (encode_varint, INT32_MAX + 1),
        (encode_varint, INT32_MIN - 1),
        (encode_varlong, INT64_MAX + 1),
        (encode_varlong, INT64_MIN - 1),
        (encode_uvarint, -1),
        (encode_uvarint, UINT32_MAX + 1),
    ],
)
def test_encode_out_of_range_is_a_value_error(encoder, value: int) -> None:
    with pytest.raises(ValueError):
        encoder(value)


@given(st.integers(INT32_MIN, INT32_MAX))
def test_varint_roundtrip(value: int) -> None:
    raw = encode_varint(value)
    assert len(raw) <= 5
    assert decode_varint(raw + b"\xff", 0) == (value, len(raw))


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_roundtrip(value: int) -> None:
    raw = encode_varlong(value)
    assert len(raw) <= 10
    assert decode_varlong(raw, 0) == (value, len(raw))


@given(st.integers(0, UINT32_MAX))
def test_uvarint_roundtrip(value: int) -> None:
    raw = encode_uvarint(value)
    assert decode_uvarint(raw, 0) == (value, len(raw))


@settings(max_examples=300)
@given(st.binary(max_size=12), st.integers(0, 12))
def test_random_bytes_only_raise_protocol_error(raw: bytes, pos: int) -> None:
    for decoder, low, high in (
        (decode_varint, INT32_MIN, INT32_MAX),
        (decode_varlong, INT64_MIN, INT64_MAX),
        (decode_uvarint, 0, UINT32_MAX),
    ):
        try:
            value, new_pos = decoder(raw, pos)
        except ProtocolError:
            continue
        assert low <= value <= high
        assert pos < new_pos <= len(raw)
