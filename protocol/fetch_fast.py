"""Fetch v4-11 requests and responses decoded with precompiled structs: fast twins of the schema.

Layouts (big-endian; protocol/messages/fetch.py is the reference schema and
the encoder; ``[vN+]`` marks a field present from version N on):

Request::

    replica_id INT32, max_wait_ms INT32, min_bytes INT32, max_bytes INT32, isolation_level INT8
    [v7+] session_id INT32, session_epoch INT32
    topics             INT32 count, each:
        topic              INT16 length, then UTF-8
        partitions         INT32 count, each:
            partition INT32, [v9+] current_leader_epoch INT32, fetch_offset INT64,
            [v5+] log_start_offset INT64, partition_max_bytes INT32
    [v7+] forgotten_topics_data  INT32 count, each: topic STRING, partitions INT32 count of INT32
    [v11] rack_id      STRING

Response::

    throttle_time_ms INT32, [v7+] error_code INT16, session_id INT32
    responses          INT32 count, each:
        topic              STRING
        partitions         INT32 count, each:
            partition_index INT32, error_code INT16, high_watermark INT64,
            last_stable_offset INT64, [v5+] log_start_offset INT64,
            aborted_transactions  INT32 count, -1 = null, each: producer_id INT64, first_offset INT64
            [v11] preferred_read_replica INT32
            records            INT32 length, -1 = null, then that many bytes

Both return the `Container` the schema decoder gives, field for field, except
that a response's ``records`` is a memoryview into ``buf`` (writable when
``buf`` is) rather than a copy: a follower appends those bytes as they are.
Bounds are the generic primitives': every length and count is checked
against the bytes left before anything is read (an array element takes at
least one byte); any malformed input raises ProtocolError; bytes after the
last field are ignored. tests/unit/test_fetch_fast.py checks that the twins
agree with the schema on valid, truncated, mutated and arbitrary input.

Why: a follower sends a Fetch for every batch its leader appends, and the
generic decoder (a Python call per field, a BytesIO, a copy of every record
set) made those round trips the largest cost of replication.
"""

from __future__ import annotations

import struct
from typing import Any

from construct import Container, ListContainer

from protocol.errors import ProtocolError
from protocol.fast_reader import I16, I32, I64, Reader, string_bytes

VERSIONS = range(4, 12)

_REQUEST_HEAD = struct.Struct(">iiiib")
_SESSION = struct.Struct(">ii")
_ABORTED = struct.Struct(">qq")
_PARTITION_HEAD = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset


def decode_fetch_request(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Container:
    """Decode a Fetch v4-11 request body starting at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = r.unpack(_REQUEST_HEAD)
        out = Container(
            replica_id=replica_id,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=isolation_level,
        )
        if version >= 7:
            out.session_id, out.session_epoch = r.unpack(_SESSION)
        topics = ListContainer()
        for _ in range(r.count()):
            topic = r.string()
            partitions = ListContainer()
            for _ in range(r.count()):
                p = Container(partition=r.i32())
                if version >= 9:
                    p.current_leader_epoch = r.i32()
                p.fetch_offset = r.i64()
                if version >= 5:
                    p.log_start_offset = r.i64()
                p.partition_max_bytes = r.i32()
                partitions.append(p)
            topics.append(Container(topic=topic, partitions=partitions))
        out.topics = topics
        if version >= 7:
            forgotten = ListContainer()
            for _ in range(r.count()):
                topic = r.string()
                forgotten.append(
                    Container(topic=topic, partitions=ListContainer(r.i32() for _ in range(r.count())))
                )
            out.forgotten_topics_data = forgotten
        if version >= 11:
            out.rack_id = r.string()
    except struct.error:
        raise ProtocolError(f"fetch request truncated at byte {r.pos} of {r.end}") from None
    return out


def decode_fetch_response(buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> Container:
    """Decode a Fetch v4-11 response body starting at ``buf[pos]``; ProtocolError if malformed."""
    r = Reader(buf, pos)
    try:
        out = Container(throttle_time_ms=r.i32())
        if version >= 7:
            (out.error_code,) = r.unpack(I16)
            out.session_id = r.i32()
        responses = ListContainer()
        for _ in range(r.count()):
            topic = r.string()
            partitions = ListContainer()
            for _ in range(r.count()):
                index, error_code, hw, lso = r.unpack(_PARTITION_HEAD)
                p = Container(
                    partition_index=index, error_code=error_code, high_watermark=hw, last_stable_offset=lso
                )
                if version >= 5:
                    p.log_start_offset = r.i64()
                n = r.count(nullable=True)
                if n < 0:
                    p.aborted_transactions = None
                else:
                    aborted = ListContainer()
                    for _ in range(n):
                        producer_id, first_offset = r.unpack(_ABORTED)
                        aborted.append(Container(producer_id=producer_id, first_offset=first_offset))
                    p.aborted_transactions = aborted
                if version >= 11:
                    p.preferred_read_replica = r.i32()
                p.records = r.nullable_bytes()
                partitions.append(p)
            responses.append(Container(topic=topic, partitions=partitions))
        out.responses = responses
    except struct.error:
        raise ProtocolError(f"fetch response truncated at byte {r.pos} of {r.end}") from None
    return out


# -- responses: encoded with precompiled structs, record sets passed through as their own chunks --
_I16_I32 = struct.Struct(">hi")
_NULL = b"\xff\xff\xff\xff"
_SMALL_RECORDS = 4096  # record sets up to this size are copied into the header buffer


def encode_response_parts(version: int, r: dict[str, Any]) -> list[bytes]:
    """Encode a Fetch response body as a list of chunks whose concatenation is the schema's RESPONSE[version].build(r).

    The hot path of consumption: record sets (often megabytes) are passed
    through as their own chunks instead of being copied into one buffer, so a
    response costs one pass over its headers and no copy of its records.
    """
    if version not in VERSIONS:
        raise ProtocolError(f"Fetch v{version} has no fast encoder")
    parts: list[bytes] = []
    out = bytearray(I32.pack(r["throttle_time_ms"]))
    if version >= 7:
        out += _I16_I32.pack(r["error_code"], r["session_id"])
    out += I32.pack(len(r["responses"]))
    for t in r["responses"]:
        out += string_bytes(t["topic"])
        out += I32.pack(len(t["partitions"]))
        for p in t["partitions"]:
            out += _PARTITION_HEAD.pack(
                p["partition_index"], p["error_code"], p["high_watermark"], p["last_stable_offset"]
            )
            if version >= 5:
                out += I64.pack(p["log_start_offset"])
            aborted = p["aborted_transactions"]
            if aborted is None:
                out += _NULL
            else:
                out += I32.pack(len(aborted))
                for a in aborted:
                    out += _ABORTED.pack(a["producer_id"], a["first_offset"])
            if version >= 11:
                out += I32.pack(p["preferred_read_replica"])
            records = p["records"]
            if records is None:
                out += _NULL
                continue
            out += I32.pack(len(records))
            if len(records) <= _SMALL_RECORDS:
                out += records
            else:
                parts.append(bytes(out))
                parts.append(records)
                out = bytearray()
    parts.append(bytes(out))
    return parts
