"""EndTxn (key 26): versions 0-1, both with the same layout.

`committed` true commits the transaction, false aborts it.
"""

from __future__ import annotations

from protocol.primitives import Bool, Int16, Int32, Int64, String
from protocol.schema import Field, versions

API_KEY = 26
NAME = "EndTxn"

REQUEST_FIELDS = [
    Field("transactional_id", String),
    Field("producer_id", Int64),
    Field("producer_epoch", Int16),
    Field("committed", Bool),
]

RESPONSE_FIELDS = [
    Field("throttle_time_ms", Int32),
    Field("error_code", Int16),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
