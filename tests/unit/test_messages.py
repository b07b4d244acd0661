"""Codec tests for every (api, version, request/response) schema in protocol.messages.MODULES.

Contracts checked:
- encode -> decode gives back the object, and re-encoding the decoded object
  gives identical bytes (deterministic samples from `samples.example` and
  Hypothesis objects derived from the same schema walk);
- decoding any strict prefix of a valid encoding raises ProtocolError and
  nothing else;
- arbitrary or mutated bytes fed to decode_request/decode_response raise
  ProtocolError or decode; never another exception, never a hang;
- every module holds exactly the versions of its `protocol.api_keys` entry.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.api_keys import API_KEYS
from protocol.errors import ProtocolError
from protocol.messages import (
    API_NAMES,
    MODULES,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    samples,
)
from protocol.messages.samples import Node, Record, Scalar, Seq

SCHEMAS = list(samples.all_schemas())


def _id(entry: tuple[int, int, str, Any]) -> str:
    key, version, kind, _ = entry
    return f"{API_NAMES[key]}-v{version}-{kind}"


def encode(kind: str, key: int, version: int, obj: Any) -> bytes:
    return (encode_request if kind == "request" else encode_response)(key, version, obj)


def decode(kind: str, key: int, version: int, data: bytes) -> Any:
    return (decode_request if kind == "request" else decode_response)(key, version, data)


def plain(obj: Any) -> Any:
    """construct Containers/ListContainers -> dicts/lists, without construct's `_io` keys."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


# --- registry ----------------------------------------------------------------


def test_every_module_has_every_version_of_its_table_entry() -> None:
    assert set(MODULES) == set(API_KEYS)
    for key, (name, module_name, lo, hi, flexible) in API_KEYS.items():
        module = MODULES[key]
        assert key == module.API_KEY
        assert module.NAME == name == API_NAMES[key]
        assert module.__name__ == f"protocol.messages.{module_name}"
        assert (lo, hi) == module.VERSIONS
        assert sorted(module.REQUEST) == list(range(lo, hi + 1)), name
        assert sorted(module.RESPONSE) == list(range(lo, hi + 1)), name
        for version in range(lo, hi + 1):
            assert module.REQUEST[version].flexible == (flexible is not None and version >= flexible)


@pytest.mark.parametrize("key", sorted(API_KEYS))
def test_module_docstring_names_api_key_and_versions(key: int) -> None:
    name, _, lo, hi, _ = API_KEYS[key]
    doc = MODULES[key].__doc__ or ""
    first = doc.splitlines()[0]
    assert re.match(rf"{name} \(API key {key}\): versions {lo}-{hi}\b", first), first


def test_unknown_api_or_version_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode_request(9999, 0, b"")
    with pytest.raises(ProtocolError):
        decode_request(0, 99, b"")
    with pytest.raises(ProtocolError):
        encode_response(1, 99, {})


# --- deterministic samples ---------------------------------------------------


@pytest.mark.parametrize("variant", samples.VARIANTS)
@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_round_trip_sample(entry: tuple[int, int, str, Any], variant: samples.Variant) -> None:
    key, version, kind, schema = entry
    obj = samples.example(schema, variant)
    data = encode(kind, key, version, obj)
    decoded = decode(kind, key, version, data)
    assert plain(decoded) == obj
    assert encode(kind, key, version, decoded) == data


@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_every_truncated_prefix_raises_protocol_error(entry: tuple[int, int, str, Any]) -> None:
    key, version, kind, schema = entry
    for variant in ("full", "null"):
        data = encode(kind, key, version, samples.example(schema, variant))
        for cut in range(len(data)):
            with pytest.raises(ProtocolError):
                decode(kind, key, version, data[:cut])


@pytest.mark.parametrize("entry", SCHEMAS, ids=_id)
def test_memoryview_input_decodes_like_bytes(entry: tuple[int, int, str, Any]) -> None:
    key, version, kind, schema = entry
    data = encode(kind, key, version, samples.example(schema))
    assert plain(decode(kind, key, version, memoryview(data))) == plain(decode(kind, key, version, data))


