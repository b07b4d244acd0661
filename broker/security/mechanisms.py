"""The broker's SASL mechanisms behind one interface, sans I/O.

A `SaslServer` runs one authentication exchange: the connection hands it each
client token (SaslAuthenticate's ``auth_bytes``, or a bare frame after
SaslHandshake v0) and sends back what `step` returns. `step` raises
`SaslAuthenticationError` when the exchange fails; its ``str`` is the
``error_message`` to answer with (SASL_AUTHENTICATION_FAILED), its ``reason``
the cause to log. Once ``complete``, ``username`` is the authenticated user
(the principal is ``User:<username>``).

Mechanisms: ``PLAIN`` (users from the PlainLoginModule JAAS options),
``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` (credentials from the broker's store,
looked up as ``scram_lookup(mechanism, username)``) and ``OAUTHBEARER`` with
Kafka's unsecured JWT validator (its options from the listener's
OAuthBearerLoginModule JAAS config).

`SaslAuthenticationError` is defined in `protocol.scram`, which every mechanism
and the client import, so that this module can import the mechanisms without a
cycle; it is re-exported here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Protocol

from broker.security.oauthbearer import OAuthBearerServer
from broker.security.plain import PlainServer
from broker.security.scram import ScramCredential, ScramServer
from protocol.scram import SaslAuthenticationError

__all__ = ["SUPPORTED", "SaslAuthenticationError", "SaslServer", "new_server"]

SUPPORTED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslServer(Protocol):
    """One server-side SASL exchange."""

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None:
        """The authorization id once complete, else None."""
        ...

    def step(self, token: bytes) -> bytes:
        """The answer to ``token``; SaslAuthenticationError when the exchange fails."""
        ...


def new_server(
    mechanism: str,
    *,
    plain_users: Mapping[str, str],
    scram_lookup: Callable[[str, str], ScramCredential | None],
    oauth_options: Mapping[str, str] | None = None,
) -> SaslServer:
    """A fresh exchange for ``mechanism``; ValueError if it is not one of `SUPPORTED`."""
    if mechanism == "PLAIN":
        return PlainServer(plain_users)
    if mechanism == "OAUTHBEARER":
        return OAuthBearerServer(oauth_options or {})
    if mechanism in SUPPORTED:
        return ScramServer(mechanism, functools.partial(scram_lookup, mechanism))
    raise ValueError(f"Unsupported SASL mechanism {mechanism!r}; supported: {', '.join(SUPPORTED)}")
