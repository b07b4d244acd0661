"""SyncGroup (key 14): versions 0-3.

`assignment` values are the opaque consumer-protocol assignment bytes; only the
leader sends a non-empty `assignments` array.

Version notes:
- v1+: response adds throttle_time_ms.
- v2: same layout as v1.
- v3: request adds group_instance_id.
"""

from __future__ import annotations

from protocol.primitives import Bytes, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 14
NAME = "SyncGroup"

REQUEST_FIELDS = [
    Field("group_id", String),
    Field("generation_id", Int32),
    Field("member_id", String),
    Field("group_instance_id", NullableString, 3),
    Field(
        "assignments",
        ArrayOf(
            Field("member_id", String),
            Field("assignment", Bytes),
        ),
    ),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 1),
    Field("error_code", Int16),
    Field("assignment", Bytes),
]

REQUEST = versions(REQUEST_FIELDS, 0, 3)
RESPONSE = versions(RESPONSE_FIELDS, 0, 3)
