"""Fetch (key 1): versions 4-11.

`records` in each partition is a concatenation of RecordBatch v2 bytes, kept
opaque (null allowed). `aborted_transactions` is a nullable array.

Version notes:
- v4: base layout (isolation_level, last_stable_offset, aborted_transactions).
- v5+: request partitions add log_start_offset; response partitions add log_start_offset.
- v7+: incremental fetch sessions: request adds session_id, session_epoch and
  forgotten_topics_data; response adds top-level error_code and session_id.
- v9+: request partitions add current_leader_epoch.
- v11: request adds rack_id; response partitions add preferred_read_replica.
- v6, v8, v10: same layout as the version before.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.errors import ProtocolError
from protocol.primitives import Array, Int8, Int16, Int32, Int64, Records, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 1
NAME = "Fetch"

REQUEST_FIELDS = [
    Field("replica_id", Int32),
    Field("max_wait_ms", Int32),
    Field("min_bytes", Int32),
    Field("max_bytes", Int32),
    Field("isolation_level", Int8),
    Field("session_id", Int32, 7),
    Field("session_epoch", Int32, 7),
    Field(
        "topics",
        ArrayOf(
            Field("topic", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition", Int32),
                    Field("current_leader_epoch", Int32, 9),
                    Field("fetch_offset", Int64),
                    Field("log_start_offset", Int64, 5),
                    Field("partition_max_bytes", Int32),
                ),
            ),
        ),
    ),
    Field(
        "forgotten_topics_data",
        ArrayOf(
            Field("topic", String),
            Field("partitions", Array(Int32)),
        ),
        7,
    ),
    Field("rack_id", String, 11),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16, 7),
    Field("session_id", Int32, 7),
    Field(
        "responses",
        ArrayOf(
            Field("topic", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("error_code", Int16),
                    Field("high_watermark", Int64),
                    Field("last_stable_offset", Int64),
                    Field("log_start_offset", Int64, 5),
                    Field(
                        "aborted_transactions",
                        ArrayOf(
                            Field("producer_id", Int64),
                            Field("first_offset", Int64),
                            nullable=True,
                        ),
                    ),
                    Field("preferred_read_replica", Int32, 11),
                    Field("records", Records),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 4, 11)
RESPONSE = versions(RESPONSE_FIELDS, 4, 11)


_SMALL_RECORDS = 4096  # record sets up to this size are copied into the header buffer


def encode_response_parts(version: int, r: dict[str, Any]) -> list[bytes]:
    """Encode a Fetch response body as a list of chunks whose concatenation is RESPONSE[version].build(r).

    The hot path of consumption: record sets (often megabytes) are passed
    through as their own chunks instead of being copied into one buffer, so a
    response costs one pass over its headers and no copy of its records.
    """
    if version not in RESPONSE:
        raise ProtocolError(f"Fetch v{version} has no schema")
    parts: list[bytes] = []
    out = bytearray(_I32.pack(r["throttle_time_ms"]))
    if version >= 7:
        out += _I16_I32.pack(r["error_code"], r["session_id"])
    out += _I32.pack(len(r["responses"]))
    for t in r["responses"]:
        name = t["topic"].encode("utf-8")
        out += _I16.pack(len(name)) + name
        out += _I32.pack(len(t["partitions"]))
        for p in t["partitions"]:
            out += _PARTITION_HEAD.pack(
                p["partition_index"], p["error_code"], p["high_watermark"], p["last_stable_offset"]
            )
            if version >= 5:
                out += _I64.pack(p["log_start_offset"])
            aborted = p["aborted_transactions"]
            if aborted is None:
                out += _NULL
            else:
                out += _I32.pack(len(aborted))
                for a in aborted:
                    out += _ABORTED.pack(a["producer_id"], a["first_offset"])
            if version >= 11:
                out += _I32.pack(p["preferred_read_replica"])
            records = p["records"]
            if records is None:
                out += _NULL
                continue
            out += _I32.pack(len(records))
            if len(records) <= _SMALL_RECORDS:
                out += records
            else:
                parts.append(bytes(out))
                parts.append(records)
                out = bytearray()
    parts.append(bytes(out))
    return parts


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16_I32 = struct.Struct(">hi")
_PARTITION_HEAD = struct.Struct(">ihqq")
_ABORTED = struct.Struct(">qq")
_NULL = b"\xff\xff\xff\xff"
