"""protocol.fetch_fast agrees with the Fetch schema on every input.

Both decoders see the same bytes: valid encodings (Hypothesis objects), every
truncation of one, single-byte mutations and arbitrary bytes. Either both
raise ProtocolError, or both give equal Containers.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.fetch_fast import VERSIONS, decode_fetch_request, decode_fetch_response
from protocol.messages import _decode, encode_request, encode_response
from tests.unit.decoder_support import agree_on_variants, outcome

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=8)

fetch_requests = st.fixed_dictionaries(
    {
        "replica_id": i32,
        "max_wait_ms": i32,
        "min_bytes": i32,
        "max_bytes": i32,
        "isolation_level": st.integers(0, 1),
        "session_id": i32,
        "session_epoch": i32,
        "topics": st.lists(
            st.fixed_dictionaries(
                {
                    "topic": names,
                    "partitions": st.lists(
                        st.fixed_dictionaries(
                            {
                                "partition": i32,
                                "current_leader_epoch": i32,
                                "fetch_offset": i64,
                                "log_start_offset": i64,
                                "partition_max_bytes": i32,
                            }
                        ),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        ),
        "forgotten_topics_data": st.lists(
            st.fixed_dictionaries({"topic": names, "partitions": st.lists(i32, max_size=3)}), max_size=2
        ),
        "rack_id": names,
    }
)

fetch_responses = st.fixed_dictionaries(
    {
        "throttle_time_ms": i32,
        "error_code": st.integers(-(2**15), 2**15 - 1),
        "session_id": i32,
        "responses": st.lists(
            st.fixed_dictionaries(
                {
                    "topic": names,
                    "partitions": st.lists(
                        st.fixed_dictionaries(
                            {
                                "partition_index": i32,
                                "error_code": st.integers(-(2**15), 2**15 - 1),
                                "high_watermark": i64,
                                "last_stable_offset": i64,
                                "log_start_offset": i64,
                                "aborted_transactions": st.one_of(
                                    st.none(),
                                    st.lists(
                                        st.fixed_dictionaries({"producer_id": i64, "first_offset": i64}),
                                        max_size=2,
                                    ),
                                ),
                                "preferred_read_replica": i32,
                                "records": st.one_of(st.none(), st.binary(max_size=40)),
                            }
                        ),
                        max_size=3,
                    ),
                }
            ),
            max_size=3,
        ),
    }
)


def _agree(table: str, version: int, body: bytes) -> None:
    fast = decode_fetch_request if table == "REQUEST" else decode_fetch_response
    got = outcome(lambda b: fast(b, version), body)
    assert got == outcome(lambda b: _decode(table, 1, version, b), body)


def _variants(table: str, version: int, body: bytes, data: st.DataObject) -> None:
    agree_on_variants(lambda b: _agree(table, version, b), body, data)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(obj=fetch_requests, data=st.data())
def test_request_decoder_agrees_with_schema(version: int, obj: dict[str, Any], data: st.DataObject) -> None:
    _variants("REQUEST", version, encode_request(1, version, obj), data)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(obj=fetch_responses, data=st.data())
def test_response_decoder_agrees_with_schema(version: int, obj: dict[str, Any], data: st.DataObject) -> None:
    _variants("RESPONSE", version, encode_response(1, version, obj), data)


@pytest.mark.parametrize("table", ["REQUEST", "RESPONSE"])
@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=80))
def test_arbitrary_bytes(table: str, body: bytes) -> None:
    _agree(table, 11, body)
    _agree(table, 4, body)


def test_records_are_views_into_the_buffer() -> None:
    obj = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5,
                        "last_stable_offset": 5,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": b"RB",
                    }
                ],
            }
        ],
    }
    body = encode_response(1, 11, obj)
    frame = bytearray(b"hdr" + body)
    got = decode_fetch_response(frame, 11, 3)
    assert got == _decode("RESPONSE", 1, 11, body)
    view = got.responses[0].partitions[0].records
    assert isinstance(view, memoryview) and not view.readonly and bytes(view) == b"RB"
    view[0:1] = b"X"
    assert frame[-2:] == b"XB"  # no copy was made


def test_huge_counts_fail_fast() -> None:
    head = bytes(17)  # replica_id .. isolation_level of v4
    for body in (
        head + bytes.fromhex("7fffffff"),  # topic count
        head + bytes.fromhex("00000001 0001 74 7fffffff"),  # partition count
        head + bytes.fromhex("ffffffff"),  # a null topics array is not allowed
        bytes.fromhex("00000000 00000001 7fff"),  # response topic name length (v4)
    ):
        table = "REQUEST" if body.startswith(head) else "RESPONSE"
        fn = decode_fetch_request if table == "REQUEST" else decode_fetch_response
        with pytest.raises(ProtocolError):
            fn(body, 4)
