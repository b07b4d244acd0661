"""The client's side of SASL/PLAIN and SASL/SCRAM-SHA-256/512, sans I/O.

Used by the bundled client (client/security.py) and by brokers logging in to
each other on a SASL inter-broker listener (broker/replica/link.py).

Each client yields the tokens to send in SaslAuthenticate requests and checks
the broker's answers:

- `PlainClient`: one token, ``authzid NUL username NUL password`` (authzid
  empty, as Kafka's client sends); the broker answers b"" and that is all.
- `ScramClient`: ``first()`` is client-first (``n,,n=<user>,r=<nonce>``),
  ``final(server_first)`` client-final, ``verify(server_final)`` checks the
  broker's signature, which proves it knows the user's ServerKey.

``respond(challenge)`` drives either one generically: it returns the next token,
or None once the exchange is complete. Failures raise
`protocol.scram.SaslAuthenticationError` with a one-line reason, among them:
a server nonce that does not extend the client's, an iteration count outside
[4096, 16384] (Kafka's client checks only the minimum; the maximum keeps a
hostile server from making the client spin), an ``e=`` error, a wrong
signature. Calling the steps out of order raises RuntimeError.
"""

from __future__ import annotations

import hmac
from typing import Protocol

from protocol import scram as p
from protocol.scram import SaslAuthenticationError

__all__ = ["SUPPORTED", "PlainClient", "SaslAuthenticationError", "SaslClient", "ScramClient", "new_client"]

SUPPORTED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SaslClient(Protocol):
    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    def first(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None: ...


class PlainClient:
    """SASL/PLAIN for ``username`` and ``password``."""

    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        if not username or not password or "\0" in username or "\0" in password:
            raise ValueError("PLAIN needs a non-empty username and password without NUL characters")
        self._username = username
        self._password = password
        self._sent = False
        self.complete = False

    def first(self) -> bytes:
        self._sent = True
        return f"\0{self._username}\0{self._password}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if not self._sent:
            raise RuntimeError("PlainClient.respond before first()")
        self.complete = True
        return None


class ScramClient:
    """SASL/SCRAM for ``username`` and ``password``; ``nonce`` fixes the client nonce (tests only)."""

    def __init__(self, mechanism: str, username: str, password: str, *, nonce: str | None = None) -> None:
        p.hash_name(mechanism)
        if not username:
            raise ValueError("SCRAM needs a non-empty username")
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._client_nonce = nonce or p.new_nonce()
        self._state = "SEND_CLIENT_FIRST_MESSAGE"
        self._bare = ""
        self._expected_signature = b""

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def _expect(self, state: str) -> None:
        if self._state != state:
            raise RuntimeError(f"SCRAM client in state {self._state}, not {state}")

    def first(self) -> bytes:
        self._expect("SEND_CLIENT_FIRST_MESSAGE")
        message = p.format_client_first(self._username, self._client_nonce)
        self._bare = message[len("n,,") :]
        self._state = "RECEIVE_SERVER_FIRST_MESSAGE"
        return message.encode()

    def final(self, server_first: bytes) -> bytes:
        self._expect("RECEIVE_SERVER_FIRST_MESSAGE")
        self._state = "FAILED"
        first = p.parse_server_first(server_first)
        if not first.nonce.startswith(self._client_nonce):
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        if first.iterations < p.MIN_ITERATIONS:
            raise SaslAuthenticationError(
                f"Requested iterations {first.iterations} is less than the minimum {p.MIN_ITERATIONS} for {self.mechanism}"
            )
        if first.iterations > p.MAX_ITERATIONS:
            raise SaslAuthenticationError(
                f"Requested iterations {first.iterations} is more than the maximum {p.MAX_ITERATIONS} for {self.mechanism}"
            )
        salted = p.salted_password(self.mechanism, self._password, first.salt, first.iterations)
        without_proof = f"c={p.b64encode(b'n,,')},r={first.nonce}"
        auth = p.auth_message(self._bare, first.text, without_proof)
        proof = p.client_proof(self.mechanism, salted, auth)
        self._expected_signature = p.server_signature(
            self.mechanism, p.server_key(self.mechanism, salted), auth
        )
        self._state = "RECEIVE_SERVER_FINAL_MESSAGE"
        return f"{without_proof},p={p.b64encode(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        self._expect("RECEIVE_SERVER_FINAL_MESSAGE")
        self._state = "FAILED"
        final = p.parse_server_final(server_final)
        if final.error is not None:
            raise SaslAuthenticationError(
                f"Sasl authentication using {self.mechanism} failed with error: {final.error[:200]}"
            )
        if final.signature is None or not hmac.compare_digest(final.signature, self._expected_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")
        self._state = "COMPLETE"

    def respond(self, challenge: bytes) -> bytes | None:
        if self._state == "RECEIVE_SERVER_FIRST_MESSAGE":
            return self.final(challenge)
        self.verify(challenge)
        return None


def new_client(mechanism: str, username: str, password: str) -> PlainClient | ScramClient:
    """The client side of ``mechanism``; ValueError if it is not one of `SUPPORTED`."""
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    if mechanism in p.MECHANISMS:
        return ScramClient(mechanism, username, password)
    raise ValueError(f"Unsupported SASL mechanism {mechanism!r}; supported: {', '.join(SUPPORTED)}")
