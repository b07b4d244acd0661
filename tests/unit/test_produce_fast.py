"""The Produce fast paths agree with the Produce schema on every input.

protocol.produce_fast (requests) against the schema decoder:

Both decoders see the same bytes: valid encodings (examples and Hypothesis
objects), every truncation of one, single-byte mutations and arbitrary bytes.
Either both raise ProtocolError, or both give equal Containers.
protocol.messages.produce.encode_response_parts (responses) against the
schema encoder: the same bytes, or both raise ProtocolError.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.messages import _decode, decode_request, encode_request, encode_response, encode_response_parts
from protocol.produce_fast import REQUEST_VERSIONS, decode_produce_request
from tests.unit.decoder_support import agree_on_variants, outcome

names = st.text(min_size=0, max_size=8)
records = st.one_of(st.none(), st.binary(max_size=40))
partitions = st.fixed_dictionaries({"index": st.integers(-(2**31), 2**31 - 1), "records": records})
topics = st.fixed_dictionaries({"name": names, "partition_data": st.lists(partitions, max_size=3)})
requests = st.fixed_dictionaries(
    {
        "transactional_id": st.one_of(st.none(), names),
        "acks": st.integers(-1, 1),
        "timeout_ms": st.integers(0, 2**31 - 1),
        "topic_data": st.lists(topics, max_size=3),
    }
)


def _agree(version: int, body: bytes) -> None:
    fast = outcome(decode_produce_request, body)
    slow = outcome(lambda b: _decode("REQUEST", 0, version, b), body)
    assert fast == slow


@pytest.mark.parametrize("version", REQUEST_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(obj=requests, data=st.data())
def test_fast_decoder_agrees_with_schema(version: int, obj: dict[str, Any], data: st.DataObject) -> None:
    body = encode_request(0, version, obj)
    assert decode_request(0, version, body) == _decode("REQUEST", 0, version, body)
    agree_on_variants(lambda b: _agree(version, b), body, data)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=64))
def test_fast_decoder_on_arbitrary_bytes(body: bytes) -> None:
    _agree(3, body)


def test_offset_and_buffer_types() -> None:
    obj = {
        "transactional_id": "tx",
        "acks": 1,
        "timeout_ms": 5,
        "topic_data": [{"name": "t", "partition_data": [{"index": 2, "records": b"RB"}]}],
    }
    body = encode_request(0, 7, obj)
    expected = _decode("REQUEST", 0, 7, body)
    assert decode_produce_request(b"xyz" + body, 3) == expected
    # a writable buffer gives writable record views into it (the broker patches offsets there)
    frame = bytearray(body)
    got = decode_produce_request(memoryview(frame))
    assert got == expected
    view = got.topic_data[0].partition_data[0].records
    assert isinstance(view, memoryview) and not view.readonly and bytes(view) == b"RB"
    view[0:1] = b"X"
    assert frame[-2:] == b"XB"
    # an immutable frame gives read-only views
    view = decode_produce_request(body).topic_data[0].partition_data[0].records
    assert view.readonly and bytes(view) == b"RB"


def test_huge_counts_fail_fast() -> None:
    for body in (
        bytes.fromhex("ffff 0001 00000000 7fffffff") + b"\x00" * 10,  # topic count
        bytes.fromhex("ffff 0001 00000000 00000001 0001 74 7fffffff"),  # partition count
        bytes.fromhex("ffff 0001 00000000 00000001 0001 74 00000001 00000000 7fffffff"),  # records
        bytes.fromhex("ffff 0001 00000000 00000001 0001 74 00000001 00000000 fffffffe"),  # length -2
        bytes.fromhex("7fff"),  # transactional_id length
    ):
        with pytest.raises(ProtocolError):
            decode_produce_request(body)


names_out = st.text(max_size=8)
i64 = st.integers(-(2**63), 2**63 - 1)
responses = st.fixed_dictionaries(
    {
        "responses": st.lists(
            st.fixed_dictionaries(
                {
                    "name": names_out,
                    "partition_responses": st.lists(
                        st.fixed_dictionaries(
                            {
                                "index": st.integers(-(2**31), 2**31 - 1),
                                "error_code": st.integers(-(2**15), 2**15 - 1),
                                "base_offset": i64,
                                "log_append_time_ms": i64,
                                "log_start_offset": i64,
                            }
                        ),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        ),
        "throttle_time_ms": st.integers(0, 2**31 - 1),
    }
)


@pytest.mark.parametrize("version", REQUEST_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(obj=responses)
def test_fast_response_encoder_matches_schema(version: int, obj: dict[str, Any]) -> None:
    assert b"".join(encode_response_parts(0, version, obj)) == encode_response(0, version, obj)


def test_fast_response_encoder_rejects_what_the_schema_rejects() -> None:
    good = {"name": "t", "partition_responses": []}
    for bad in (
        {"responses": [{**good, "name": "x" * 40000}], "throttle_time_ms": 0},
        {"responses": [good], "throttle_time_ms": 2**31},
        {"responses": None, "throttle_time_ms": 0},
    ):
        with pytest.raises(ProtocolError):
            encode_response_parts(0, 7, bad)
        with pytest.raises(ProtocolError):
            encode_response(0, 7, bad)
