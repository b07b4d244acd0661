"""ListGroups (key 16): versions 0-2.

The request body is empty in every supported version.

Version notes:
- v1+: response adds throttle_time_ms.
- v2: same layout as v1.
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 16
NAME = "ListGroups"

REQUEST_FIELDS: list[Field] = []

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 1),
    Field("error_code", Int16),
    Field(
        "groups",
        ArrayOf(
            Field("group_id", String),
            Field("protocol_type", String),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 2)
RESPONSE = versions(RESPONSE_FIELDS, 0, 2)
