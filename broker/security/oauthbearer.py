"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured JWT validator, sans I/O.

The client's one message: ``n,[a=<authzid>],`` ``\\x01`` then ``key=value\\x01``
pairs, among them ``auth=Bearer <token>``, then a final ``\\x01``. The token is
an unsecured JWS (``<base64url header>.<base64url claims>.``, header
``{"alg":"none"}``), validated as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
does: the principal claim (``sub``, or the JAAS option
``unsecuredValidatorPrincipalClaimName``) is a string; ``exp`` is a number in
the future; ``iat``, when present, is a number not in the future; both with
``unsecuredValidatorAllowableClockSkewMs``; with
``unsecuredValidatorRequiredScope`` (a comma-separated list), the scope claim
(``scope`` or ``unsecuredValidatorScopeClaimName``, a string or a list)
holds every required scope.

An invalid token is answered, as Kafka does, with a JSON error challenge
(``{"status":"invalid_token"}``, or ``insufficient_scope`` with the scope);
the client's ``\\x01`` reply then fails the exchange with that JSON as the
message. A malformed message fails at once. Once complete, ``username`` is
the principal claim and ``expires_ms`` the token's expiry (the session ends
there at the latest: KIP-368).

Unsecured tokens are meant for development and tests, as in Kafka: anyone can
make one for any principal.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from protocol.scram import SaslAuthenticationError

MECHANISM = "OAUTHBEARER"
MAX_MESSAGE_SIZE = 65536
_SEPARATOR = "\x01"
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_KEY = re.compile(r"[A-Za-z]+")


class OAuthBearerServer:
    """One OAUTHBEARER exchange (module docstring); ``options`` are the listener's JAAS options."""

    mechanism = MECHANISM

    def __init__(self, options: Mapping[str, str], now: Callable[[], float] = time.time) -> None:
        self._principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub"
        self._scope_claim = options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope"
        required = options.get("unsecuredValidatorRequiredScope", "")
        self._required_scope = [s for s in (x.strip() for x in required.split(",")) if s]
        self._skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0").strip() or 0)
        self._now = now
        self._error: str | None = None
        self.complete = False
        self.username: str | None = None
        self.expires_ms: int | None = None

    def step(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslAuthenticationError(self._error)
        self._error = None
        if len(token) > MAX_MESSAGE_SIZE:
            raise SaslAuthenticationError("Invalid OAUTHBEARER client first message: too long")
        authzid, pairs = _parse_initial_response(token)
        match = _AUTH.fullmatch(pairs.get("auth", ""))
        if match is None or match["scheme"] != "Bearer":
            raise SaslAuthenticationError("Invalid OAUTHBEARER client first message: no Bearer token")
        try:
            principal, expires_ms = self._validate(match["token"])
        except _InvalidToken as exc:
            self._error = json.dumps(exc.challenge, separators=(",", ":"))
            return self._error.encode()
        if authzid and authzid != principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is"
                f" different from the token's principal name ({principal})"
            )
        self.complete, self.username, self.expires_ms = True, principal, expires_ms
        return b""

    def _validate(self, token: str) -> tuple[str, int]:
        """(principal, expiry in ms) of an unsecured JWS; `_InvalidToken` otherwise."""
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise _InvalidToken()
        header, claims = _json_part(parts[0]), _json_part(parts[1])
        if header.get("alg") != "none":
            raise _InvalidToken()
        now_ms = self._now() * 1000
        principal = claims.get(self._principal_claim)
        exp = claims.get("exp")
        if not isinstance(principal, str) or not principal.strip() or not _number(exp):
            raise _InvalidToken()
        expires_ms = int(float(exp) * 1000)
        if now_ms > expires_ms + self._skew_ms:
            raise _InvalidToken()
        iat = claims.get("iat")
        if iat is not None and (not _number(iat) or float(iat) * 1000 > now_ms + self._skew_ms):
            raise _InvalidToken()
        if self._required_scope:
            granted = claims.get(self._scope_claim)
            scopes = granted.split() if isinstance(granted, str) else granted
            if not isinstance(scopes, list) or any(s not in scopes for s in self._required_scope):
                raise _InvalidToken({"status": "insufficient_scope", "scope": " ".join(self._required_scope)})
        return principal, expires_ms


class _InvalidToken(Exception):
    def __init__(self, challenge: dict[str, str] | None = None) -> None:
        super().__init__()
        self.challenge = challenge or {"status": "invalid_token"}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_part(part: str) -> dict[str, Any]:
    try:
        doc = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise _InvalidToken() from None
    if not isinstance(doc, dict):
        raise _InvalidToken()
    return doc


def _parse_initial_response(token: bytes) -> tuple[str, dict[str, str]]:
    """(authzid, {key: value}) of a client initial response; SaslAuthenticationError if malformed."""
    bad = SaslAuthenticationError("Invalid OAUTHBEARER client first message")
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise bad from None
    header, sep, rest = text.partition(_SEPARATOR)
    if not sep or not rest.endswith(_SEPARATOR * 2) and rest != _SEPARATOR:
        raise bad
    gs2 = header.split(",")
    if len(gs2) != 3 or gs2[0] != "n" or gs2[2] or (gs2[1] and not gs2[1].startswith("a=")):
        raise bad
    pairs = {}
    for item in rest[:-1].split(_SEPARATOR)[:-1] if rest != _SEPARATOR else []:
        key, eq, value = item.partition("=")
        if not eq or _KEY.fullmatch(key) is None:
            raise bad
        pairs[key] = value
    return gs2[1][2:], pairs
