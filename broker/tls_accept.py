"""Accepting TLS connections ourselves, so that a connection counts from its TCP accept.

``loop.create_server(ssl=...)`` runs the TLS handshake before it calls the
protocol's ``connection_made``, so a connection still handshaking was not
counted against ``max.connections`` / ``max.connections.per.ip``, and a
client opening sockets it never finishes could keep the broker busy with
handshakes past both limits. Kafka counts a connection when it accepts it.

A TLS listener therefore serves plain TCP with `TlsAccept` as its protocol.
In its ``connection_made`` (at accept, before a byte is read):

- `admission_refusal` decides with the open connections *and* the ones
  handshaking counted; a refused connection is closed before any TLS work
  (logged like a refused plaintext one);
- an admitted one joins ``broker.handshaking`` and hands its transport, in
  the same callback, to the loop's own TLS protocol (uvloop's `SSLProtocol`,
  or asyncio's on another loop: what ``create_server(ssl=...)`` would have
  used) wrapping a `KafkaConnection`, with ``HANDSHAKE_TIMEOUT_S``. Switching
  within the callback means no byte of the ClientHello can reach anything
  else. The TLS protocol calls the connection's ``connection_made`` once the
  handshake is done: the connection moves from ``broker.handshaking`` to
  ``broker.connections`` without being admitted twice. A handshake that fails
  sends OpenSSL's alert (`broker.security.tls_alerts`), closes the socket and
  leaves ``broker.handshaking``, as one that times out does.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import ssl
from typing import TYPE_CHECKING, Any

import uvloop
import uvloop.loop

from broker.connection import KafkaConnection, admission_refusal
from broker.security.tls_alerts import sending_alerts_to

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("minikafka.connection")

HANDSHAKE_TIMEOUT_S = 10.0


def _tls_protocol_class(loop: asyncio.AbstractEventLoop) -> Any:
    """The TLS protocol ``create_server(ssl=...)`` uses on ``loop`` (tests also run plain asyncio)."""
    return uvloop.loop.SSLProtocol if isinstance(loop, uvloop.Loop) else asyncio.sslproto.SSLProtocol


class TlsAccept(asyncio.Protocol):
    """An accepted TCP connection on a TLS listener: admitted (or not), then handed to TLS."""

    def __init__(self, broker: Broker, listener: str, context: ssl.SSLContext) -> None:
        self.broker = broker
        self.listener = listener
        self.context = context
        self.ip = "?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.ip = peer[0] if peer else "?"
        refusal = admission_refusal(self.broker, self.ip)
        if refusal is not None:
            log.warning("closing connection peer=%s:%s reason=%s", self.ip, peer[1] if peer else "?", refusal)
            transport.close()
            return
        loop = asyncio.get_running_loop()
        handshake: asyncio.Future[None] = loop.create_future()
        tls = _tls_protocol_class(loop)(
            loop,
            KafkaConnection(self.broker, self.listener, admitted_by=self),
            self.context,
            handshake,
            server_side=True,
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
        )
        self.broker.handshaking.add(self)
        handshake.add_done_callback(self._handshake_done)
        transport.set_protocol(tls)  # type: ignore[attr-defined]
        with sending_alerts_to(transport):  # a refused handshake's alert reaches the client
            tls.connection_made(transport)

    def _handshake_done(self, handshake: asyncio.Future[None]) -> None:
        self.broker.handshaking.discard(self)
        if not handshake.cancelled() and handshake.exception() is not None:
            log.debug("TLS handshake with %s failed: %s", self.ip, handshake.exception())

    def connection_lost(self, exc: Exception | None) -> None:
        """Only for a refused connection: an admitted one's transport belongs to TLS by then."""
