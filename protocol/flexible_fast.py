"""Produce v8-11 and Fetch v12-17 with precompiled structs: fast twins of the flexible schemas.

The flexible versions (KIP-482) replace INT16/INT32 length prefixes with
unsigned varints holding length + 1 (0 = null), and end every struct with a
tag buffer (UNSIGNED_VARINT count, then tag, size, bytes each).
protocol/messages/produce.py and fetch.py are the reference schemas.

Requests: Produce v9-11 and Fetch v12-17 are decoded here into the same
`Container` the schema gives, except that record sets are memoryviews into
the buffer (as `produce_fast` does). A request carrying any tagged field
(clients rarely send one: a follower's replica_state, a directory id)
raises `HasTaggedFields`, and the caller decodes it with the schema instead,
which validates and names them.

Responses: Produce v8-11 and Fetch v12-17 are encoded here byte for byte as
the schema builds them, Fetch's large record sets passed through as their own
chunks. A response with a tagged field to write (a partition's
current_leader, diverging_epoch or snapshot_id; the node_endpoints of
v10/v16+), or Produce v8+'s record_errors or error_message set, raises
`NeedsSchema`: those answer errors, not the hot path, and the caller builds
them with the schema.

tests/unit/test_flexible_fast.py checks both directions against the schema
on generated, truncated, mutated and arbitrary input.
"""

from __future__ import annotations

import struct
from typing import Any

from construct import Container, ListContainer

from protocol.errors import ProtocolError
from protocol.fast_reader import I32, Reader, compact_string_bytes, string_bytes
from protocol.schema import ZERO_UUID
from protocol.varint import encode_uvarint

PRODUCE_REQUEST_VERSIONS = range(9, 12)
PRODUCE_RESPONSE_VERSIONS = range(8, 12)
FETCH_VERSIONS = range(12, 18)

_ACKS_TIMEOUT = struct.Struct(">hi")
_FETCH_HEAD = struct.Struct(">iiiibii")  # replica_id, max_wait, min_bytes, max_bytes, isolation, session
_FETCH_HEAD_V15 = struct.Struct(">iiibii")  # the same without replica_id (a tagged field from v15)
_FETCH_PARTITION = struct.Struct(">iiqiqi")  # partition, leader epoch, offset, last epoch, log start, max
_NO_TAGS = b"\x00"


class NeedsSchema(Exception):
    """The response has fields the fast encoder leaves to the schema (errors' extras, tagged fields)."""


def decode_produce_request(buf: bytes | bytearray | memoryview, pos: int = 0) -> Container:
    """Decode a Produce v9-11 request body at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        transactional_id = r.compact_string(nullable=True)
        acks, timeout_ms = r.unpack(_ACKS_TIMEOUT)
        topics = ListContainer()
        for _ in range(r.compact_length(False, "array count")):
            name = r.compact_string()
            partitions = ListContainer()
            for _ in range(r.compact_length(False, "array count")):
                index = r.i32()
                partitions.append(Container(index=index, records=r.compact_bytes()))
                r.no_tags()
            r.no_tags()
            topics.append(Container(name=name, partition_data=partitions))
        r.no_tags()
    except struct.error:
        raise ProtocolError(f"produce request truncated at byte {r.pos} of {r.end}") from None
    return Container(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms, topic_data=topics)


def decode_fetch_request(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Container:
    """Decode a Fetch v12-17 request body at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        out = Container()
        if version >= 15:
            max_wait, min_bytes, max_bytes, isolation, session_id, epoch = r.unpack(_FETCH_HEAD_V15)
        else:
            out.replica_id, max_wait, min_bytes, max_bytes, isolation, session_id, epoch = r.unpack(
                _FETCH_HEAD
            )
        out.max_wait_ms, out.min_bytes, out.max_bytes = max_wait, min_bytes, max_bytes
        out.isolation_level, out.session_id, out.session_epoch = isolation, session_id, epoch
        by_id = version >= 13
        topics = ListContainer()
        for _ in range(r.compact_length(False, "array count")):
            topic = Container(topic_id=r.uuid()) if by_id else Container(topic=r.compact_string())
            partitions = ListContainer()
            for _ in range(r.compact_length(False, "array count")):
                index, leader_epoch, offset, last_epoch, log_start, max_bytes = r.unpack(_FETCH_PARTITION)
                p = Container(
                    partition=index,
                    current_leader_epoch=leader_epoch,
                    fetch_offset=offset,
                    last_fetched_epoch=last_epoch,
                    log_start_offset=log_start,
                    partition_max_bytes=max_bytes,
                )
                if version >= 17:
                    p.replica_directory_id = ZERO_UUID
                r.no_tags()
                partitions.append(p)
            r.no_tags()
            topic.partitions = partitions
            topics.append(topic)
        out.topics = topics
        forgotten = ListContainer()
        for _ in range(r.compact_length(False, "array count")):
            f = Container(topic_id=r.uuid()) if by_id else Container(topic=r.compact_string())
            f.partitions = ListContainer(r.i32() for _ in range(r.compact_length(False, "array count", 4)))
            r.no_tags()
            forgotten.append(f)
        out.forgotten_topics_data = forgotten
        out.rack_id = r.compact_string()
        r.no_tags()
        out.cluster_id = None
        if version >= 15:
            out.replica_state = Container(replica_id=-1, replica_epoch=-1)
    except struct.error:
        raise ProtocolError(f"fetch request truncated at byte {r.pos} of {r.end}") from None
    return out


