"""SCRAM (RFC 5802, RFC 7677) primitives shared by the broker's server and the bundled client.

Mechanisms: ``SCRAM-SHA-256`` and ``SCRAM-SHA-512`` (Kafka's two), no channel
binding (no ``-PLUS`` variants). Iteration counts are bounded as Kafka bounds
them (its ScramMechanism): at least 4096, at most 16384.

Key derivation (RFC 5802 section 3), ``H`` the mechanism's hash::

    SaltedPassword = Hi(UTF-8(password), salt, i)   # PBKDF2-HMAC-H; no SASLprep, as Kafka
    ClientKey      = HMAC(SaltedPassword, "Client Key")
    StoredKey      = H(ClientKey)
    ServerKey      = HMAC(SaltedPassword, "Server Key")
    AuthMessage    = client-first-bare "," server-first "," client-final-without-proof
    ClientProof    = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

Messages (UTF-8, attributes ``x=value`` separated by ``,``)::

    client-first  n,[a=<saslname>],n=<saslname>,r=<c-nonce>[,<ext>=<value>]...
    server-first  r=<c-nonce><s-nonce>,s=<base64 salt>,i=<iterations>[,ext...]
    client-final  c=<base64 gs2-header>,r=<nonce>[,ext...],p=<base64 proof>
    server-final  v=<base64 signature> | e=<error>

A saslname escapes ``,`` as ``=2C`` and ``=`` as ``=3D``. Only the gs2 flag
``n`` is accepted (Kafka's server rejects ``y`` and ``p=``); a mandatory
extension (``m=``) is rejected as RFC 5802 requires of a server that knows none.
Each parser takes at most `MAX_MESSAGE_SIZE` bytes and raises only
`SaslAuthenticationError`, whose message says what is wrong.

`SaslAuthenticationError` lives here, below both the broker's mechanisms and the
client, because both sides raise it: the broker's SASL servers (PLAIN too) and
the client's SASL exchanges.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-256": ("sha256", 32),
    "SCRAM-SHA-512": ("sha512", 64),
}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
MAX_MESSAGE_SIZE = 8192  # far above any real message: a username, two nonces and a proof
MAX_EXTENSIONS = 16


class SaslAuthenticationError(Exception):
    """A SASL exchange failed.

    ``str(error)`` is the one-line message meant for the other side: the broker
    puts it in SaslAuthenticate's ``error_message``. ``reason`` is the detailed
    cause for logs; it defaults to the message, and differs when the message must
    not tell an unauthenticated client why (Kafka's SCRAM failures).
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


def hash_name(mechanism: str) -> str:
    """hashlib's name for ``mechanism``'s hash; ValueError for a mechanism that is not SCRAM."""
    try:
        return MECHANISMS[mechanism][0]
    except KeyError:
        raise ValueError(f"Unknown SCRAM mechanism {mechanism!r}") from None


def digest_size(mechanism: str) -> int:
    hash_name(mechanism)
    return MECHANISMS[mechanism][1]


def h(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(hash_name(mechanism), data).digest()


def hmac_digest(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.digest(key, data, hash_name(mechanism))


def hi(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(): PBKDF2 with HMAC-H and a one-block output."""
    if iterations < 1:
        raise ValueError(f"iterations must be positive, got {iterations}")
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password, salt, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hi(mechanism, password.encode("utf-8"), salt, iterations)


def client_key(mechanism: str, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Client Key")


def stored_key(mechanism: str, key: bytes) -> bytes:
    """StoredKey from ClientKey."""
    return h(mechanism, key)


def server_key(mechanism: str, salted: bytes) -> bytes:
    return hmac_digest(mechanism, salted, b"Server Key")


def xor(a: bytes, b: bytes) -> bytes:
    if len(a) != len(b):
        raise ValueError(f"xor of {len(a)} and {len(b)} bytes")
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode()


def client_proof(mechanism: str, salted: bytes, auth: bytes) -> bytes:
    key = client_key(mechanism, salted)
    return xor(key, hmac_digest(mechanism, stored_key(mechanism, key), auth))


def server_signature(mechanism: str, key: bytes, auth: bytes) -> bytes:
    """ServerSignature from ServerKey and the AuthMessage."""
    return hmac_digest(mechanism, key, auth)


def new_nonce() -> str:
    """A fresh nonce: 24 random bytes in URL-safe base64 (printable, no ``,``)."""
    return secrets.token_urlsafe(24)


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def escape_saslname(name: str) -> str:
    """RFC 5802's saslname: ``=`` as ``=3D``, ``,`` as ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_saslname(saslname: str, what: str = "username") -> str:
    """The name a saslname encodes; SaslAuthenticationError for a bare ``=``, a NUL or an empty name."""
    if not saslname:
        raise SaslAuthenticationError(f"Invalid {what}: empty")
    if "\0" in saslname:
        raise SaslAuthenticationError(f"Invalid {what}: contains NUL")
    parts = saslname.split("=")
    out = [parts[0]]
    for part in parts[1:]:
        if part.startswith("2C"):
            out.append("," + part[2:])
        elif part.startswith("3D"):
            out.append("=" + part[2:])
        else:
            raise SaslAuthenticationError(f"Invalid {what} {saslname[:64]!r}: '=' must be escaped as =3D")
    return "".join(out)


@dataclass(frozen=True)
class ClientFirst:
    """A parsed client-first message. ``gs2_header`` is the exact prefix (``n,,`` or ``n,a=...,``)."""

    gs2_header: str
    authzid: str  # unescaped; "" when not given
    username: str  # unescaped
    nonce: str
    bare: str  # client-first-message-bare, verbatim, for the AuthMessage
    extensions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerFirst:
    nonce: str
    salt: bytes
    iterations: int
    text: str  # verbatim, for the AuthMessage


@dataclass(frozen=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes
    without_proof: str  # verbatim, for the AuthMessage


@dataclass(frozen=True)
class ServerFinal:
    signature: bytes | None
    error: str | None


def format_client_first(username: str, nonce: str) -> str:
    return f"n,,n={escape_saslname(username)},r={nonce}"


def format_server_first(nonce: str, salt: bytes, iterations: int) -> str:
    return f"r={nonce},s={b64encode(salt)},i={iterations}"


def _text(data: bytes, what: str) -> str:
    if len(data) > MAX_MESSAGE_SIZE:
        raise SaslAuthenticationError(f"Invalid SCRAM {what} message: longer than {MAX_MESSAGE_SIZE} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError(f"Invalid SCRAM {what} message: not UTF-8") from None


def _bad(what: str, detail: str) -> SaslAuthenticationError:
    return SaslAuthenticationError(f"Invalid SCRAM {what} message format: {detail}")


def _attr(part: str, name: str, what: str) -> str:
    if not part.startswith(name + "="):
        raise _bad(what, f"expected '{name}=' but got {part[:20]!r}")
    return part[len(name) + 1 :]


def _nonce(value: str, what: str) -> str:
    if not value or any(not 0x21 <= ord(c) <= 0x7E for c in value):
        raise _bad(what, "nonce must be non-empty printable ASCII")
    return value


def _b64(value: str, name: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(what, f"'{name}' is not valid base64") from None


def _extensions(parts: list[str], what: str) -> dict[str, str]:
    if len(parts) > MAX_EXTENSIONS:
        raise _bad(what, f"more than {MAX_EXTENSIONS} extensions")
    out: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.isascii() or not key.isalpha() or not value or "\0" in value:
            raise _bad(what, f"invalid extension {part[:20]!r}")
        out[key] = value
    return out


def _reject_mandatory_extension(parts: list[str], what: str) -> None:
    if parts and parts[0].startswith("m="):
        raise _bad(what, "mandatory extensions ('m=') are not supported")


def parse_client_first(data: bytes) -> ClientFirst:
    what = "client first"
    text = _text(data, what)
    flag, sep, rest = text.partition(",")
    if not sep:
        raise _bad(what, "no gs2 header")
    if flag.startswith("p="):
        raise _bad(what, "channel binding is not supported")
    if flag != "n":
        raise _bad(what, f"gs2 flag must be 'n', got {flag[:20]!r}")
    authz, sep, bare = rest.partition(",")
    if not sep:
        raise _bad(what, "no gs2 header")
    authzid = unescape_saslname(_attr(authz, "a", what), "authorization id") if authz else ""
    parts = bare.split(",")
    _reject_mandatory_extension(parts, what)
    if len(parts) < 2:
        raise _bad(what, "expected n=<username>,r=<nonce>")
    username = unescape_saslname(_attr(parts[0], "n", what))
    nonce = _nonce(_attr(parts[1], "r", what), what)
    extensions = _extensions(parts[2:], what)
    return ClientFirst(f"n,{authz},", authzid, username, nonce, bare, extensions)


def parse_server_first(data: bytes) -> ServerFirst:
    what = "server first"
    text = _text(data, what)
    parts = text.split(",")
    _reject_mandatory_extension(parts, what)
    if len(parts) < 3:
        raise _bad(what, "expected r=<nonce>,s=<salt>,i=<iterations>")
    nonce = _nonce(_attr(parts[0], "r", what), what)
    salt = _b64(_attr(parts[1], "s", what), "s", what)
    if not salt:
        raise _bad(what, "empty salt")
    count = _attr(parts[2], "i", what)
    if not count.isascii() or not count.isdigit() or len(count) > 10 or int(count) <= 0:
        raise _bad(what, f"invalid iterations {count[:20]!r}")
    _extensions(parts[3:], what)
    return ServerFirst(nonce, salt, int(count), text)


def parse_client_final(data: bytes) -> ClientFinal:
    what = "client final"
    text = _text(data, what)
    without_proof, sep, proof = text.rpartition(",p=")
    if not sep:
        raise _bad(what, "no proof ('p=')")
    parts = without_proof.split(",")
    if len(parts) < 2:
        raise _bad(what, "expected c=<channel binding>,r=<nonce>")
    channel_binding = _b64(_attr(parts[0], "c", what), "c", what)
    nonce = _nonce(_attr(parts[1], "r", what), what)
    _extensions(parts[2:], what)
    return ClientFinal(channel_binding, nonce, _b64(proof, "p", what), without_proof)


def parse_server_final(data: bytes) -> ServerFinal:
    what = "server final"
    text = _text(data, what)
    first, _, rest = text.partition(",")
    if first.startswith("e="):
        if not first[2:]:
            raise _bad(what, "empty error")
        return ServerFinal(None, first[2:])
    signature = _b64(_attr(first, "v", what), "v", what)
    if rest:
        _extensions(rest.split(","), what)
    return ServerFinal(signature, None)
