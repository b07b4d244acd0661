"""TxnOffsetCommit (key 28): versions 0-1, both with the same layout."""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 28
NAME = "TxnOffsetCommit"

REQUEST_FIELDS = [
    Field("transactional_id", String),
    Field("group_id", String),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
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
    Field("throttle_time_ms", Int32),
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

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
