"""IncrementalAlterConfigs (key 44): versions 0-0 (v1 is flexible, not served).

Each config carries an operation: 0 SET, 1 DELETE (back to the default),
2 APPEND and 3 SUBTRACT (for list-valued configs). resource_type: 2 topic, 4 broker.
"""

from __future__ import annotations

from protocol.messages.alter_configs import RESPONSE_FIELDS
from protocol.primitives import Bool, Int8, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 44
NAME = "IncrementalAlterConfigs"

REQUEST_FIELDS = [
    Field(
        "resources",
        ArrayOf(
            Field("resource_type", Int8),
            Field("resource_name", String),
            Field(
                "configs",
                ArrayOf(
                    Field("name", String), Field("config_operation", Int8), Field("value", NullableString)
                ),
            ),
        ),
    ),
    Field("validate_only", Bool),
]

REQUEST = versions(REQUEST_FIELDS, 0, 0)
RESPONSE = versions(RESPONSE_FIELDS, 0, 0)
