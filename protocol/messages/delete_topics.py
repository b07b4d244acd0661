"""DeleteTopics (key 20): versions 1-3, all with the same layout.

Version notes:
- v1: base layout here (throttle_time_ms present).
- v2, v3: same layout as v1.
"""

from __future__ import annotations

from protocol.primitives import Array, Int16, Int32, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 20
NAME = "DeleteTopics"

REQUEST_FIELDS = [
    Field("topic_names", Array(String)),
    Field("timeout_ms", Int32),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "responses",
        ArrayOf(
            Field("name", String),
            Field("error_code", Int16),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 1, 3)
RESPONSE = versions(RESPONSE_FIELDS, 1, 3)