# --- hand-checked encodings ----------------------------------------------------


def test_metadata_v0_request_bytes() -> None:
    data = encode_request(3, 0, {"topics": [{"name": "a"}, {"name": "bc"}]})
    assert data == bytes.fromhex("00000002 0001 61 0002 6263")


def test_metadata_topics_null_only_from_v1() -> None:
    assert encode_request(3, 1, {"topics": None}) == b"\xff\xff\xff\xff"
    assert decode_request(3, 1, b"\xff\xff\xff\xff").topics is None
    assert decode_request(3, 4, b"\xff\xff\xff\xff\x01").allow_auto_topic_creation is True
    with pytest.raises(ProtocolError):
        decode_request(3, 0, b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError):
        encode_request(3, 0, {"topics": None})


def test_offset_fetch_topics_null_only_from_v2() -> None:
    body = b"\x00\x01g\xff\xff\xff\xff"
    assert decode_request(9, 2, body).topics is None
    assert decode_request(9, 3, body).topics is None
    with pytest.raises(ProtocolError):
        decode_request(9, 1, body)


def test_produce_v3_request_bytes() -> None:
    obj = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"RB"}]}],
    }
    expected = bytes.fromhex(
        "ffff"  # transactional_id null
        "ffff"  # acks -1
        "00007530"  # timeout_ms 30000
        "00000001 0001 74"  # one topic, name "t"
        "00000001 00000000"  # one partition, index 0
        "00000002 5242"  # records b"RB"
    )
    assert encode_request(0, 3, obj) == expected
    decoded = decode_request(0, 3, expected)
    assert decoded.topic_data[0].partition_data[0].records == b"RB"
    # the broker passes the whole frame and the body's offset (no copy of the body)
    framed = b"HEADER" + expected
    assert decode_request(0, 3, framed, 6) == decoded
    for bad in (-1, len(framed) + 1):
        with pytest.raises(ProtocolError):
            decode_request(0, 3, framed, bad)
    with pytest.raises(ProtocolError):
        decode_request(0, 3, framed[:-1], 6)


def test_fetch_response_v11_field_order() -> None:
    partition = {
        "partition_index": 1,
        "error_code": 0,
        "high_watermark": 2,
        "last_stable_offset": 3,
        "log_start_offset": 4,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": None,
    }
    obj = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [{"topic": "t", "partitions": [partition]}],
    }
    expected = bytes.fromhex(
        "00000000 0000 00000000"  # throttle_time_ms, error_code, session_id
        "00000001 0001 74"  # one topic, topic "t"
        "00000001 00000001 0000"  # one partition: partition_index 1, error_code
        "0000000000000002 0000000000000003 0000000000000004"  # hw, lso, log_start_offset
        "ffffffff"  # aborted_transactions null
        "ffffffff"  # preferred_read_replica -1
        "ffffffff"  # records null
    )
    assert encode_response(1, 11, obj) == expected


def test_huge_array_count_fails_fast() -> None:
    # Produce v3: null transactional_id, acks, timeout, then topic_data count 0x7FFFFFFF.
    body = bytes.fromhex("ffff 0001 00000000 7fffffff") + b"\x00" * 10
    start = time.perf_counter()
    with pytest.raises(ProtocolError):
        decode_request(0, 3, body)
    assert time.perf_counter() - start < 0.1


# --- Hypothesis ------------------------------------------------------------------

_INT_STRATEGIES = {bits: st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 32, 64)}


