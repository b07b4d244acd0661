"""One client connection: dispatch, security, responses in request order.

Wire contract:
- Every request is `INT32 size` + header + body. A size below 1 or above
  `socket.request.max.bytes` closes the connection before anything is allocated.
- Requests are decoded and handed to their handler one at a time, in arrival
  order. A handler returns a response dict, `None` (no response: acks=0
  Produce), or an awaitable of either (acks=all waiting for fsync, a parked
  Fetch). Later requests keep being processed while an earlier one waits, but
  responses are written strictly in request order.
- An unknown api key, an unsupported version, or a body that does not decode
  closes the connection (what Kafka does). ApiVersions at an unknown version is
  answered with a v0 body carrying UNSUPPORTED_VERSION and our version table.

Receiving: broker/frame_receiver.py (`FrameReceiver`, which this class extends).

Flow control: reading pauses while more than `queued.max.requests` responses
are outstanding or while the transport's write buffer is above its high-water
mark (a slow reader cannot grow broker memory), and resumes when both drain.
Client quotas (broker/security/quotas.py): a request that puts its client over
a quota is answered at once with ``throttle_time_ms``, then reading pauses for
that long (KIP-219); nothing is measured while no quota is configured.

Security (broker/security/session.py): each connection has a `Session`, its
principal and authentication state. On a SASL listener only ApiVersions,
SaslHandshake and SaslAuthenticate are served until the client has
authenticated (anything else closes the connection), and after a SaslHandshake
v0 the frames are bare SASL tokens. An answer after which Kafka closes the
connection (a failed authentication, an unsupported mechanism) is written, the
requests behind it are dropped, and the connection closes. On an SSL listener
the principal comes from the client's certificate.

Limits: before a SASL client has authenticated, a frame above 512 KiB closes
the connection (Kafka's ``sasl.server.max.receive.size``); a connection beyond
`max.connections` (or `max.connections.per.ip` from one address, unless
`max.connections.per.ip.overrides` names it; all three dynamic broker configs,
read at each accept) is closed as soon as it is accepted (`admission_refusal`; on a TLS listener before its
handshake, broker/tls_accept.py); a connection with nothing in flight that has sent
nothing for `connections.max.idle.ms` is closed (so is a client that sends
part of a frame and stalls).

A handler that fails unexpectedly is logged with its traceback and its request
is answered with UNKNOWN_SERVER_ERROR when the API has a top-level error code;
otherwise the connection is closed and the client retries.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import struct
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from broker import registry
from broker.config import parse_ip_overrides
from broker.context import RequestContext
from broker.frame_receiver import FrameReceiver
from broker.security.mechanisms import SaslAuthenticationError
from broker.security.session import Session
from broker.security.tls import peer_principal
from protocol.errors import ErrorCode, ProtocolError
from protocol.headers import (
    API_VERSIONS_KEY,
    RequestHeader,
    frame_response,
    parse_request_header,
    response_header_size,
)
from protocol.messages import decode_request, encode_response, encode_response_parts, error_response

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("minikafka.connection")

_I32 = struct.Struct(">i")
_I32_PAIR = struct.Struct(">ii")
_HEADER_V1 = struct.Struct(">iib")  # size, correlation id, an empty TAG_BUFFER
_API_VERSIONS_FALLBACK_VERSION = 0

SASL_MAX_RECEIVE_BYTES = 524288
"""Largest frame before SASL authentication completes (Kafka's ``sasl.server.max.receive.size``)."""
TLS_WRITE_CHUNK = 65536  # bytes handed to a TLS transport at a time (`KafkaConnection._write`)


class _Slot:
    """A response position in the ordered output queue: chunks to write once done."""

    __slots__ = ("data", "done")

    def __init__(self) -> None:
        self.data: list[bytes] | None = None
        self.done = False


def admission_refusal(broker: Broker, ip: str) -> str | None:
    """Why a new connection from ``ip`` is refused (`max.connections`, `max.connections.per.ip` or
    the address's entry in `max.connections.per.ip.overrides`, their current dynamic values),
    counting the open connections and the TLS ones still handshaking (broker/tls_accept.py); None to
    admit it."""
    dynamic = broker.dynamic
    connections, handshaking = broker.connections, broker.handshaking
    total = dynamic.int_value("max.connections")
    if len(connections) + len(handshaking) >= total:
        return f"max.connections ({total}) reached"
    limit = dynamic.int_value("max.connections.per.ip")
    overrides = dynamic.value("max.connections.per.ip.overrides")
    if overrides:
        limit = parse_ip_overrides(overrides).get(ip, limit)
    if limit < len(connections) + len(handshaking) + 1:
        same = sum(1 for c in connections if c.ip == ip) + sum(1 for h in handshaking if h.ip == ip)
        if same >= limit:
            return f"max.connections.per.ip ({limit}) reached for {ip}"
    return None


class KafkaConnection(FrameReceiver):
    def __init__(self, broker: Broker, listener: str, admitted_by: object | None = None) -> None:
        """``admitted_by``: the `TlsAccept` that admitted this connection at its TCP accept (it is
        counted already, and stops counting as handshaking once this one is made)."""
        super().__init__(broker.frames)
        self.broker = broker
        self.listener = listener  # the name of the listener this connection came in on
        self._admitted_by = admitted_by
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._slots: deque[_Slot] = deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._max_frame = int(broker.config["socket.request.max.bytes"])
        self._max_queued = int(broker.config["queued.max.requests"])
        self._write_paused = False
        self._tls = False
        self._read_paused = False
        self._closing = False
        self.ip = "?"
        self._idle_s = int(broker.config["connections.max.idle.ms"]) / 1000
        self._idle_timer: asyncio.TimerHandle | None = None
        self.session: Session = broker.security.session(listener, "?")
        self._ending: str | None = None  # close once the queued answers are written, reading nothing more
        self._throttle_timer: asyncio.TimerHandle | None = None  # muted by a client quota until it fires

    # -- asyncio.Protocol -------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.ip = peer[0] if peer else "?"
        if self._admitted_by is not None:
            self.broker.handshaking.discard(self._admitted_by)
        else:
            refusal = admission_refusal(self.broker, self.ip)
            if refusal is not None:
                self.close(refusal)
                return
        self.broker.connections.add(self)
        self._tls = transport.get_extra_info("ssl_object") is not None
        self.session = self.broker.security.session(self.listener, self.ip)
        security = self.session.security
        if security.mapper is not None and not security.sasl:
            ssl_object = transport.get_extra_info("ssl_object")
            if ssl_object is not None:
                try:
                    self.session.principal = peer_principal(ssl_object, security.mapper)
                except (LookupError, ValueError) as exc:  # no mapping rule applies, or an unreadable DN
                    self.close(f"TLS client refused: {exc}")
                    return
        self._idle_timer = asyncio.get_running_loop().call_later(self._idle_s, self._check_idle)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self.broker.connections.discard(self)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        for task in list(self._tasks):
            task.cancel()

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    # -- FrameReceiver hooks ------------------------------------------------
    def accepting(self) -> bool:
        return not self._closing and self._ending is None

    def read_paused(self) -> bool:
        return self._read_paused

    def frame_limit(self) -> int:
        return self._max_frame if self.session.authenticated else SASL_MAX_RECEIVE_BYTES

    def refuse(self, reason: str) -> None:
        self.close(reason)

    def frames_handled(self) -> None:
        self._update_reading()

    def _check_idle(self) -> None:
        if self._closing:
            return
        quiet = time.monotonic() - self.last_activity
        if quiet >= self._idle_s and not self._slots:
            self.close(f"idle for {quiet:.1f}s (connections.max.idle.ms)")
            return
        wait = self._idle_s - quiet if quiet < self._idle_s else self._idle_s
        self._idle_timer = asyncio.get_running_loop().call_later(wait, self._check_idle)

    # -- dispatch ---------------------------------------------------------
    def handle_frame(self, frame: bytes | bytearray | memoryview) -> None:
        session = self.session
        if session.raw_tokens:
            self._handle_raw_token(bytes(frame))
            return
        try:
            header = parse_request_header(frame)
        except ProtocolError as exc:
            self.close(f"bad request header: {exc}")
            return
        handler = registry.HANDLERS.get(header.api_key)
        if handler is None:
            self.close(f"unknown api key {header.api_key}")
            return
        if not session.admits(header.api_key):
            why = "its SASL session expired" if session.authenticated else "it authenticated"
            self.close(f"api {header.api_key} before {why}")
            return
        if not handler.serves(header.api_version):
            if header.api_key == API_VERSIONS_KEY:
                self._answer_unsupported_api_versions(header)
            else:
                self.close(f"unsupported version {header.api_version} of api {header.api_key}")
            return
        try:
            request = decode_request(header.api_key, header.api_version, frame, header.size)
        except ProtocolError as exc:
            self.close(f"malformed request api {header.api_key} v{header.api_version}: {exc}")
            return
        ctx = RequestContext(self.broker, header, self.peer, self.listener, session)
        started = time.perf_counter()
        try:
            result = handler.fn(ctx, request)
        except Exception:
            result = self._internal_error(header)
            if result is None:
                return
        quotas = self.broker.security.quotas
        if quotas.enabled:  # client quotas: request_percentage (throttle times are applied below)
            result = quotas.after_request(ctx, request, result, started)
        if inspect.isawaitable(result):
            slot = _Slot()
            self._slots.append(slot)
            task = asyncio.ensure_future(self._complete(slot, header, result, started))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            if self.broker.metrics is not None:
                self.broker.metrics.observe(header.api_key, header.api_version, started, result)
            if result is not None:
                self._emit(self._encode(header, result))
        if session.throttle_ms:
            self._throttle()
        if session.close_after_response:
            self._end_after_answers("authentication failed or ended")

    def _handle_raw_token(self, token: bytes) -> None:
        """A bare SASL token after SaslHandshake v0: answered as ``INT32 size`` + token; a failure closes."""
        try:
            answer = self.session.step(token)
        except SaslAuthenticationError as exc:
            delay = self.broker.security.failed_auth_delay_s
            self._ending = f"SASL authentication failed: {exc}"
            asyncio.get_running_loop().call_later(delay, self.close, self._ending)
            self._update_reading()
            return
        self._emit([_I32.pack(len(answer)) + answer])

    def _end_after_answers(self, reason: str) -> None:
        """Read nothing more; close once every queued answer is written."""
        if self._ending is None:
            self._ending = reason
        if not self._slots:
            self.close(reason)
        else:
            self._update_reading()

    async def _complete(self, slot: _Slot, header: RequestHeader, pending: Any, started: float) -> None:
        try:
            result = await pending
        except asyncio.CancelledError:
            raise
        except Exception:
            result = self._internal_error(header)
            if result is None:
                return
        if self.broker.metrics is not None:
            self.broker.metrics.observe(header.api_key, header.api_version, started, result)
        slot.data = None if result is None else self._encode(header, result)
        slot.done = True
        self._flush_slots()
        if self.session.throttle_ms:
            self._throttle()
        if self.session.close_after_response:
            self._end_after_answers("authentication failed or ended")

    def _internal_error(self, header: RequestHeader) -> dict[str, Any] | None:
        """Log the failure with its traceback; the UNKNOWN_SERVER_ERROR answer, or None after closing."""
        log.exception(
            "internal error in api %d v%d from peer=%s", header.api_key, header.api_version, self.peer
        )
        response = error_response(header.api_key, header.api_version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if response is None:
            self.close("internal error (api has no top-level error code to report it)")
        return response

    def _encode(self, header: RequestHeader, response: dict[str, Any]) -> list[bytes]:
        """Size prefix + response header (v0, or v1 for flexible versions) + body, as chunks.

        Record sets are not copied.
        """
        parts = encode_response_parts(header.api_key, header.api_version, response)
        head = response_header_size(header.api_key, header.api_version)
        size = sum(len(p) for p in parts) + head
        if head == 4:
            return [_I32_PAIR.pack(size, header.correlation_id), *parts]
        return [_HEADER_V1.pack(size, header.correlation_id, 0), *parts]

    def _answer_unsupported_api_versions(self, header: RequestHeader) -> None:
        body = encode_response(
            API_VERSIONS_KEY,
            _API_VERSIONS_FALLBACK_VERSION,
            {
                "error_code": ErrorCode.UNSUPPORTED_VERSION,
                "api_keys": [
                    {"api_key": k, "min_version": lo, "max_version": hi}
                    for k, lo, hi in registry.advertised()
                ],
            },
        )
        self._emit([frame_response(header.correlation_id, body)])

    # -- output -----------------------------------------------------------
    def _emit(self, data: list[bytes]) -> None:
        if self._slots:
            slot = _Slot()
            slot.data = data
            slot.done = True
            self._slots.append(slot)
            self._flush_slots()
        elif self.transport is not None and not self._closing:
            self._write(data)

    def _write(self, data: list[bytes]) -> None:
        """Hand an answer's chunks to the transport.

        Over TLS, in pieces of at most `TLS_WRITE_CHUNK` bytes, small chunks joined: the TLS
        transport encrypts all it is given into one memory buffer before it sends any of it,
        so a 1 MB Fetch answer went through a 1 MB buffer, out of the CPU's caches (TLS consume
        ran at 0.55 of plaintext; in 64 KB pieces at 0.7). Joining also makes one TLS record of
        a small answer's header and body instead of two.
        """
        transport = self.transport
        assert transport is not None
        if not self._tls:
            transport.writelines(data)
            return
        small: list[bytes] = []
        size = 0
        for chunk in data:
            n = len(chunk)
            if size + n > TLS_WRITE_CHUNK and small:
                transport.write(b"".join(small))
                small, size = [], 0
            if n <= TLS_WRITE_CHUNK:
                small.append(chunk)
                size += n
                continue
            view = memoryview(chunk)
            for at in range(0, n, TLS_WRITE_CHUNK):
                transport.write(view[at : at + TLS_WRITE_CHUNK])
        if small:
            transport.write(small[0] if len(small) == 1 else b"".join(small))

    def _flush_slots(self) -> None:
        slots = self._slots
        while slots and slots[0].done:
            data = slots.popleft().data
            if data is not None and self.transport is not None and not self._closing:
                self._write(data)
        if self._ending is not None and not slots:
            self.close(self._ending)
            return
        self._update_reading()

    def _update_reading(self) -> None:
        if self.transport is None or self._closing:
            return
        should_pause = (
            self._write_paused
            or len(self._slots) >= self._max_queued
            or self._throttle_timer is not None
            or self._ending is not None  # about to close: read (and buffer) nothing more
        )
        if should_pause and not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()
            if self.buffered >= 4:
                asyncio.get_running_loop().call_soon(self.resume_frames)

    def _throttle(self) -> None:
        """Client quotas (KIP-219): the answer is out; read nothing more from this client for
        ``session.throttle_ms`` (a longer throttle already running is kept)."""
        ms = self.session.throttle_ms
        self.session.throttle_ms = 0
        if self._closing:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000
        if self._throttle_timer is not None:
            if self._throttle_timer.when() >= until:
                return
            self._throttle_timer.cancel()
        self._throttle_timer = loop.call_at(until, self._end_throttle)
        self._update_reading()

    def _end_throttle(self) -> None:
        self._throttle_timer = None
        self._update_reading()

    def close(self, reason: str | None = None) -> None:
        if self._closing:
            return
        self._closing = True
        if reason:
            log.warning("closing connection peer=%s reason=%s", self.peer, reason)
        if self.transport is not None:
            self.transport.close()

    @property
    def idle(self) -> bool:
        return not self._slots and not self._tasks
