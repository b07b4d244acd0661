"""DeleteGroups (key 42): versions 0-1, both with the same layout.

Layout from Kafka's DeleteGroupsRequest/Response.json (not in
protocol-layouts.md). The request field is spelled GroupsNames in Kafka, hence
`groups_names`.
"""

from __future__ import annotations

from protocol.primitives import Array, Int16, Int32, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 42
NAME = "DeleteGroups"

REQUEST_FIELDS = [
    Field("groups_names", Array(String)),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "results",
        ArrayOf(
            Field("group_id", String),
            Field("error_code", Int16),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