def strategy_for(node: Node) -> st.SearchStrategy[Any]:
    """Hypothesis strategy for objects of the shape `node` (see samples.shape)."""
    if isinstance(node, Record):
        struct = st.fixed_dictionaries({name: strategy_for(sub) for name, sub in node.fields})
        return st.none() | struct if node.nullable else struct
    if isinstance(node, Seq):
        base: st.SearchStrategy[Any] = st.lists(strategy_for(node.element), max_size=3)
        return st.none() | base if node.nullable else base
    assert isinstance(node, Scalar)
    if node.kind == "int":
        base = _INT_STRATEGIES[node.bits]
    elif node.kind == "uint":
        base = st.integers(0, (1 << node.bits) - 1)
    elif node.kind == "uuid":
        base = st.uuids(allow_nil=True)
    elif node.kind == "float":
        base = st.floats(allow_nan=False)
    elif node.kind == "bool":
        base = st.booleans()
    elif node.kind == "string":
        base = st.text(max_size=8)
    elif node.kind == "bytes":
        base = st.binary(max_size=8)
    elif node.kind == "tags":
        base = st.dictionaries(st.integers(0, 300), st.binary(max_size=4), max_size=3)
    else:  # pragma: no cover - samples.shape only returns the kinds above
        raise AssertionError(node.kind)
    return st.none() | base if node.nullable else base


_BY_KEY: dict[int, list[tuple[int, int, str, Any]]] = {}
for _entry in SCHEMAS:
    _BY_KEY.setdefault(_entry[0], []).append(_entry)
_STRATEGIES = {
    (key, version, kind): strategy_for(samples.shape(schema)) for key, version, kind, schema in SCHEMAS
}

_FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("key", sorted(_BY_KEY), ids=lambda k: API_NAMES[k])
@_FAST
@given(data=st.data())
def test_round_trip_hypothesis(key: int, data: st.DataObject) -> None:
    _, version, kind, _ = data.draw(st.sampled_from(_BY_KEY[key]), label="schema")
    obj = data.draw(_STRATEGIES[(key, version, kind)], label="object")
    encoded = encode(kind, key, version, obj)
    decoded = decode(kind, key, version, encoded)
    assert plain(decoded) == obj
    assert encode(kind, key, version, decoded) == encoded


def _decode_or_protocol_error(kind: str, key: int, version: int, data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode(kind, key, version, data)


@pytest.mark.parametrize("key", sorted(_BY_KEY), ids=lambda k: API_NAMES[k])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_bytes_only_raise_protocol_error(key: int, data: st.DataObject) -> None:
    _, version, kind, _ = data.draw(st.sampled_from(_BY_KEY[key]), label="schema")
    body = data.draw(st.binary(max_size=96), label="body")
    _decode_or_protocol_error(kind, key, version, body)


@pytest.mark.parametrize("key", sorted(_BY_KEY), ids=lambda k: API_NAMES[k])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_mutated_encodings_only_raise_protocol_error(key: int, data: st.DataObject) -> None:
    """Start from a valid encoding so the damage lands deep inside nested arrays."""
    _, version, kind, schema = data.draw(st.sampled_from(_BY_KEY[key]), label="schema")
    variant = data.draw(st.sampled_from(samples.VARIANTS), label="variant")
    body = bytearray(encode(kind, key, version, samples.example(schema, variant)))
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        pos = data.draw(st.integers(0, len(body)), label="pos")
        action = data.draw(st.sampled_from(["set", "insert", "delete", "max", "minus1"]), label="action")
        if action == "insert" or not body:
            body[pos:pos] = data.draw(st.binary(min_size=1, max_size=4), label="bytes")
        elif action == "delete":
            del body[pos : pos + data.draw(st.integers(1, 4), label="n")]
        elif action == "set":
            body[pos : pos + 1] = data.draw(st.binary(min_size=1, max_size=1), label="byte")
        elif action == "max":  # a huge length or count
            body[pos : pos + 4] = b"\x7f\xff\xff\xff"
        else:  # a null where maybe none is allowed
            body[pos : pos + 4] = b"\xff\xff\xff\xff"
    _decode_or_protocol_error(kind, key, version, bytes(body))
