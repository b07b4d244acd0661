"""CreatePartitions (key 37): versions 0-1, both with the same layout.

Layout from Kafka's CreatePartitionsRequest/Response.json (not in
protocol-layouts.md). `count` is the new total partition count; `assignments`
is nullable (null = let the broker place the new partitions), otherwise one
entry of broker ids per new partition.
"""

from __future__ import annotations

from protocol.primitives import Array, Bool, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 37
NAME = "CreatePartitions"

REQUEST_FIELDS = [
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field("count", Int32),
            Field(
                "assignments",
                ArrayOf(Field("broker_ids", Array(Int32)), nullable=True),
            ),
        ),
    ),
    Field("timeout_ms", Int32),
    Field("validate_only", Bool),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "results",
        ArrayOf(
            Field("name", String),
            Field("error_code", Int16),
            Field("error_message", NullableString),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
