"""OffsetForLeaderEpoch (key 23): versions 2-3.

Version notes:
- v2: base layout here (request partitions carry current_leader_epoch; response
  has throttle_time_ms and per-partition leader_epoch).
- v3: request adds replica_id (-1 when sent by a consumer).
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 23
NAME = "OffsetForLeaderEpoch"

REQUEST_FIELDS = [
    Field("replica_id", Int32, 3),
    Field(
        "topics",
        ArrayOf(
            Field("topic", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("partition", Int32),
                    Field("current_leader_epoch", Int32),
                    Field("leader_epoch", Int32),
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
            Field("topic", String),
            Field(
                "partitions",
                ArrayOf(
                    Field("error_code", Int16),
                    Field("partition", Int32),
                    Field("leader_epoch", Int32),
                    Field("end_offset", Int64),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 2, 3)
RESPONSE = versions(RESPONSE_FIELDS, 2, 3)
