"""AddPartitionsToTxn (key 24): versions 0-1, both with the same layout.

Field names keep Kafka's current JSON names, which carry a "V3AndBelow" marker
because v4+ batches several transactions: v3_and_below_transactional_id,
v3_and_below_producer_id, v3_and_below_producer_epoch, v3_and_below_topics in
the request, results_by_topic_v3_and_below in the response.
"""

from __future__ import annotations

from protocol.primitives import Array, Int16, Int32, Int64, String
from protocol.schema import ArrayOf, Field, versions

API_KEY = 24
NAME = "AddPartitionsToTxn"

REQUEST_FIELDS = [
    Field("v3_and_below_transactional_id", String),
    Field("v3_and_below_producer_id", Int64),
    Field("v3_and_below_producer_epoch", Int16),
    Field(
        "v3_and_below_topics",
        ArrayOf(
            Field("name", String),
            Field("partitions", Array(Int32)),
        ),
    ),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field(
        "results_by_topic_v3_and_below",
        ArrayOf(
            Field("name", String),
            Field(
                "results_by_partition",
                ArrayOf(
                    Field("partition_index", Int32),
                    Field("partition_error_code", Int16),
                ),
            ),
        ),
    ),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
