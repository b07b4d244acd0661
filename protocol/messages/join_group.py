"""JoinGroup (key 11): versions 0-5.

`metadata` (per protocol and per member) is the opaque consumer-protocol
subscription; only the leader's response carries a non-empty `members`.

Version notes:
- v1+: request adds rebalance_timeout_ms.
- v2+: response adds throttle_time_ms.
- v3, v4: same layout as v2 (v4 may answer MEMBER_ID_REQUIRED).
- v5: static membership: request and response members add group_instance_id.
"""

from __future__ import annotations

from protocol.primitives import Bytes, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 11
NAME = "JoinGroup"

REQUEST_FIELDS = [
    Field("group_id", String),
    Field("session_timeout_ms", Int32),
    Field("rebalance_timeout_ms", Int32, 1),
    Field("member_id", String),
    Field("group_instance_id", NullableString, 5),
    Field("protocol_type", String),
    Field(
        "protocols",
        ArrayOf(
            Field("name", String),
            Field("metadata", Bytes),
        ),
    ),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 2),
    Field("error_code", Int16),
    Field("generation_id", Int32),
    Field("protocol_name", String),
    Field("leader", String),
    Field("member_id", String),
    Field(
        "members",
        ArrayOf(
            Field("member_id", String),
            Field("group_instance_id", NullableString, 5),
            Field("metadata", Bytes),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 5)
RESPONSE = versions(RESPONSE_FIELDS, 0, 5)
