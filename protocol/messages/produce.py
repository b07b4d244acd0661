"""Produce (key 0): versions 3-7.

Versions 0-2 are advertised (old librdkafka enables gzip/snappy/lz4 only when it
sees Produce v0) but the broker rejects them, so they have no schema here.
`records` is one RecordBatch v2 stream, kept as opaque `bytes` (null allowed).

Version notes:
- v3-v4: partition response is index, error_code, base_offset, log_append_time_ms.
- v5+: partition responses add log_start_offset.
- v6, v7: same layout as v5 (v7 permits zstd batches).
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.errors import ProtocolError
from protocol.primitives import Int16, Int32, Int64, NullableString, Records, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 0
NAME = "Produce"

REQUEST_FIELDS = [
    Field("transactional_id", NullableString),
    Field("acks", Int16),
    Field("timeout_ms", Int32),
    Field(
        "topic_data",
        ArrayOf(
            Field("name", String),
            Field(
                "partition_data",
                ArrayOf(
                    Field("index", Int32),
                    Field("records", Records),
                ),
            ),
        ),
    ),
]

RESPONSE_FIELDS = [
    Field(
        "responses",
        ArrayOf(
            Field("name", String),
            Field(
                "partition_responses",
                ArrayOf(
                    Field("index", Int32),
                    Field("error_code", Int16),
                    Field("base_offset", Int64),
                    Field("log_append_time_ms", Int64),
                    Field("log_start_offset", Int64, 5),
                ),
            ),
        ),
    ),
    Field("throttle_time_ms", Int32),
]

REQUEST = versions(REQUEST_FIELDS, 3, 7)
RESPONSE = versions(RESPONSE_FIELDS, 3, 7)


# -- the hot path: responses built with precompiled structs ----------------------------------------
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log_start_offset


def encode_response_parts(version: int, obj: dict[str, Any]) -> list[bytes]:
    """The response as one chunk, byte for byte what RESPONSE[version] builds, without construct.

    Called for every Produce answer (protocol.messages.encode_response_parts);
    struct and type errors become ProtocolError there, and a topic name over
    32767 UTF-8 bytes raises it here, as the schema's String does.
    """
    out = bytearray()
    topics = obj["responses"]
    out += _I32.pack(len(topics))
    for topic in topics:
        name = topic["name"].encode("utf-8")
        if len(name) > 0x7FFF:
            raise ProtocolError(f"string too long: {len(name)}")
        out += _I16.pack(len(name))
        out += name
        parts = topic["partition_responses"]
        out += _I32.pack(len(parts))
        for p in parts:
            if version >= 5:
                out += _PARTITION_V5.pack(
                    p["index"],
                    p["error_code"],
                    p["base_offset"],
                    p["log_append_time_ms"],
                    p["log_start_offset"],
                )
            else:
                out += _PARTITION_V3.pack(
                    p["index"], p["error_code"], p["base_offset"], p["log_append_time_ms"]
                )
    out += _I32.pack(obj["throttle_time_ms"])
    return [bytes(out)]
