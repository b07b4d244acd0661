"""CreateTopics (key 19): versions 2-4, all with the same layout.

`num_partitions` / `replication_factor` are -1 when `assignments` gives an
explicit replica assignment (or to take the broker defaults). The JSON
definition spells the last two request fields timeoutMs / validateOnly; they
become timeout_ms / validate_only here.
"""

from __future__ import annotations

from protocol.primitives import Array, Bool, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 19
NAME = "CreateTopics"

REQUEST_FIELDS = [
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field("num_partitions", Int32),
            Field("replication_factor", Int16),
            Field(
                "assignments",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("broker_ids", Array(Int32)),
                ),
            ),
            Field(
                "configs",
                ArrayOf(
                    Field("name", String),
                    Field("value", NullableString),
                ),
            ),
        ),
    ),
    Field("timeout_ms", Int32),
    Field("validate_only", Bool),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "topics",
        ArrayOf(
            Field("name", String),
            Field("error_code", Int16),
            Field("error_message", NullableString),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 2, 4)
RESPONSE = versions(RESPONSE_FIELDS, 2, 4)
