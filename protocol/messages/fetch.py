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
