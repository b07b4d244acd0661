"""OffsetFetch (key 9): versions 1-3.

An unknown partition is answered with committed_offset -1 and error_code 0.

Version notes:
- v1: request `topics` is a non-nullable array.
- v2+: request `topics` is nullable (null = every partition the group committed);
  response adds a top-level error_code after `topics`.
- v3: response adds throttle_time_ms.
"""

from __future__ import annotations

from protocol.primitives import Array, Int16, Int32, Int64, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 9
NAME = "OffsetFetch"

_REQUEST_TOPIC = (
    Field("name", String),
    Field("partition_indexes", Array(Int32)),
)

REQUEST_FIELDS = [
    Field("group_id", String),
    Field("topics", ArrayOf(*_REQUEST_TOPIC), 0, 1),
    Field("topics", ArrayOf(*_REQUEST_TOPIC, nullable=True), 2),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 3),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("committed_offset", Int64),
                    Field("metadata", NullableString),
                    Field("error_code", Int16),
                ),
            ),
        ),
    ),
    Field("error_code", Int16, 2),
]

REQUEST = versions(REQUEST_FIELDS, 1, 3)
RESPONSE = versions(RESPONSE_FIELDS, 1, 3)
