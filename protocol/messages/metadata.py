"""Metadata (key 3): versions 0-5.

Request `topics`: v0 is a non-nullable array where empty means all topics; v1+
is nullable, null meaning all topics and empty meaning none.

Version notes:
- v1+: brokers add rack; response adds controller_id; topics add is_internal.
- v2+: response adds cluster_id.
- v3+: response starts with throttle_time_ms.
- v4+: request adds allow_auto_topic_creation.
- v5: partitions add offline_replicas.
"""

from __future__ import annotations

from protocol.primitives import Array, Bool, Int16, Int32, NullableString, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 3
NAME = "Metadata"

REQUEST_FIELDS = [
    Field("topics", ArrayOf(Field("name", String)), 0, 0),
    Field("topics", ArrayOf(Field("name", String), nullable=True), 1),
    Field("allow_auto_topic_creation", Bool, 4),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32, 3),
    Field(
        "brokers",
        ArrayOf(
            Field("node_id", Int32),
            Field("host", String),
            Field("port", Int32),
            Field("rack", NullableString, 1),
        ),
    ),
    Field("cluster_id", NullableString, 2),
    Field("controller_id", Int32, 1),
    Field(
        "topics",
        ArrayOf(
            Field("error_code", Int16),
            Field("name", String),
            Field("is_internal", Bool, 1),
            Field(
                "partitions",
                ArrayOf(
                    Field("error_code", Int16),
                    Field("partition_index", Int32),
                    Field("leader_id", Int32),
                    Field("replica_nodes", Array(Int32)),
                    Field("isr_nodes", Array(Int32)),
                    Field("offline_replicas", Array(Int32), 5),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 5)
RESPONSE = versions(RESPONSE_FIELDS, 0, 5)
