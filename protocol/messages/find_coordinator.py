"""FindCoordinator (key 10): versions 0-2.

Version notes:
- v0: group coordinators only (`key` is the group id).
- v1+: request adds key_type (0 group, 1 transaction); response adds
  throttle_time_ms and error_message.
- v2: same layout as v1.
"""

from __future__ import annotations

from protocol.primitives import Int8, Int16, Int32, NullableString, String
from protocol.schema import Field, versions

API_KEY = 10
NAME = "FindCoordinator"

REQUEST_FIELDS = [
    Field("key", String),
    Field("key_type", Int8, 1),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 1),
    Field("error_code", Int16),
    Field("error_message", NullableString, 1),
    Field("node_id", Int32),
    Field("host", String),
    Field("port", Int32),
]

REQUEST = versions(REQUEST_FIELDS, 0, 2)
RESPONSE = versions(RESPONSE_FIELDS, 0, 2)
