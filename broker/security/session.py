"""One connection's authentication state: who the client is, and what it may send next.

Kafka's SASL server sequence (SaslServerAuthenticator), per connection:

1. Optionally ApiVersions, then SaslHandshake naming a mechanism the listener
   enables (else UNSUPPORTED_SASL_MECHANISM with the enabled list, and the
   connection is closed after the answer).
2. Handshake v1+: SaslAuthenticate requests carry the mechanism's tokens.
   Handshake v0 (clients before Kafka 1.0): the tokens follow as bare frames,
   ``INT32 size`` + token, answered the same way (`raw_tokens`).
3. Any other request before authentication completes closes the connection.
   A failed exchange answers SASL_AUTHENTICATION_FAILED with a message, after
   ``connection.failed.authentication.delay.ms``, and then closes.
4. ``connections.max.reauth.ms`` (KIP-368): SaslAuthenticate v1+ tells the
   client how long its session lasts (an OAUTHBEARER session ends when its
   token expires at the latest); it re-authenticates on the same connection
   (SaslHandshake + SaslAuthenticate again, same principal and mechanism) before
   then, and a request other than those three after expiry closes it.

The principal is ``User:<name>`` for SASL, the mapped certificate subject on
an SSL listener with a client certificate, else ``User:ANONYMOUS``.
"""

from __future__ import annotations

import ipaddress
import time
from typing import TYPE_CHECKING

from broker.security.listener import ANONYMOUS, ListenerSecurity
from broker.security.mechanisms import SaslAuthenticationError, SaslServer, new_server

if TYPE_CHECKING:
    from broker.security.credentials import CredentialStore

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


def java_host(ip: str) -> str:
    """A peer address as Java's InetAddress.getHostAddress prints it, the form ACLs' hosts are
    written in: IPv4 as is, IPv6 in eight uncompressed groups without leading zeros
    (``::1`` -> ``0:0:0:0:0:0:0:1``), a scope kept; anything unparsable as given."""
    if ":" not in ip:
        return ip
    address, sep, scope = ip.partition("%")
    try:
        groups = ipaddress.IPv6Address(address).exploded.split(":")
    except ValueError:
        return ip
    return ":".join(format(int(g, 16), "x") for g in groups) + sep + scope


ALLOWED_BEFORE_AUTH = frozenset((API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE))


class Session:
    """Authentication state of one connection (the connection owns it; the SASL handlers drive it)."""

    __slots__ = (
        "security",
        "host",
        "principal",
        "authenticated",
        "mechanism",
        "server",
        "raw_tokens",
        "close_after_response",
        "throttle_ms",
        "expires_at",
        "lifetime_ms",
        "_reauth_ms",
        "_credentials",
    )

    def __init__(
        self,
        security: ListenerSecurity,
        host: str,
        credentials: CredentialStore,
        reauth_ms: int,
    ) -> None:
        self.security = security
        self.host = java_host(host)  # the client's address, as ACLs' host field matches it
        self.principal = ANONYMOUS
        self.authenticated = not security.sasl
        self.mechanism: str | None = None
        self.server: SaslServer | None = None
        self.raw_tokens = False
        self.close_after_response = False
        # client quotas (broker/security/quotas.py): a throttle time the connection mutes itself for
        # once the handler has returned, then sets back to 0
        self.throttle_ms = 0
        self.expires_at: float | None = None  # time.monotonic() past which only re-authentication is served
        self.lifetime_ms = 0
        self._reauth_ms = reauth_ms
        self._credentials = credentials

    def admits(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be served now (otherwise the connection closes)."""
        if api_key in ALLOWED_BEFORE_AUTH:
            return True
        if not self.authenticated:
            return False
        return self.expires_at is None or time.monotonic() < self.expires_at

    def handshake(self, mechanism: str, version: int) -> bool:
        """Start an exchange with ``mechanism``; False if the listener does not enable it."""
        if not self.security.sasl or mechanism not in self.security.mechanisms:
            return False
        if self.authenticated and self.mechanism is not None and mechanism != self.mechanism:
            return False  # re-authentication keeps the mechanism (KIP-368)
        self.server = new_server(
            mechanism,
            plain_users=self.security.plain_users,
            scram_lookup=self._credentials.lookup,
            oauth_options=self.security.oauth_options,
        )
        self.raw_tokens = version == 0
        return True

    def step(self, token: bytes) -> bytes:
        """Feed one client token to the exchange; the server's answer. Raises
        `SaslAuthenticationError` (the exchange is over and the connection will close)."""
        server = self.server
        if server is None:
            raise SaslAuthenticationError("SaslAuthenticate before a successful SaslHandshake")
        try:
            answer = server.step(token)
        except SaslAuthenticationError:
            self.server = None
            self.close_after_response = True
            raise
        if server.complete:
            principal = f"User:{server.username}"
            if self.authenticated and self.mechanism is not None and principal != self.principal:
                self.server = None
                self.close_after_response = True
                raise SaslAuthenticationError(
                    f"Cannot change principals during re-authentication from {self.principal}: {principal}"
                )
            self.principal = principal
            self.mechanism = server.mechanism
            self.authenticated = True
            self.raw_tokens = False
            self.server = None
            self.lifetime_ms = self._reauth_ms if self._reauth_ms > 0 else 0
            token_expires_ms = getattr(server, "expires_ms", None)  # OAUTHBEARER: the token's expiry
            if token_expires_ms is not None:
                left = max(token_expires_ms - int(time.time() * 1000), 1)
                self.lifetime_ms = min(self.lifetime_ms, left) if self.lifetime_ms else left
            self.expires_at = time.monotonic() + self.lifetime_ms / 1000 if self.lifetime_ms else None
        return answer

    @property
    def session_lifetime_ms(self) -> int:
        """SaslAuthenticate v1's ``session_lifetime_ms``: 0 when sessions do not expire, else the
        shorter of ``connections.max.reauth.ms`` and an OAUTHBEARER token's remaining life."""
        return self.lifetime_ms if self.authenticated else 0
