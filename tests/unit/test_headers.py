"""Request/response headers (protocol/headers.py).

Request header v1: api_key INT16, api_version INT16, correlation_id INT32,
client_id NULLABLE_STRING. v2 (ApiVersions v3+ only, including versions we do
not know) adds a TAG_BUFFER; client_id keeps its INT16 length. Malformed input
raises ProtocolError and nothing else.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.headers import (
    encode_request_header,
    frame_response,
    parse_request_header,
    uses_flexible_header,
)


def test_v1_header_fields_and_size() -> None:
    frame = bytes.fromhex("0003 0005 0000002a 0003") + b"cli" + b"BODY"
    h = parse_request_header(frame)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 5, 42, "cli")
    assert h.size == 13
    assert frame[h.size :] == b"BODY"


def test_v1_null_and_empty_client_id() -> None:
    assert parse_request_header(bytes.fromhex("0000 0003 00000001 ffff")).client_id is None
    h = parse_request_header(bytes.fromhex("0000 0003 00000001 0000"))
    assert h.client_id == ""
    assert h.size == 10


def test_v1_utf8_client_id() -> None:
    cid = "prodücer-✓"
    frame = encode_request_header(0, 7, -5, cid)
    h = parse_request_header(frame)
    assert h.client_id == cid
    assert h.correlation_id == -5
    assert h.size == len(frame)


def test_v1_does_not_read_a_tag_buffer() -> None:
    # ApiVersions v2: header v1, so the 0x00 after client_id belongs to the body.
    frame = bytes.fromhex("0012 0002 00000001 0001") + b"c" + b"\x00"
    assert parse_request_header(frame).size == 11


def test_v2_header_for_api_versions_v3() -> None:
    frame = bytes.fromhex("0012 0003 00000007 0002") + b"kp" + b"\x00" + b"BODY"
    h = parse_request_header(frame)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (18, 3, 7, "kp")
    assert h.size == 13
    assert frame[h.size :] == b"BODY"


def test_v2_header_skips_tagged_fields() -> None:
    tags = b"\x02\x00\x02ab\x07\x00"
    frame = bytes.fromhex("0012 0003 00000001 ffff") + tags + b"BODY"
    h = parse_request_header(frame)
    assert h.client_id is None
    assert frame[h.size :] == b"BODY"


def test_unknown_api_versions_version_still_uses_v2_header() -> None:
    # kafka-python sends ApiVersions v4 first; we must parse its header to answer error 35.
    frame = bytes.fromhex("0012 0004 00000001 0000") + b"\x00"
    assert parse_request_header(frame).size == 11
    assert uses_flexible_header(18, 4)
    assert not uses_flexible_header(18, 2)
    assert uses_flexible_header(1, 12)
    assert not uses_flexible_header(1, 11)


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        bytes.fromhex("0000 0003 0000"),  # cut inside correlation_id
        bytes.fromhex("0000 0003 00000001 00"),  # cut inside the client_id length
        bytes.fromhex("0000 0003 00000001 0005") + b"abc",  # client_id beyond the frame
        bytes.fromhex("0000 0003 00000001 7fff"),  # huge client_id length
        bytes.fromhex("0000 0003 00000001 fffe"),  # length -2
        bytes.fromhex("0000 0003 00000001 8000"),  # length -32768
        bytes.fromhex("0000 0003 00000001 0002") + b"\xc3\x28",  # invalid UTF-8
        bytes.fromhex("0000 0003 00000001 0001") + b"\xff",  # invalid UTF-8
        bytes.fromhex("0012 0003 00000001 0000"),  # v2 header without its tag buffer
        bytes.fromhex("0012 0003 00000001 0000") + b"\x01\x00\x05ab",  # tag beyond the frame
        bytes.fromhex("0012 0003 00000001 0000") + b"\xff\xff\xff\xff\xff\x01",  # 6-byte varint
    ],
)
def test_malformed_headers_raise_protocol_error(frame: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_request_header(frame)


def test_memoryview_frame() -> None:
    frame = encode_request_header(18, 3, 9, "c") + b"rest"
    h = parse_request_header(memoryview(frame))
    assert (h.api_version, h.client_id, h.size) == (3, "c", len(frame) - 4)


@pytest.mark.parametrize(("key", "version"), [(0, 7), (18, 0), (18, 3), (18, 4)])
@pytest.mark.parametrize("client_id", [None, "", "x", "é" * 10])
def test_encode_parse_round_trip(key: int, version: int, client_id: str | None) -> None:
    frame = encode_request_header(key, version, 123456, client_id)
    h = parse_request_header(frame)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id, h.size) == (
        key,
        version,
        123456,
        client_id,
        len(frame),
    )
    cid_len = 0 if client_id is None else len(client_id.encode())
    tag_buffer = 1 if key == 18 and version >= 3 else 0
    assert len(frame) == 10 + cid_len + tag_buffer


def test_frame_response_is_size_header_v0_body() -> None:
    assert frame_response(7, b"abc") == bytes.fromhex("00000007 00000007") + b"abc"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_parse_or_raise_protocol_error(frame: bytes) -> None:
    try:
        h = parse_request_header(frame)
    except ProtocolError:
        return
    assert 10 <= h.size <= len(frame)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([(0, 3), (18, 2), (18, 3), (18, 4)]),
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.none() | st.text(max_size=20),
)
def test_round_trip_property(kv: tuple[int, int], correlation_id: int, client_id: str | None) -> None:
    frame = encode_request_header(kv[0], kv[1], correlation_id, client_id)
    h = parse_request_header(frame + b"body")
    assert (h.correlation_id, h.client_id, h.size) == (correlation_id, client_id, len(frame))
