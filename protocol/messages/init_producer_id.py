"""InitProducerId (key 22): versions 0-1, both with the same layout.

Mandatory for idempotent producers (kafka-python's default). A null
transactional_id asks for an idempotent-only producer id.
"""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, NullableString
from protocol.schema import Field, versions

API_KEY = 22
NAME = "InitProducerId"

REQUEST_FIELDS = [
    Field("transactional_id", NullableString),
    Field("transaction_timeout_ms", Int32),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
