"""DescribeGroups (key 15): versions 0-3.

Version notes:
- v1+: response adds throttle_time_ms.
- v2: same layout as v1.
- v3: request adds include_authorized_operations; groups add authorized_operations.
"""

from __future__ import annotations

from protocol.primitives import Array, Bool, Bytes, Int16, Int32, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 15
NAME = "DescribeGroups"

REQUEST_FIELDS = [
    Field("groups", Array(String)),
    Field("include_authorized_operations", Bool, 3),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 1),
    Field(
        "groups",
        ArrayOf(
            Field("error_code", Int16),
            Field("group_id", String),
            Field("group_state", String),
            Field("protocol_type", String),
            Field("protocol_data", String),
            Field(
                "members",
                ArrayOf(
                    Field("member_id", String),
                    Field("client_id", String),
                    Field("client_host", String),
                    Field("member_metadata", Bytes),
                    Field("member_assignment", Bytes),
                ),
            ),
            Field("authorized_operations", Int32, 3),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 3)
RESPONSE = versions(RESPONSE_FIELDS, 0, 3)
