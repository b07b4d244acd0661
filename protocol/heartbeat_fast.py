"""ConsumerGroupHeartbeat v0-1 (KIP-848) with precompiled structs: the fast twin of its schema.

Every member of a consumer-protocol group sends one every few seconds
(``group.consumer.heartbeat.interval.ms``), and a rebalance is several rounds
of them; the construct schema (protocol/messages/consumer_group_heartbeat.py,
the reference) spent ~19 us decoding one and ~10 us encoding its answer,
about half of what a heartbeat that changes nothing costs the broker.

Layout (flexible from v0: compact strings and arrays, tag buffers):

    request:  group_id STRING, member_id STRING, member_epoch INT32,
              instance_id STRING?, rack_id STRING?, rebalance_timeout_ms INT32,
              subscribed_topic_names [STRING]?, subscribed_topic_regex STRING? (v1+),
              server_assignor STRING?, topic_partitions [topic_id UUID,
              partitions [INT32], tags]?, tags
    response: throttle_time_ms INT32, error_code INT16, error_message STRING?,
              member_id STRING?, member_epoch INT32, heartbeat_interval_ms INT32,
              assignment (INT8 -1 for null, else 1 then: topic_partitions
              [topic_id UUID, partitions [INT32], tags], tags)?, tags

The broker decodes requests and encodes responses with it; a client (ours, and the group
benchmark's, where the schema's ~9 us to encode a request and ~15 us to decode an answer with an
assignment were a third of a rebalance's time) encodes requests and decodes responses. The
decoders give a `Struct` equal to the `Container` the schema gives; a message with tagged fields
raises `HasTaggedFields` (the caller decodes it with the schema).
tests/unit/test_heartbeat_fast.py checks all four against the schema.
"""

from __future__ import annotations

import struct
from typing import Any

from construct import ListContainer

from protocol.errors import ProtocolError
from protocol.fast_reader import I32, Reader, Struct, compact_string_bytes
from protocol.varint import encode_uvarint

VERSIONS = range(0, 2)

_I8 = struct.Struct(">b")
_HEAD = struct.Struct(">ih")  # throttle_time_ms, error_code
_EPOCH_INTERVAL = struct.Struct(">ii")  # member_epoch, heartbeat_interval_ms
_NULL_STRING = b"\x00"
_NULL_STRUCT = b"\xff"  # a nullable struct: INT8 -1 for null, 1 before a present one
_NO_TAGS = b"\x00"


def _strings(r: Reader) -> ListContainer | None:
    n = r.compact_length(True, "array count")
    if n < 0:
        return None
    return ListContainer(r.compact_string() for _ in range(n))


def decode_heartbeat_request(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Struct:
    """Decode a ConsumerGroupHeartbeat v0-1 request body at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        out = Struct(group_id=r.compact_string(), member_id=r.compact_string(), member_epoch=r.i32())
        out.instance_id = r.compact_string(nullable=True)
        out.rack_id = r.compact_string(nullable=True)
        out.rebalance_timeout_ms = r.i32()
        out.subscribed_topic_names = _strings(r)
        if version >= 1:
            out.subscribed_topic_regex = r.compact_string(nullable=True)
        out.server_assignor = r.compact_string(nullable=True)
        out.topic_partitions = _read_topic_partitions(r, True)
        r.no_tags()
    except struct.error:
        raise ProtocolError(f"heartbeat request truncated at byte {r.pos} of {r.end}") from None
    return out


def _nullable_string(text: str | None) -> bytes:
    return _NULL_STRING if text is None else compact_string_bytes(text)


def _topic_partitions(out: bytearray, topics: Any) -> None:
    """[topic_id UUID, partitions [INT32], tags] as a compact array (the request's owned
    partitions and the response's assignment share the layout)."""
    out += encode_uvarint(len(topics) + 1)
    for tp in topics:
        partitions = tp["partitions"]
        out += tp["topic_id"].bytes
        out += encode_uvarint(len(partitions) + 1)
        out += struct.pack(f">{len(partitions)}i", *partitions)
        out += _NO_TAGS


def _read_topic_partitions(r: Reader, nullable: bool) -> ListContainer | None:
    n = r.compact_length(nullable, "array count")
    if n < 0:
        return None
    topics = ListContainer()
    for _ in range(n):
        topic_id = r.uuid()
        count = r.compact_length(False, "array count", 4)
        partitions = ListContainer(r.i32s(count))
        r.no_tags()
        topics.append(Struct(topic_id=topic_id, partitions=partitions))
    return topics


def encode_heartbeat_request(version: int, obj: dict[str, Any]) -> bytes:
    """A ConsumerGroupHeartbeat v0-1 request body, byte for byte the schema's (a missing key
    is written as the field's default, as the schema does)."""
    if version not in VERSIONS:
        raise ProtocolError(f"ConsumerGroupHeartbeat v{version} has no fast encoder")
    get = obj.get
    out = bytearray(compact_string_bytes(get("group_id", "")))
    out += compact_string_bytes(get("member_id", ""))
    out += I32.pack(get("member_epoch", 0))
    out += _nullable_string(get("instance_id"))
    out += _nullable_string(get("rack_id"))
    out += I32.pack(get("rebalance_timeout_ms", -1))
    names = get("subscribed_topic_names")
    if names is None:
        out += _NULL_STRING
    else:
        out += encode_uvarint(len(names) + 1)
        for name in names:
            out += compact_string_bytes(name)
    if version >= 1:
        out += _nullable_string(get("subscribed_topic_regex"))
    out += _nullable_string(get("server_assignor"))
    owned = get("topic_partitions")
    if owned is None:
        out += _NULL_STRING
    else:
        _topic_partitions(out, owned)
    out += _NO_TAGS
    return bytes(out)


def decode_heartbeat_response(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Struct:
    """Decode a ConsumerGroupHeartbeat v0-1 response body at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        throttle, error = r.unpack(_HEAD)
        out = Struct(throttle_time_ms=throttle, error_code=error)
        out.error_message = r.compact_string(nullable=True)
        out.member_id = r.compact_string(nullable=True)
        out.member_epoch, out.heartbeat_interval_ms = r.unpack(_EPOCH_INTERVAL)
        (marker,) = r.unpack(_I8)
        if marker == -1:
            out.assignment = None
        elif marker == 1:
            out.assignment = Struct(topic_partitions=_read_topic_partitions(r, False))
            r.no_tags()
        else:
            raise ProtocolError(f"nullable struct marker {marker} is neither -1 nor 1")
        r.no_tags()
    except struct.error:
        raise ProtocolError(f"heartbeat response truncated at byte {r.pos} of {r.end}") from None
    return out


def encode_heartbeat_response(version: int, obj: dict[str, Any]) -> list[bytes]:
    """A ConsumerGroupHeartbeat v0-1 response as one chunk, byte for byte the schema's."""
    if version not in VERSIONS:
        raise ProtocolError(f"ConsumerGroupHeartbeat v{version} has no fast encoder")
    out = bytearray(_HEAD.pack(obj["throttle_time_ms"], obj["error_code"]))
    out += _nullable_string(obj["error_message"])
    out += _nullable_string(obj["member_id"])
    out += _EPOCH_INTERVAL.pack(obj["member_epoch"], obj["heartbeat_interval_ms"])
    assignment = obj["assignment"]
    if assignment is None:
        out += _NULL_STRUCT
    else:
        out += b"\x01"
        _topic_partitions(out, assignment["topic_partitions"])
        out += _NO_TAGS
    out += _NO_TAGS
    return [bytes(out)]
