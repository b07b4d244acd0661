"""OffsetCommit (key 8): versions 2-3.

`generation_id_or_member_epoch` is Kafka's current name for the classic
generation id (GenerationIdOrMemberEpoch in the message definitions).
`retention_time_ms` -1 means the broker default retention.

Version notes:
- v2: base layout (retention_time_ms present; it is dropped again in v5).
- v3: response adds throttle_time_ms.
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 8
NAME = "OffsetCommit"

REQUEST_FIELDS = [
    Field("group_id", String),
    Field("generation_id_or_member_epoch", Int32),
    Field("member_id", String),
    Field("retention_time_ms", Int64),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("committed_offset", Int64),
                    Field("committed_metadata", NullableString),
                ),
            ),
        ),
    ),
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
                    Field("error_code", Int16),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 2, 3)
RESPONSE = versions(RESPONSE_FIELDS, 2, 3)
