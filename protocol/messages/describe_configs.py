"""DescribeConfigs (key 32): versions 1-2, both with the same layout.

`configuration_keys` null means every config of the resource. resource_type:
2 topic, 4 broker. config_source / synonym source use Kafka's ConfigSource ids
(e.g. 1 dynamic topic, 5 default).
"""

from __future__ import annotations

from protocol.primitives import Array, Bool, Int8, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 32
NAME = "DescribeConfigs"

REQUEST_FIELDS = [
    Field(
        "resources",
        ArrayOf(
            Field("resource_type", Int8),
            Field("resource_name", String),
            Field("configuration_keys", Array(String, nullable=True)),
        ),
    ),
    Field("include_synonyms", Bool),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "results",
        ArrayOf(
            Field("error_code", Int16),
            Field("error_message", NullableString),
            Field("resource_type", Int8),
            Field("resource_name", String),
            Field(
                "configs",
                ArrayOf(
                    Field("name", String),
                    Field("value", NullableString),
                    Field("read_only", Bool),
                    Field("config_source", Int8),
                    Field("is_sensitive", Bool),
                    Field(
                        "synonyms",
                        ArrayOf(
                            Field("name", String),
                            Field("value", NullableString),
                            Field("source", Int8),
                        ),
                    ),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 1, 2)
RESPONSE = versions(RESPONSE_FIELDS, 1, 2)
