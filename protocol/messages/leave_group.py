"""LeaveGroup (key 13): versions 0-1.

Version notes:
- v0: one member leaves (group_id, member_id).
- v1: response adds throttle_time_ms.
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, String
from protocol.schema import Field, versions

API_KEY = 13
NAME = "LeaveGroup"

REQUEST_FIELDS = [
    Field("group_id", String),
    Field("member_id", String),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 1),
    Field("error_code", Int16),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
