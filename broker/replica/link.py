"""`LeaderLink`: a follower's connection to one leader, one request in flight, frames read in place.

Wire format: Kafka's size-delimited frames (INT32 size, then that many bytes).
A response frame is received straight into a buffer the link keeps (grown
when a frame needs more), with no copy beyond the kernel's, so the record
sets of a Fetch response can be decoded as writable views
(`protocol.fetch_fast`) and appended as they are. asyncio's StreamReader would
copy every byte twice more (into its buffer, then out of it), and a fresh
buffer per frame would be paid for in page faults.

Contract: `request` sends one frame and returns the next response frame
(correlation id first) as a writable memoryview that stays valid only until
the next `request`: the caller finishes with it (and with every view into
it) before asking again. A closed connection raises ConnectionResetError, a
frame larger than `MAX_FRAME` raises ProtocolError. One caller at a time.

On a secured inter-broker listener (`LinkSecurity`) the link speaks TLS and,
for SASL, logs in once connected (SaslHandshake v1, then SaslAuthenticate v2
round trips with protocol/sasl_client.py) before any other request; a refused
login raises ConnectionRefusedError with the broker's message. The TLS context
is asked for at each connect, so a link made after the listener's stores were
reloaded presents the new certificate. When the login answers a session
lifetime (``connections.max.reauth.ms`` on the other side, KIP-368), the link
logs in again on the same connection before the next request once 85-95% of
that lifetime has passed (the window Kafka's clients use), instead of being
closed by the other broker at expiry.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from protocol.errors import ProtocolError
from protocol.headers import encode_request_header, skip_response_header
from protocol.messages import decode_response, encode_request
from protocol.sasl_client import SaslAuthenticationError, new_client

_SIZE = struct.Struct(">i")
MAX_FRAME = 128 << 20  # well above a Fetch response of max_bytes (16 MiB) plus headers


class _FrameReader(asyncio.BufferedProtocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._size = bytearray(4)
        self._buffer = bytearray(1 << 16)
        self._frame: memoryview | None = None
        self._filled = 0
        self._waiter: asyncio.Future[memoryview] | None = None
        self._error: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass it

    def get_buffer(self, sizehint: int) -> memoryview:
        target = memoryview(self._size) if self._frame is None else self._frame
        return target[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._frame is None:
            if self._filled < 4:
                return
            (size,) = _SIZE.unpack(self._size)
            if not 4 <= size <= MAX_FRAME:
                self._fail(ProtocolError(f"response frame of {size} bytes"))
                return
            if size > len(self._buffer):
                # a new buffer: views into the old one (a previous frame's) stay valid
                self._buffer = bytearray(max(size, 2 * len(self._buffer)))
            self._frame, self._filled = memoryview(self._buffer)[:size], 0
            return
        if self._filled < len(self._frame):
            return
        frame, self._frame, self._filled = self._frame, None, 0
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            self._fail(ProtocolError("a response frame nobody waited for"))
            return
        waiter.set_result(frame)

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._error is None:
            self._fail(exc or ConnectionResetError("connection closed by the leader"))

    def next_frame(self) -> asyncio.Future[memoryview]:
        fut: asyncio.Future[memoryview] = asyncio.get_running_loop().create_future()
        if self._error is not None:
            fut.set_exception(self._error)
        else:
            self._waiter = fut
        return fut


SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@dataclass(frozen=True)
class LinkSecurity:
    """How a broker reaches the others on the inter-broker listener: TLS, and a SASL login.

    ``tls``: makes the client context for a new connection (from the listener's current
    stores), None for no TLS."""

    tls: Callable[[], ssl.SSLContext] | None = None
    check_hostname: bool = True
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)


REAUTH_WINDOW = (0.85, 0.95)  # re-login after this share of the session lifetime, picked at random


class LeaderLink:
    def __init__(self, reader: _FrameReader) -> None:
        self._reader = reader
        self._security: LinkSecurity | None = None
        self._client_id = "broker"
        self.reauth_at: float | None = None  # monotonic time of the next login; None: never

    @classmethod
    async def connect(
        cls, host: str, port: int, security: LinkSecurity | None = None, client_id: str = "broker"
    ) -> LeaderLink:
        tls: dict[str, Any] = {}
        if security is not None and security.tls is not None:
            tls = {"ssl": security.tls(), "server_hostname": host if security.check_hostname else None}
        _, reader = await asyncio.get_running_loop().create_connection(_FrameReader, host, port, **tls)
        link = cls(reader)
        link._security, link._client_id = security, client_id
        if security is not None and security.mechanism is not None:
            try:
                await link._login(security, client_id)
            except BaseException:
                link.close()
                raise
        return link

    async def _call(self, api_key: int, version: int, body: dict[str, Any], client_id: str) -> Any:
        payload = encode_request_header(api_key, version, 0, client_id) + encode_request(
            api_key, version, body
        )
        frame = await self.request(payload)
        return decode_response(
            api_key, version, bytes(frame[skip_response_header(frame, api_key, version) :])
        )

    async def _login(self, security: LinkSecurity, client_id: str) -> None:
        assert security.mechanism is not None
        answer = await self._call(SASL_HANDSHAKE, 1, {"mechanism": security.mechanism}, client_id)
        if answer.error_code:
            raise ConnectionRefusedError(f"SASL mechanism {security.mechanism} is not enabled there")
        mechanism = new_client(security.mechanism, security.username, security.password)
        token: bytes | None = mechanism.first()
        lifetime_ms = 0
        while token is not None:
            answer = await self._call(SASL_AUTHENTICATE, 2, {"auth_bytes": token}, client_id)
            if answer.error_code:
                raise ConnectionRefusedError(
                    f"SASL login as {security.username!r} refused: {answer.error_message}"
                )
            try:
                token = mechanism.respond(bytes(answer.auth_bytes))
            except (SaslAuthenticationError, RuntimeError) as exc:
                raise ConnectionRefusedError(f"SASL login as {security.username!r}: {exc}") from None
            lifetime_ms = answer.session_lifetime_ms
        self.reauth_at = (
            time.monotonic() + lifetime_ms / 1000 * random.uniform(*REAUTH_WINDOW)
            if lifetime_ms > 0
            else None
        )

    async def request(self, payload: bytes) -> memoryview:
        """Send ``payload`` as one frame; the response frame (correlation id, header, body)."""
        if self.reauth_at is not None and time.monotonic() >= self.reauth_at and self._security is not None:
            self.reauth_at = None
            await self._login(self._security, self._client_id)
        transport = self._reader.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("connection to the leader is closed")
        frame = self._reader.next_frame()
        transport.write(_SIZE.pack(len(payload)) + payload)
        return await frame

    def close(self) -> None:
        if self._reader.transport is not None:
            self._reader.transport.close()
