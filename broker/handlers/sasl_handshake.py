"""SaslHandshake: v0-1.

Behavior:
- On a SASL listener: starts an exchange with the named mechanism when the
  listener enables it (``sasl.enabled.mechanisms``); answers the enabled
  mechanisms either way. A mechanism it does not enable answers
  UNSUPPORTED_SASL_MECHANISM and the connection closes after the answer, as
  Kafka's authenticator does. After authentication, a handshake starts a
  re-authentication (KIP-368) with the same mechanism.
- A handshake while an exchange is under way answers ILLEGAL_SASL_STATE and
  closes the connection.
- On a listener without SASL: ILLEGAL_SASL_STATE (Kafka's KafkaApis answer).
Version notes: v0 is followed by bare SASL tokens (``INT32 size`` + bytes,
answered the same way) instead of SaslAuthenticate requests; v1 by
SaslAuthenticate.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from protocol.errors import ErrorCode

API_KEY = 17


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    session = ctx.session
    security = session.security
    enabled = list(security.mechanisms)
    if not security.sasl:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    if session.server is not None:
        session.close_after_response = True
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled}
    if not session.handshake(req.mechanism, ctx.version):
        session.close_after_response = True
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
    return {"error_code": 0, "mechanisms": enabled}


registry.register(API_KEY, 0, 1, handle)
