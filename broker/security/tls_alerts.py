"""TLS handshake alerts that reach the client: `AlertingSSLObject`, `attach` and `sending_alerts_to`.

When OpenSSL refuses a handshake (a client without the certificate
``ssl.client.auth=required`` asks for, an untrusted one, no common cipher or
version) it writes a TLS alert to the connection's outgoing buffer and the
handshake raises. asyncio's and uvloop's TLS protocols then close the socket
without sending what is in that buffer, so the client sees the connection
drop ("unexpected eof") and cannot tell a refusal from a network fault:
Kafka's Java client retries until its timeout instead of failing with
``SslAuthenticationException``. Kafka sends the alert.

A listener's server contexts set `SSLContext.sslobject_class` (a documented
hook) to `AlertingSSLObject`: when its handshake fails it writes the pending
alert bytes straight to the raw TCP transport, before the TLS protocol closes
it. The listener's context attaches (`attach`) the transport that
`sending_alerts_to` names while the TLS protocol is wrapped around it
(``connection_made`` creates the SSL object synchronously, in both
implementations); outside that block nothing is attached and the object
behaves as a plain `ssl.SSLObject`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterator

_wrapping: asyncio.BaseTransport | None = None  # the raw transport a TLS protocol is being started on


@contextlib.contextmanager
def sending_alerts_to(transport: asyncio.BaseTransport) -> Iterator[None]:
    """Within the block, SSL objects given to `attach` send their alerts to ``transport``."""
    global _wrapping
    _wrapping = transport
    try:
        yield
    finally:
        _wrapping = None


class AlertingSSLObject(ssl.SSLObject):
    """An `ssl.SSLObject` that sends its handshake-failure alert to the raw transport (module docstring)."""

    raw_transport: asyncio.BaseTransport | None = None
    outgoing: ssl.MemoryBIO | None = None

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError:
            transport, outgoing = self.raw_transport, self.outgoing
            if transport is not None and outgoing is not None and not transport.is_closing():
                alert = outgoing.read()
                if alert:
                    transport.write(alert)  # type: ignore[attr-defined]
            raise


def attach(sslobj: ssl.SSLObject, outgoing: ssl.MemoryBIO) -> ssl.SSLObject:
    """``sslobj`` (just made by ``wrap_bio`` with ``outgoing``), set to send its handshake alert to the
    transport `sending_alerts_to` names, if any and if it is an `AlertingSSLObject`."""
    if isinstance(sslobj, AlertingSSLObject) and _wrapping is not None:
        sslobj.raw_transport, sslobj.outgoing = _wrapping, outgoing
    return sslobj
