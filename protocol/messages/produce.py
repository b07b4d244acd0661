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
