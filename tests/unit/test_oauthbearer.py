"""SASL/OAUTHBEARER with Kafka's unsecured JWT validator: messages, claims, the error challenge."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from broker.security.oauthbearer import OAuthBearerServer
from protocol.scram import SaslAuthenticationError

NOW = 1_800_000_000.0


def _b64(doc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()


def token(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}."


def message(tok: str, authzid: str = "", extra: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01{extra}auth=Bearer {tok}\x01\x01".encode()


def server(**options: str) -> OAuthBearerServer:
    return OAuthBearerServer(options, now=lambda: NOW)


def test_a_valid_token_authenticates_its_subject() -> None:
    s = server()
    assert s.step(message(token({"sub": "alice", "exp": NOW + 60, "iat": NOW}), extra="x=1\x01")) == b""
    assert (s.complete, s.username, s.expires_ms) == (True, "alice", int((NOW + 60) * 1000))


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "alice", "exp": NOW - 1},  # expired
        {"sub": "alice"},  # no exp
        {"exp": NOW + 60},  # no principal
        {"sub": "alice", "exp": NOW + 60, "iat": NOW + 30},  # issued in the future
        {"sub": 7, "exp": NOW + 60},
    ],
)
def test_invalid_tokens_get_the_json_challenge_then_fail(claims: dict[str, Any]) -> None:
    s = server()
    assert json.loads(s.step(message(token(claims)))) == {"status": "invalid_token"}
    assert not s.complete
    with pytest.raises(SaslAuthenticationError, match="invalid_token"):
        s.step(b"\x01")


def test_a_signed_token_is_not_unsecured() -> None:
    s = server()
    assert b"invalid_token" in s.step(message(token({"sub": "a", "exp": NOW + 9}, {"alg": "RS256"})))


def test_options_rename_claims_require_scopes_and_allow_skew() -> None:
    s = server(unsecuredValidatorPrincipalClaimName="user", unsecuredValidatorRequiredScope="kafka,read")
    assert json.loads(s.step(message(token({"user": "bob", "exp": NOW + 9, "scope": "kafka"})))) == {
        "status": "insufficient_scope",
        "scope": "kafka read",
    }
    s = server(unsecuredValidatorPrincipalClaimName="user", unsecuredValidatorRequiredScope="kafka,read")
    assert s.step(message(token({"user": "bob", "exp": NOW + 9, "scope": ["read", "kafka"]}))) == b""
    s = server(unsecuredValidatorAllowableClockSkewMs="5000")
    assert s.step(message(token({"sub": "c", "exp": NOW - 2}))) == b""


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"y,,\x01auth=Bearer x\x01\x01",
        b"n,,auth=Bearer x\x01\x01",
        b"n,,\x01auth=Bearer x\x01",
        b"n,,\x01auth=Basic abc\x01\x01",
        b"n,,\x01\x01",
        b"n,,\x01bad key=1\x01auth=Bearer x\x01\x01",
        b"\xff\xfe",
        b"\x01",  # the error reply with no error pending
    ],
)
def test_malformed_messages_fail_at_once(raw: bytes) -> None:
    with pytest.raises(SaslAuthenticationError):
        server().step(raw)


def test_an_authorization_id_must_be_the_principal() -> None:
    with pytest.raises(SaslAuthenticationError, match="different from the token's principal"):
        server().step(message(token({"sub": "alice", "exp": NOW + 9}), authzid="admin"))
    s = server()
    assert s.step(message(token({"sub": "alice", "exp": NOW + 9}), authzid="alice")) == b""