# -- responses ------------------------------------------------------------------------------------
_PRODUCE_PARTITION = struct.Struct(">ihqqq")  # index, error, base offset, append time, log start
_FETCH_PARTITION_HEAD = struct.Struct(">ihqqq")  # index, error, high watermark, last stable, log start
_ABORTED = struct.Struct(">qq")
_THROTTLE_ERROR_SESSION = struct.Struct(">ihi")
_SMALL_RECORDS = 4096  # record sets up to this size are copied into the header buffer
_FETCH_TAGGED = ("diverging_epoch", "current_leader", "snapshot_id")


def encode_produce_response(version: int, obj: dict[str, Any]) -> list[bytes]:
    """A Produce v8-11 response as one chunk, byte for byte the schema's; `NeedsSchema` if it has extras."""
    if version not in PRODUCE_RESPONSE_VERSIONS:
        raise ProtocolError(f"Produce v{version} has no flexible fast encoder")
    if version >= 10 and obj.get("node_endpoints"):
        raise NeedsSchema
    flexible = version >= 9
    out = bytearray()
    topics = obj["responses"]
    out += encode_uvarint(len(topics) + 1) if flexible else I32.pack(len(topics))
    for topic in topics:
        out += compact_string_bytes(topic["name"]) if flexible else string_bytes(topic["name"])
        parts = topic["partition_responses"]
        out += encode_uvarint(len(parts) + 1) if flexible else I32.pack(len(parts))
        for p in parts:
            if p.get("record_errors") or p.get("error_message") is not None or "current_leader" in p:
                raise NeedsSchema
            out += _PRODUCE_PARTITION.pack(
                p["index"], p["error_code"], p["base_offset"], p["log_append_time_ms"], p["log_start_offset"]
            )
            # no record errors (an empty array), no error message (null); in v9+ no tagged fields
            out += b"\x01\x00\x00" if flexible else b"\x00\x00\x00\x00\xff\xff"
        if flexible:
            out += _NO_TAGS
    out += I32.pack(obj["throttle_time_ms"])
    if flexible:
        out += _NO_TAGS
    return [bytes(out)]


def encode_fetch_response(version: int, r: dict[str, Any]) -> list[bytes]:
    """A Fetch v12-17 response as chunks whose concatenation is the schema's; `NeedsSchema` if it has
    tagged fields to write. Record sets larger than a few KB are chunks of their own, not copied."""
    if version not in FETCH_VERSIONS:
        raise ProtocolError(f"Fetch v{version} has no flexible fast encoder")
    if version >= 16 and r.get("node_endpoints"):
        raise NeedsSchema
    by_id = version >= 13
    chunks: list[bytes] = []
    out = bytearray(_THROTTLE_ERROR_SESSION.pack(r["throttle_time_ms"], r["error_code"], r["session_id"]))
    out += encode_uvarint(len(r["responses"]) + 1)
    for t in r["responses"]:
        out += t["topic_id"].bytes if by_id else compact_string_bytes(t["topic"])
        out += encode_uvarint(len(t["partitions"]) + 1)
        for p in t["partitions"]:
            for key in _FETCH_TAGGED:
                if key in p:
                    raise NeedsSchema
            out += _FETCH_PARTITION_HEAD.pack(
                p["partition_index"],
                p["error_code"],
                p["high_watermark"],
                p["last_stable_offset"],
                p["log_start_offset"],
            )
            aborted = p["aborted_transactions"]
            if aborted is None:
                out += b"\x00"
            else:
                out += encode_uvarint(len(aborted) + 1)
                for a in aborted:
                    out += _ABORTED.pack(a["producer_id"], a["first_offset"]) + _NO_TAGS
            out += I32.pack(p["preferred_read_replica"])
            records = p["records"]
            if records is None:
                out += b"\x00" + _NO_TAGS
                continue
            out += encode_uvarint(len(records) + 1)
            if len(records) <= _SMALL_RECORDS:
                out += records
            else:
                chunks.append(bytes(out))
                chunks.append(records)
                out = bytearray()
            out += _NO_TAGS
        out += _NO_TAGS
    out += _NO_TAGS
    chunks.append(bytes(out))
    return chunks
