"""SaslAuthenticate: v0-2.

Behavior:
- Carries one token of the exchange SaslHandshake started; answers the
  mechanism's reply token. Once the exchange completes the connection is
  authenticated as ``User:<name>``.
- A failed exchange (wrong password, unknown user, malformed token) answers
  SASL_AUTHENTICATION_FAILED with Kafka's message after
  ``connection.failed.authentication.delay.ms``, then the connection closes.
- Without a handshake first, or on a listener without SASL: ILLEGAL_SASL_STATE
  (and on a SASL listener the connection closes).
- v1+: ``session_lifetime_ms`` is ``connections.max.reauth.ms`` (0: the
  session does not expire); the client re-authenticates before it ends.
Version notes: v2 is flexible.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.mechanisms import SaslAuthenticationError
from protocol.errors import ErrorCode

API_KEY = 36

log = logging.getLogger("minikafka.security")


def _answer(error: int, message: str | None, token: bytes = b"", lifetime_ms: int = 0) -> dict[str, Any]:
    return {
        "error_code": error,
        "error_message": message,
        "auth_bytes": token,
        "session_lifetime_ms": lifetime_ms,
    }


async def _delayed(delay_s: float, answer: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(delay_s)
    return answer


def handle(ctx: RequestContext, req: Any) -> dict[str, Any] | Any:
    session = ctx.session
    if not session.security.sasl or session.server is None or session.raw_tokens:
        if session.security.sasl:
            session.close_after_response = True
        return _answer(ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate without a SaslHandshake before it")
    try:
        token = session.step(bytes(req.auth_bytes))
    except SaslAuthenticationError as exc:
        log.info("SASL authentication from %s failed: %s", ctx.peer, getattr(exc, "reason", exc))
        failed = _answer(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
        return _delayed(ctx.broker.security.failed_auth_delay_s, failed)
    return _answer(0, None, token, session.session_lifetime_ms)


registry.register(API_KEY, 0, 2, handle)
