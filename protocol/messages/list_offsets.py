"""ListOffsets (key 2): versions 1-3.

Request timestamp -2 asks for the earliest offset, -1 for the latest, anything
else for the first offset whose timestamp is >= it.

Version notes:
- v1: base layout (one offset per partition, no max_num_offsets).
- v2+: request adds isolation_level; response adds throttle_time_ms.
- v3: same layout as v2.
"""

from __future__ import annotations

from protocol.primitives import Int8, Int16, Int32, Int64, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 2
NAME = "ListOffsets"

REQUEST_FIELDS = [
    Field("replica_id", Int32),
    Field("isolation_level", Int8, 2),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("timestamp", Int64),
                ),
            ),
        ),
    ),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 2),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("error_code", Int16),
                    Field("timestamp", Int64),
                    Field("offset", Int64),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 1, 3)
RESPONSE = versions(RESPONSE_FIELDS, 1, 3)
