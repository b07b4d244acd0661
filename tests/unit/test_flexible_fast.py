"""protocol.flexible_fast agrees with the Produce and Fetch schemas of the flexible versions.

Requests: `decode_request` (the fast twin, falling back to the schema when a
request carries tagged fields) and the schema decoder see the same bytes:
valid encodings, with and without tagged fields, every truncation, one-byte
mutations and arbitrary bytes. Either both raise ProtocolError or both give
equal Containers. Responses: `encode_response_parts` joined is byte for byte
the schema's `encode_response`, errors' extras and tagged fields included.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import flexible_fast
from protocol.fast_reader import HasTaggedFields
from protocol.messages import _decode, decode_request, encode_request, encode_response, encode_response_parts
from tests.unit.decoder_support import agree_on_variants, outcome

i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=8)
uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
records = st.one_of(st.none(), st.binary(max_size=40))


def produce_requests(version: int) -> st.SearchStrategy[dict[str, Any]]:
    partition = st.fixed_dictionaries({"index": i32, "records": records})
    name = {"topic_id": uuids} if version >= 13 else {"name": names}
    topic = st.fixed_dictionaries({**name, "partition_data": st.lists(partition, max_size=3)})
    return st.fixed_dictionaries(
        {
            "transactional_id": st.one_of(st.none(), names),
            "acks": i16,
            "timeout_ms": i32,
            "topic_data": st.lists(topic, max_size=3),
        }
    )


def fetch_requests(version: int) -> st.SearchStrategy[dict[str, Any]]:
    name = {"topic_id": uuids} if version >= 13 else {"topic": names}
    partition = {
        "partition": i32,
        "current_leader_epoch": i32,
        "fetch_offset": i64,
        "last_fetched_epoch": i32,
        "log_start_offset": i64,
        "partition_max_bytes": i32,
    }
    if version >= 17:  # a tagged field: present in some requests only
        partition["replica_directory_id"] = st.one_of(st.just(uuid.UUID(int=0)), uuids)
    if version >= 18:  # tagged too (KIP-1166): absent unless a KRaft replica fetches
        partition["high_watermark"] = st.one_of(st.just(2**63 - 1), i64)
    topic = st.fixed_dictionaries(
        {**name, "partitions": st.lists(st.fixed_dictionaries(partition), max_size=3)}
    )
    forgotten = st.fixed_dictionaries({**name, "partitions": st.lists(i32, max_size=3)})
    fields: dict[str, Any] = {
        "max_wait_ms": i32,
        "min_bytes": i32,
        "max_bytes": i32,
        "isolation_level": st.integers(0, 1),
        "session_id": i32,
        "session_epoch": i32,
        "topics": st.lists(topic, max_size=3),
        "forgotten_topics_data": st.lists(forgotten, max_size=2),
        "rack_id": names,
        "cluster_id": st.one_of(st.none(), st.none(), names),  # tagged
    }
    if version >= 15:
        fields["replica_state"] = st.one_of(
            st.just({"replica_id": -1, "replica_epoch": -1}),
            st.fixed_dictionaries({"replica_id": i32, "replica_epoch": i64}),
        )
    else:
        fields["replica_id"] = i32
    return st.fixed_dictionaries(fields)


def _agree(api_key: int, version: int, body: bytes) -> None:
    fast = outcome(lambda b: decode_request(api_key, version, b), body)
    assert fast == outcome(lambda b: _decode("REQUEST", api_key, version, b), body)


def _variants(api_key: int, version: int, body: bytes, data: st.DataObject) -> None:
    agree_on_variants(lambda b: _agree(api_key, version, b), body, data)


@pytest.mark.parametrize("version", flexible_fast.PRODUCE_REQUEST_VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_produce_request_decoder_agrees_with_schema(version: int, data: st.DataObject) -> None:
    _variants(0, version, encode_request(0, version, data.draw(produce_requests(version))), data)


@pytest.mark.parametrize("version", flexible_fast.FETCH_VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fetch_request_decoder_agrees_with_schema(version: int, data: st.DataObject) -> None:
    obj = data.draw(fetch_requests(version))
    _variants(1, version, encode_request(1, version, obj), data)


@pytest.mark.parametrize(
    ("api_key", "version"), [(0, 9), (0, 11), (0, 13), (1, 12), (1, 13), (1, 15), (1, 17), (1, 18)]
)
@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=80))
def test_arbitrary_bytes(api_key: int, version: int, body: bytes) -> None:
    _agree(api_key, version, body)


def test_the_fast_decoders_answer_untagged_requests_and_pass_tagged_ones_on() -> None:
    """Not a fallback every time: the fast decoder itself answers requests without tags."""
    plain = {"max_wait_ms": 1, "min_bytes": 1, "topics": [], "forgotten_topics_data": []}
    body = encode_request(1, 12, plain)
    assert flexible_fast.decode_fetch_request(body, 12) == _decode("REQUEST", 1, 12, body)
    tagged = encode_request(1, 12, {**plain, "cluster_id": "abc"})
    with pytest.raises(HasTaggedFields):
        flexible_fast.decode_fetch_request(tagged, 12)
    assert decode_request(1, 12, tagged).cluster_id == "abc"


def test_produce_records_are_writable_views_into_the_frame() -> None:
    body = encode_request(
        0,
        11,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 1,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"RB"}]}],
        },
    )
    frame = bytearray(b"hdr" + body)
    got = decode_request(0, 11, frame, 3)
    view = got.topic_data[0].partition_data[0].records
    assert isinstance(view, memoryview) and not view.readonly
    view[0:1] = b"X"
    assert frame.endswith(b"XB\x00\x00\x00")  # records, then the tag buffers of partition, topic, request


# -- responses ------------------------------------------------------------------------------------

leader = st.fixed_dictionaries({"leader_id": i32, "leader_epoch": i32})
endpoints = st.lists(
    st.fixed_dictionaries({"node_id": i32, "host": names, "port": i32, "rack": st.one_of(st.none(), names)}),
    max_size=2,
)


def produce_responses(version: int) -> st.SearchStrategy[dict[str, Any]]:
    partition = {
        "index": i32,
        "error_code": i16,
        "base_offset": i64,
        "log_append_time_ms": i64,
        "log_start_offset": i64,
    }
    optional = {
        "record_errors": st.lists(
            st.fixed_dictionaries(
                {"batch_index": i32, "batch_index_error_message": st.one_of(st.none(), names)}
            ),
            max_size=2,
        ),
        "error_message": st.one_of(st.none(), names),
    }
    if version >= 10:
        optional["current_leader"] = leader
    name = {"topic_id": uuids} if version >= 13 else {"name": names}
    topic = st.fixed_dictionaries(
        {
            **name,
            "partition_responses": st.lists(st.fixed_dictionaries(partition, optional=optional), max_size=3),
        }
    )
    top = {"node_endpoints": endpoints} if version >= 10 else {}
    return st.fixed_dictionaries(
        {"responses": st.lists(topic, max_size=3), "throttle_time_ms": i32}, optional=top
    )


def fetch_responses(version: int) -> st.SearchStrategy[dict[str, Any]]:
    name = {"topic_id": uuids} if version >= 13 else {"topic": names}
    partition = {
        "partition_index": i32,
        "error_code": i16,
        "high_watermark": i64,
        "last_stable_offset": i64,
        "log_start_offset": i64,
        "aborted_transactions": st.one_of(
            st.none(), st.lists(st.fixed_dictionaries({"producer_id": i64, "first_offset": i64}), max_size=2)
        ),
        "preferred_read_replica": i32,
        "records": st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=4097, max_size=5000)),
    }
    optional = {
        "diverging_epoch": st.fixed_dictionaries({"epoch": i32, "end_offset": i64}),
        "current_leader": leader,
        "snapshot_id": st.fixed_dictionaries({"end_offset": i64, "epoch": i32}),
    }
    topic = st.fixed_dictionaries(
        {**name, "partitions": st.lists(st.fixed_dictionaries(partition, optional=optional), max_size=3)}
    )
    top = {"node_endpoints": endpoints} if version >= 16 else {}
    return st.fixed_dictionaries(
        {
            "throttle_time_ms": i32,
            "error_code": i16,
            "session_id": i32,
            "responses": st.lists(topic, max_size=3),
        },
        optional=top,
    )


@pytest.mark.parametrize("version", flexible_fast.PRODUCE_RESPONSE_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_produce_response_encoder_matches_schema(version: int, data: st.DataObject) -> None:
    obj = data.draw(produce_responses(version))
    assert b"".join(encode_response_parts(0, version, obj)) == encode_response(0, version, obj)


@pytest.mark.parametrize("version", flexible_fast.FETCH_VERSIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fetch_response_encoder_matches_schema(version: int, data: st.DataObject) -> None:
    obj = data.draw(fetch_responses(version))
    assert b"".join(encode_response_parts(1, version, obj)) == encode_response(1, version, obj)


def test_large_record_sets_are_chunks_of_their_own() -> None:
    big = bytes(range(256)) * 40
    obj = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic_id": uuid.uuid4(),
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 9,
                        "last_stable_offset": 9,
                        "log_start_offset": 0,
                        "aborted_transactions": [],
                        "preferred_read_replica": -1,
                        "records": big,
                    }
                ],
            }
        ],
    }
    chunks = flexible_fast.encode_fetch_response(13, obj)
    assert any(chunk is big for chunk in chunks)
    assert b"".join(chunks) == encode_response(1, 13, obj)
