"""SaslAuthenticate (key 36): versions 0-1.

`auth_bytes` carries one opaque SASL token each way.

Version notes:
- v1: response adds session_lifetime_ms (0 = no re-authentication needed).
"""

from __future__ import annotations

from protocol.primitives import Bytes, Int16, Int64, NullableString
from protocol.schema import Field, versions

API_KEY = 36
NAME = "SaslAuthenticate"

REQUEST_FIELDS = [
    Field("auth_bytes", Bytes),
]

RESPONSE_FIELDS = [
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("auth_bytes", Bytes),
    Field("session_lifetime_ms", Int64, 1),
]

REQUEST = versions(REQUEST_FIELDS, 0, 1)
RESPONSE = versions(RESPONSE_FIELDS, 0, 1)
