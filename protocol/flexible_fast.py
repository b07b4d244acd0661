"""Produce v8-13 and Fetch v12-18 with precompiled structs: fast twins of the flexible schemas.

The flexible versions (KIP-482) replace INT16/INT32 length prefixes with
unsigned varints holding length + 1 (0 = null), and end every struct with a
tag buffer (UNSIGNED_VARINT count, then tag, size, bytes each).
protocol/messages/produce.py and fetch.py are the reference schemas.

Requests: Produce v9-13 and Fetch v12-18 are decoded here into `Struct`s
(`protocol.fast_reader`: dicts with attribute access through dict's own C
methods, ~0.2 us less per field the handlers read than construct's
`Container`) equal to the `Container` the schema gives, except that record
sets are memoryviews into the buffer (as `produce_fast` does). A request carrying any tagged field
(clients rarely send one: a follower's replica_state, a directory id)
raises `HasTaggedFields`, and the caller decodes it with the schema instead,
which validates and names them.

Responses: Produce v8-13 and Fetch v12-18 are encoded here byte for byte as
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
import uuid
from typing import Any

from construct import ListContainer

from protocol.errors import ProtocolError
from protocol.fast_reader import (
    I32,
    HasTaggedFields,
    Reader,
    Struct,
    check_length,
    compact_length_at,
    compact_string_bytes,
    nullable_text_at,
    nullable_view_at,
    string_bytes,
    text_at,
)
from protocol.schema import ZERO_UUID
from protocol.varint import encode_uvarint

PRODUCE_REQUEST_VERSIONS = range(9, 14)
PRODUCE_RESPONSE_VERSIONS = range(8, 14)
FETCH_VERSIONS = range(12, 19)
_NO_HIGH_WATERMARK = 2**63 - 1  # Fetch v18's tagged HighWatermark when absent (KIP-1166)

_ACKS_TIMEOUT = struct.Struct(">hi")
_FETCH_HEAD = struct.Struct(">iiiibii")  # replica_id, max_wait, min_bytes, max_bytes, isolation, session
_FETCH_HEAD_V15 = struct.Struct(">iiibii")  # the same without replica_id (a tagged field from v15)
_FETCH_HEAD_FIELDS = (
    "max_wait_ms",
    "min_bytes",
    "max_bytes",
    "isolation_level",
    "session_id",
    "session_epoch",
)
_FETCH_PARTITION = struct.Struct(">iiqiqi")  # partition, leader epoch, offset, last epoch, log start, max
_NO_TAGS = b"\x00"


class NeedsSchema(Exception):
    """The response has fields the fast encoder leaves to the schema (errors' extras, tagged fields)."""


def _topic_at(
    buf: bytes | bytearray | memoryview, pos: int, end: int, by_id: bool, key: str
) -> tuple[Struct, int]:
    """A topic entry's identity at ``buf[pos]``: its id (UUID) when ``by_id``, else its
    COMPACT_STRING name under ``key``; with the position after it."""
    if by_id:
        return Struct(topic_id=_uuid(buf, pos)), pos + 16
    n, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
    check_length(n, end - pos, "string length")
    return Struct({key: text_at(buf, pos, n)}), pos + n


def decode_produce_request(buf: bytes | bytearray | memoryview, pos: int = 0, version: int = 11) -> Struct:
    """Decode a Produce v9-13 request body at ``buf[pos]``; ProtocolError if malformed. v12 is
    v11's layout; v13 names each topic by its id (a UUID) instead of its name.

    Every request goes through here, so the reads are inlined (a varint below 0x80 is one
    byte; `compact_length_at` reads longer ones) rather than calls of `Reader`'s methods.
    """
    end = len(buf)
    try:
        # transactional_id: COMPACT_NULLABLE_STRING
        n, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
        transactional_id, pos = nullable_text_at(buf, pos, n)
        acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
        pos += 6
        topic_count, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
        check_length(topic_count, end - pos, "array count")
        view = memoryview(buf)
        topics = ListContainer()
        by_id = version >= 13
        for _ in range(topic_count):
            topic, pos = _topic_at(buf, pos, end, by_id, "name")
            part_count, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
            check_length(part_count, end - pos, "array count")
            partitions = ListContainer()
            for _ in range(part_count):
                (index,) = I32.unpack_from(buf, pos)
                b = buf[pos + 4]
                if b < 0x80:
                    n = b - 1
                    pos += 5
                elif buf[pos + 5] < 0x80:  # record sets of 128 B to 16 KB
                    n = (b & 0x7F | buf[pos + 5] << 7) - 1
                    pos += 6
                else:
                    n, pos = compact_length_at(buf, pos + 4, end)
                records, pos = nullable_view_at(view, pos, n)
                if buf[pos]:
                    raise HasTaggedFields
                pos += 1
                partitions.append(Struct(index=index, records=records))
            if buf[pos]:
                raise HasTaggedFields
            pos += 1
            topic.partition_data = partitions
            topics.append(topic)
        if buf[pos]:
            raise HasTaggedFields
    except (struct.error, IndexError):
        raise ProtocolError(f"produce request truncated at byte {pos} of {end}") from None
    return Struct(transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms, topic_data=topics)


_UUIDS: dict[bytes, uuid.UUID] = {}  # topic ids seen in requests: a UUID costs a microsecond to build
_UUIDS_MAX = 10_000


def _uuid(buf: bytes | bytearray | memoryview, pos: int) -> uuid.UUID:
    raw = bytes(buf[pos : pos + 16])
    if len(raw) < 16:
        raise ProtocolError("uuid truncated")
    value = _UUIDS.get(raw)
    if value is None:
        if len(_UUIDS) >= _UUIDS_MAX:
            _UUIDS.clear()
        value = _UUIDS[raw] = uuid.UUID(bytes=raw)
    return value


def decode_fetch_request(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Struct:
    """Decode a Fetch v12-18 request body at ``buf[pos]``; ProtocolError if malformed (reads
    inlined as in `decode_produce_request`)."""
    end = len(buf)
    try:
        if version >= 15:
            head = _FETCH_HEAD_V15.unpack_from(buf, pos)
            pos += _FETCH_HEAD_V15.size
            out = Struct()
        else:
            replica_id, *head = _FETCH_HEAD.unpack_from(buf, pos)
            pos += _FETCH_HEAD.size
            out = Struct(replica_id=replica_id)
        out.update(zip(_FETCH_HEAD_FIELDS, head, strict=True))
        by_id = version >= 13
        topic_count, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
        check_length(topic_count, end - pos, "array count")
        topics = ListContainer()
        for _ in range(topic_count):
            topic, pos = _topic_at(buf, pos, end, by_id, "topic")
            part_count, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
            check_length(part_count, end - pos, "array count")
            partitions = ListContainer()
            for _ in range(part_count):
                index, leader_epoch, offset, last_epoch, log_start, max_bytes = _FETCH_PARTITION.unpack_from(
                    buf, pos
                )
                pos += _FETCH_PARTITION.size
                if buf[pos]:
                    raise HasTaggedFields
                pos += 1
                p = Struct(
                    partition=index,
                    current_leader_epoch=leader_epoch,
                    fetch_offset=offset,
                    last_fetched_epoch=last_epoch,
                    log_start_offset=log_start,
                    partition_max_bytes=max_bytes,
                )
                if version >= 17:
                    p.replica_directory_id = ZERO_UUID
                    if version >= 18:
                        p.high_watermark = _NO_HIGH_WATERMARK
                partitions.append(p)
            if buf[pos]:
                raise HasTaggedFields
            pos += 1
            topic.partitions = partitions
            topics.append(topic)
        out.topics = topics
        forgotten = ListContainer()
        if buf[pos] == 1:  # no forgotten topics: the usual case
            pos += 1
        else:  # incremental fetch sessions only
            r = Reader(buf, pos)
            for _ in range(r.compact_length(False, "array count")):
                f = Struct(topic_id=r.uuid()) if by_id else Struct(topic=r.compact_string())
                f.partitions = ListContainer(
                    r.i32() for _ in range(r.compact_length(False, "array count", 4))
                )
                r.no_tags()
                forgotten.append(f)
            pos = r.pos
        out.forgotten_topics_data = forgotten
        n, pos = (b - 1, pos + 1) if (b := buf[pos]) < 0x80 else compact_length_at(buf, pos, end)
        check_length(n, end - pos, "string length")
        out.rack_id = text_at(buf, pos, n)
        if buf[pos + n]:
            raise HasTaggedFields
        out.cluster_id = None
        if version >= 15:
            out.replica_state = Struct(replica_id=-1, replica_epoch=-1)
    except (struct.error, IndexError):
        raise ProtocolError(f"fetch request truncated at byte {pos} of {end}") from None
    return out


# -- responses ------------------------------------------------------------------------------------
_PRODUCE_PARTITION = struct.Struct(">ihqqq")  # index, error, base offset, append time, log start
_FETCH_PARTITION_HEAD = struct.Struct(">ihqqq")  # index, error, high watermark, last stable, log start
_ABORTED = struct.Struct(">qq")
_THROTTLE_ERROR_SESSION = struct.Struct(">ihi")
_SMALL_RECORDS = 4096  # record sets up to this size are copied into the header buffer


_NAMES: dict[str, bytes] = {}  # topic name -> its COMPACT_STRING bytes
_NAMES_MAX = 10_000


def _compact_name(name: str) -> bytes:
    """A topic name as COMPACT_STRING bytes, remembered: responses repeat the same few names."""
    data = _NAMES.get(name)
    if data is None:
        if len(_NAMES) >= _NAMES_MAX:
            _NAMES.clear()
        data = _NAMES[name] = compact_string_bytes(name)
    return data


def encode_produce_response(version: int, obj: dict[str, Any]) -> list[bytes]:
    """A Produce v8-13 response as one chunk, byte for byte the schema's; `NeedsSchema` if it has extras.
    v13 names each topic by its id."""
    if version not in PRODUCE_RESPONSE_VERSIONS:
        raise ProtocolError(f"Produce v{version} has no flexible fast encoder")
    if version >= 10 and obj.get("node_endpoints"):
        raise NeedsSchema
    flexible = version >= 9
    by_id = version >= 13
    out = bytearray()
    topics = obj["responses"]
    out += encode_uvarint(len(topics) + 1) if flexible else I32.pack(len(topics))
    for topic in topics:
        if by_id:
            out += topic["topic_id"].bytes
        else:
            out += _compact_name(topic["name"]) if flexible else string_bytes(topic["name"])
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
    """A Fetch v12-18 response as chunks whose concatenation is the schema's; `NeedsSchema` if it has
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
        out += t["topic_id"].bytes if by_id else _compact_name(t["topic"])
        out += encode_uvarint(len(t["partitions"]) + 1)
        for p in t["partitions"]:
            if "current_leader" in p or "diverging_epoch" in p or "snapshot_id" in p:
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
