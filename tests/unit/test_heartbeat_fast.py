"""protocol.heartbeat_fast agrees with the ConsumerGroupHeartbeat schema (protocol/messages).

Requests: `decode_request` (the fast twin, which passes requests with tagged
fields to the schema) and the schema decoder see the same bytes: valid
encodings, every variant `agree_on_variants` makes of them (trailing bytes,
cut short, one byte replaced) and arbitrary bytes; both raise ProtocolError
or both give equal Containers. Responses: `encode_response_parts` joined is
byte for byte the schema's `encode_response`. The client's side the same way round:
`encode_request` is byte for byte the schema's, and `decode_response` agrees with the
schema's decoder on every variant of valid answers and on arbitrary bytes.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import heartbeat_fast
from protocol.errors import ProtocolError
from protocol.fast_reader import HasTaggedFields
from protocol.messages import (
    _decode,
    _encode,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
)
from tests.unit.decoder_support import agree_on_variants, outcome

i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
names = st.text(max_size=8)
maybe_names = st.one_of(st.none(), names)
uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
owned = st.lists(
    st.fixed_dictionaries({"topic_id": uuids, "partitions": st.lists(i32, max_size=4)}), max_size=3
)


def requests(version: int) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, Any] = {
        "group_id": names,
        "member_id": names,
        "member_epoch": i32,
        "instance_id": maybe_names,
        "rack_id": maybe_names,
        "rebalance_timeout_ms": i32,
        "subscribed_topic_names": st.one_of(st.none(), st.lists(names, max_size=3)),
        "server_assignor": maybe_names,
        "topic_partitions": st.one_of(st.none(), owned),
    }
    if version >= 1:
        fields["subscribed_topic_regex"] = maybe_names
    return st.fixed_dictionaries(fields)


def responses() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "throttle_time_ms": i32,
            "error_code": i16,
            "error_message": maybe_names,
            "member_id": maybe_names,
            "member_epoch": i32,
            "heartbeat_interval_ms": i32,
            "assignment": st.one_of(st.none(), st.fixed_dictionaries({"topic_partitions": owned})),
        }
    )


def _agree(version: int, body: bytes) -> None:
    fast = outcome(lambda b: decode_request(68, version, b), body)
    assert fast == outcome(lambda b: _decode("REQUEST", 68, version, b), body)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_request_decoder_agrees_with_schema(version: int, data: st.DataObject) -> None:
    body = encode_request(68, version, data.draw(requests(version)))
    agree_on_variants(lambda b: _agree(version, b), body, data)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=80))
def test_arbitrary_bytes(version: int, body: bytes) -> None:
    _agree(version, body)


def test_the_fast_decoder_answers_untagged_requests_and_passes_tagged_ones_on() -> None:
    obj = {
        "group_id": "g",
        "member_id": "m",
        "member_epoch": 3,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [{"topic_id": uuid.UUID(int=7), "partitions": [0, 1]}],
    }
    body = encode_request(68, 1, obj)
    assert heartbeat_fast.decode_heartbeat_request(body, 1) == _decode("REQUEST", 68, 1, body)
    tagged = body[:-1] + b"\x01\x05\x01\x00"  # one unknown tagged field: the schema's to name
    with pytest.raises(HasTaggedFields):
        heartbeat_fast.decode_heartbeat_request(tagged, 1)
    assert decode_request(68, 1, tagged) == _decode("REQUEST", 68, 1, tagged)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=80, deadline=None)
@given(obj=responses())
def test_response_encoder_matches_schema(version: int, obj: dict[str, Any]) -> None:
    assert b"".join(encode_response_parts(68, version, obj)) == encode_response(68, version, obj)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_request_encoder_matches_schema(version: int, data: st.DataObject) -> None:
    obj = data.draw(requests(version))
    assert encode_request(68, version, obj) == _encode("REQUEST", 68, version, obj)


def _agree_on_response(version: int, body: bytes) -> None:
    fast = outcome(lambda b: decode_response(68, version, b), body)
    assert fast == outcome(lambda b: _decode("RESPONSE", 68, version, b), body)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_response_decoder_agrees_with_schema(version: int, data: st.DataObject) -> None:
    body = encode_response(68, version, data.draw(responses()))
    agree_on_variants(lambda b: _agree_on_response(version, b), body, data)


@pytest.mark.parametrize("version", heartbeat_fast.VERSIONS)
@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=80))
def test_arbitrary_response_bytes(version: int, body: bytes) -> None:
    _agree_on_response(version, body)


def test_a_response_with_tagged_fields_goes_to_the_schema() -> None:
    obj = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "member_id": "m",
        "member_epoch": 4,
        "heartbeat_interval_ms": 5000,
        "assignment": None,
    }
    body = encode_response(68, 1, obj)
    tagged = body[:-1] + b"\x01\x05\x01\x00"
    with pytest.raises(HasTaggedFields):
        heartbeat_fast.decode_heartbeat_response(tagged, 1)
    assert decode_response(68, 1, tagged) == _decode("RESPONSE", 68, 1, tagged)


@pytest.mark.parametrize(
    "obj",
    [{}, {"group_id": "g", "member_epoch": 3}, {"member_id": "m", "topic_partitions": []}],
)
def test_missing_request_fields_are_written_as_their_defaults(obj: dict[str, Any]) -> None:
    for version in heartbeat_fast.VERSIONS:
        assert encode_request(68, version, obj) == _encode("REQUEST", 68, version, obj)


def test_a_request_that_cannot_be_encoded_is_a_protocol_error() -> None:
    obj = {"group_id": None, "member_id": "m", "member_epoch": 2**40}
    with pytest.raises(ProtocolError):
        encode_request(68, 1, obj)
