"""DeleteRecords (key 21): versions 0-1, both with the same layout.

Layout from Kafka's DeleteRecordsRequest/Response.json (not in
protocol-layouts.md). `offset` -1 means the high watermark.
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 21
NAME = "DeleteRecords"

REQUEST_FIELDS = [
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("offset", Int64),
                ),
            ),
        ),
    ),
    Field("timeout_ms", Int32),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("low_watermark", Int64),
                    Field("error_code", Int16),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
