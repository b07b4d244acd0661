"""AlterConfigs (key 33): versions 0-1, both with the same layout (v2 is flexible, not served).

Replaces the whole set of dynamic configs of each resource: configs left out
return to their defaults. resource_type: 2 topic, 4 broker.
"""

from __future__ import annotations

from protocol.primitives import Bool, Int8, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 33
NAME = "AlterConfigs"

REQUEST_FIELDS = [
    Field(
        "resources",
        ArrayOf(
            Field("resource_type", Int8),
            Field("resource_name", String),
            Field("configs", ArrayOf(Field("name", String), Field("value", NullableString))),
        ),
    ),
    Field("validate_only", Bool),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "responses",
        ArrayOf(
            Field("error_code", Int16),
            Field("error_message", NullableString),
            Field("resource_type", Int8),
            Field("resource_name", String),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
