"""The broker's side of SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer does it.

The client's single message is ``[authzid] NUL authcid NUL passwd`` in UTF-8;
the server answers b"" and the exchange is complete. Users and passwords come
from the PlainLoginModule's ``user_<name>="<password>"`` JAAS options.

Failures raise `SaslAuthenticationError` with Kafka's messages, which Kafka
sends to the client as they are:

- "Invalid SASL/PLAIN response: expected 3 tokens, got <n>"
- "Authentication failed: username not specified" / "... password not specified"
- "Authentication failed: Invalid username or password" (unknown user or wrong password)
- "Authentication failed: Client requested an authorization id that is different from username"

Beyond Kafka: a message that is not UTF-8 or is over `MAX_MESSAGE_SIZE` bytes
is refused ("Invalid SASL/PLAIN response: ...").
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from protocol.scram import SaslAuthenticationError

MECHANISM = "PLAIN"
MAX_MESSAGE_SIZE = 65536  # RFC 4616 asks for 255 bytes a field; Kafka bounds only the frame


class PlainServer:
    """One PLAIN exchange against ``users`` (name -> password)."""

    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._state = "RECEIVE_RESPONSE"
        self._username: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def username(self) -> str | None:
        return self._username if self.complete else None

    def step(self, token: bytes) -> bytes:
        if self._state != "RECEIVE_RESPONSE":
            raise SaslAuthenticationError(f"Unexpected challenge in Sasl server state {self._state}")
        self._state = "FAILED"
        authzid, username = self._authenticate(token)
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self._username = username
        self._state = "COMPLETE"
        return b""

    def _authenticate(self, token: bytes) -> tuple[str, str]:
        """(authzid, username) once the password is right."""
        if len(token) > MAX_MESSAGE_SIZE:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: longer than {MAX_MESSAGE_SIZE} bytes"
            )
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        tokens = text.split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
            )
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # Compare even for an unknown user so both cases take about the same time.
        matches = hmac.compare_digest(password.encode(), (expected or "").encode())
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        return authzid, username
