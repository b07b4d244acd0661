"""SaslHandshake (key 17): versions 0-1, both with the same layout.

After a v0 handshake the client sends raw SASL tokens (INT32 size prefix, no
Kafka request header); after v1 it wraps them in SaslAuthenticate requests.
The response lists the enabled mechanisms.
"""

from __future__ import annotations

from protocol.primitives import Array, Int16, String
from protocol.schema import Field, versions

API_KEY = 17
NAME = "SaslHandshake"

REQUEST_FIELDS = [
    Field("mechanism", String),
]

RESPONSE_FIELDS = [
    Field("error_code", Int16),
    Field("mechanisms", Array(String)),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
