"""AddOffsetsToTxn (key 25): versions 0-1, both with the same layout."""

from __future__ import annotations

from protocol.primitives import Int16, Int32, Int64, String
from protocol.schema import Field, versions

API_KEY = 25
NAME = "AddOffsetsToTxn"

REQUEST_FIELDS = [
    Field("transactional_id", String),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("group_id", String),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
