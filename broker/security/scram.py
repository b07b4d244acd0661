"""The broker's side of SASL/SCRAM-SHA-256 and -512: stored credentials and the server exchange.

A `ScramCredential` is what the broker keeps per user and mechanism: salt,
StoredKey, ServerKey and the iteration count, never the password. Its text form
is Kafka's (ScramCredentialUtils, the value kept under a user's config in
ZooKeeper)::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>

`ScramServer` runs one exchange (client-first -> server-first, client-final ->
server-final) as Kafka's ScramSaslServer does, with these contracts:

- Failures raise `SaslAuthenticationError` whose message is Kafka's generic
  "Authentication failed during authentication due to invalid credentials with
  SASL mechanism <M>", whatever went wrong (unknown user, bad proof, bad nonce,
  malformed message): Kafka never tells an unauthenticated client why. The
  cause is in ``reason``. The one exception, as in Kafka, is an authorization id
  different from the username, which the client is told about.
- As in Kafka, an unknown user fails at the client-first message (Kafka answers
  no server-first for it); a wrong password fails at the client-final message.
  The client sees the same error message for both.
- Extensions in client-first are ignored, except Kafka's ``tokenauth=true``
  (delegation tokens): minikafka has no delegation tokens, so it fails as
  Kafka's does for an unknown token id.
- Beyond Kafka (RFC 5802 requires it): client-final's channel binding must be
  the base64 of client-first's gs2 header (``biws`` for ``n,,``). Its nonce
  must end with the combined nonce, as Kafka checks it (not equal it: librdkafka
  before 2.1, Debian's kcat among its users, repeats the client nonce in front).
- Passwords are not SASLprep-normalised (Kafka does not either).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol import scram as p
from protocol.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, SaslAuthenticationError

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "ScramCredential",
    "ScramServer",
    "credential_from_password",
    "credential_from_salted_password",
    "format_credential",
    "parse_credential",
    "salted_password",
]

SALT_SIZE = 16
_FIELDS = ("salt", "stored_key", "server_key", "iterations")
_MAX_CREDENTIAL_TEXT = 1024


@dataclass(frozen=True)
class ScramCredential:
    """One user's stored SCRAM credential for ``mechanism``; the keys stay out of its repr."""

    mechanism: str
    salt: bytes
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    def __post_init__(self) -> None:
        size = p.digest_size(self.mechanism)
        if len(self.stored_key) != size or len(self.server_key) != size:
            raise ValueError(f"{self.mechanism} keys must be {size} bytes")
        if not self.salt:
            raise ValueError("salt must not be empty")
        if self.iterations < 1:
            raise ValueError(f"iterations must be positive, got {self.iterations}")


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(UTF-8(password), salt, iterations)."""
    return p.salted_password(mechanism, password, salt, iterations)


def _check_iterations(iterations: int) -> None:
    # Kafka's AlterUserScramCredentials answers these words (UNACCEPTABLE_CREDENTIAL).
    if iterations < MIN_ITERATIONS:
        raise ValueError("Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise ValueError("Too many iterations")


def credential_from_salted_password(
    mechanism: str, salted_password: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """The credential for a client-computed SaltedPassword (what AlterUserScramCredentials sends).

    ValueError for an unknown mechanism, an empty salt or salted password, or
    iterations outside [MIN_ITERATIONS, MAX_ITERATIONS] ("Too few iterations" /
    "Too many iterations", Kafka's words).
    """
    p.hash_name(mechanism)
    _check_iterations(iterations)
    if not salted_password:
        raise ValueError("salted password must not be empty")
    return ScramCredential(
        mechanism,
        salt,
        p.stored_key(mechanism, p.client_key(mechanism, salted_password)),
        p.server_key(mechanism, salted_password),
        iterations,
    )


def credential_from_password(
    mechanism: str, password: str, *, salt: bytes | None = None, iterations: int = MIN_ITERATIONS
) -> ScramCredential:
    """A new credential for ``password``, with a random salt unless one is given."""
    p.hash_name(mechanism)
    _check_iterations(iterations)
    salt = os.urandom(SALT_SIZE) if salt is None else salt
    return credential_from_salted_password(
        mechanism, p.salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def format_credential(cred: ScramCredential) -> str:
    """Kafka's text form: ``salt=..,stored_key=..,server_key=..,iterations=..``."""
    return (
        f"salt={p.b64encode(cred.salt)},stored_key={p.b64encode(cred.stored_key)},"
        f"server_key={p.b64encode(cred.server_key)},iterations={cred.iterations}"
    )


def parse_credential(mechanism: str, text: str) -> ScramCredential:
    """The credential in Kafka's text form; ValueError (one line, no key material) when malformed.

    The four fields may come in any order, each exactly once, as Kafka reads them.
    """
    p.hash_name(mechanism)
    if len(text) > _MAX_CREDENTIAL_TEXT:
        raise ValueError(f"Credentials not valid: longer than {_MAX_CREDENTIAL_TEXT} characters")
    values: dict[str, str] = {}
    for token in text.split(","):
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ValueError(f"Credentials not valid: expected key=value, got {token[:20]!r}")
        if key not in _FIELDS:
            raise ValueError(f"Credentials not valid: unknown field {key[:20]!r}")
        if key in values:
            raise ValueError(f"Credentials not valid: field {key!r} given twice")
        values[key] = value
    missing = [f for f in _FIELDS if f not in values]
    if missing:
        raise ValueError(f"Credentials not valid: missing {', '.join(missing)}")
    decoded: dict[str, bytes] = {}
    for key in _FIELDS[:3]:
        try:
            decoded[key] = base64.b64decode(values[key], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"Credentials not valid: {key} is not valid base64") from None
    count = values["iterations"]
    if not count.isascii() or not count.isdigit() or len(count) > 10:
        raise ValueError(f"Credentials not valid: iterations {count[:20]!r} is not a number")
    try:
        return ScramCredential(
            mechanism, decoded["salt"], decoded["stored_key"], decoded["server_key"], int(count)
        )
    except ValueError as exc:
        raise ValueError(f"Credentials not valid: {exc}") from None


class ScramServer:
    """One server-side SCRAM exchange. ``lookup(username)`` gives the user's credential for
    this mechanism, or None. ``nonce`` fixes the server's nonce part (tests only)."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        *,
        nonce: str | None = None,
    ) -> None:
        p.hash_name(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._username: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first: p.ClientFirst | None = None
        self._server_first = ""
        self._nonce = ""

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def username(self) -> str | None:
        """The authenticated user (the authorization id) once complete, else None."""
        return self._username if self.complete else None

    def _failed(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + self.mechanism,
            reason,
        )

    def step(self, token: bytes) -> bytes:
        """The answer to the client's next message; SaslAuthenticationError ends the exchange."""
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                answer = self._first(token)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
            elif self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                answer = self._final(token)
                self._state = "COMPLETE"
            else:
                raise SaslAuthenticationError(f"Unexpected challenge in Sasl server state {self._state}")
            return answer
        except SaslAuthenticationError:
            self._state = "FAILED"
            raise
        finally:
            if self._state in ("COMPLETE", "FAILED"):
                self._credential = None
                self._client_first = None

    def _first(self, token: bytes) -> bytes:
        try:
            first = p.parse_client_first(token)
        except SaslAuthenticationError as exc:
            raise self._failed(exc.reason) from None
        if first.extensions.get("tokenauth", "").lower() == "true":
            raise self._failed(f"Token Authentication failed: Invalid tokenId : {first.username}")
        try:
            credential = self._lookup(first.username)
        except Exception as exc:  # a broken store must fail the exchange, as Kafka's callback errors do
            raise self._failed(f"Authentication failed: Credentials could not be obtained: {exc!r}") from exc
        if credential is None:
            raise self._failed("Authentication failed: Invalid user credentials")
        if credential.mechanism != self.mechanism:
            raise self._failed(f"Authentication failed: the stored credential is for {credential.mechanism}")
        if first.authzid and first.authzid != first.username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < MIN_ITERATIONS:
            raise self._failed(
                f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} for {self.mechanism}"
            )
        self._client_first = first
        self._credential = credential
        self._username = first.username
        self._nonce = first.nonce + (self._server_nonce or p.new_nonce())
        self._server_first = p.format_server_first(self._nonce, credential.salt, credential.iterations)
        return self._server_first.encode()

    def _final(self, token: bytes) -> bytes:
        first, credential = self._client_first, self._credential
        assert first is not None and credential is not None
        try:
            final = p.parse_client_final(token)
        except SaslAuthenticationError as exc:
            raise self._failed(exc.reason) from None
        if final.channel_binding != first.gs2_header.encode():
            raise self._failed("Invalid channel binding in the final client message.")
        # Kafka's check (a suffix): librdkafka before 2.1 sends the client nonce twice, then the rest.
        if not final.nonce.endswith(self._nonce):
            raise self._failed("Invalid client nonce in the final client message.")
        if len(final.proof) != p.digest_size(self.mechanism):
            raise self._failed("Invalid client proof length in the final client message.")
        auth = p.auth_message(first.bare, self._server_first, final.without_proof)
        signature = p.hmac_digest(self.mechanism, credential.stored_key, auth)
        computed = p.stored_key(self.mechanism, p.xor(signature, final.proof))
        if not hmac.compare_digest(computed, credential.stored_key):
            raise self._failed("Invalid client credentials")
        return b"v=" + p.b64encode(p.server_signature(self.mechanism, credential.server_key, auth)).encode()
