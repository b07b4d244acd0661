"""One TCP connection to one broker: framing, pipelining, version negotiation.

Wire contract (Kafka's): every request is ``INT32 size`` + request header v1
(v2 for ApiVersions v3+) + body; every response is ``INT32 size`` + response
header v0 (``INT32 correlation_id``) + body, in request order. Requests are
pipelined: `request` writes at once and returns a future; the responses are
matched to the in-flight queue in order, and a correlation id that is not the
oldest outstanding one means the stream is out of sync, so the connection is
closed and every outstanding request fails with `KafkaConnectionError`.

On connect the connection sends ApiVersions v3 (falling back to the version the
broker names when it answers UNSUPPORTED_VERSION with a v0 body) and then uses,
per API, the highest version both sides support (`versions`).

A request that gets no answer within its timeout closes the connection, as the
Java client does: with in-order responses nothing after it could be trusted.

Reading uses `asyncio.BufferedProtocol`: small frames are parsed out of a
64 KiB scratch buffer, a large frame (a fetch response) is received straight
into a buffer of its own size, so megabytes of records are copied once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import socket
import ssl
import struct
from collections.abc import Callable
from typing import Any

from client.errors import (
    AuthenticationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_for,
)
from client.security import ClientSecurity, authenticate
from protocol.errors import ErrorCode, ProtocolError
from protocol.headers import encode_request_header, skip_response_header
from protocol.messages import API_NAMES, MODULES, decode_response, encode_request

log = logging.getLogger("client.connection")

CLIENT_SOFTWARE_NAME = "minikafka-python"
CLIENT_SOFTWARE_VERSION = "0.1.0"
API_VERSIONS = 18
MAX_RESPONSE_BYTES = 1 << 30
_SCRATCH = 64 * 1024
_I32 = struct.Struct(">i")


# The newest version of each API whose fields and behaviour the bundled client handles; newer
# schemas exist (the broker serves them) but the client asks for these until it is taught more.
CLIENT_MAX_VERSIONS: dict[int, int] = {
    0: 7,  # Produce
    1: 11,  # Fetch
    2: 3,  # ListOffsets
    3: 5,  # Metadata
    8: 3,  # OffsetCommit
    9: 3,  # OffsetFetch
    10: 2,  # FindCoordinator
    11: 5,  # JoinGroup
    12: 3,  # Heartbeat
    13: 1,  # LeaveGroup
    14: 3,  # SyncGroup
    15: 3,  # DescribeGroups
    16: 2,  # ListGroups
    17: 1,  # SaslHandshake
    18: 3,  # ApiVersions
    19: 4,  # CreateTopics
    20: 3,  # DeleteTopics
    21: 1,  # DeleteRecords
    22: 4,  # InitProducerId (v3: current id and epoch for an epoch bump; v4: PRODUCER_FENCED)
    23: 3,  # OffsetForLeaderEpoch
    24: 3,  # AddPartitionsToTxn (v4+ is the brokers' batched form)
    25: 3,  # AddOffsetsToTxn
    26: 3,  # EndTxn (v4+: TRANSACTION_ABORTABLE, KIP-890)
    28: 3,  # TxnOffsetCommit (v3: generation and member id)
    32: 2,  # DescribeConfigs
    33: 1,  # AlterConfigs
    36: 1,  # SaslAuthenticate
    37: 1,  # CreatePartitions
    42: 1,  # DeleteGroups
    44: 0,  # IncrementalAlterConfigs
}


def our_versions() -> dict[int, tuple[int, int]]:
    """{api_key: (min, max)} of the versions the bundled client speaks."""
    out = {}
    for key, module in MODULES.items():
        versions = set(module.REQUEST) & set(module.RESPONSE)
        if versions:
            out[key] = (min(versions), min(max(versions), CLIENT_MAX_VERSIONS.get(key, max(versions))))
    return out


_OURS = our_versions()


class _Pending:
    __slots__ = ("correlation_id", "api_key", "version", "future", "timer")

    def __init__(self, correlation_id: int, api_key: int, version: int, future: asyncio.Future[Any]) -> None:
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.version = version
        self.future = future
        self.timer: asyncio.TimerHandle | None = None


class BrokerConnection(asyncio.BufferedProtocol):
    """A connection to ``host:port``; build it with `BrokerConnection.open`."""

    def __init__(self, host: str, port: int, *, client_id: str | None, node_id: int) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.versions: dict[int, int] = {}
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._inflight: collections.deque[_Pending] = collections.deque()
        self._correlation = 0
        self._closed: BaseException | None = None
        self._write_paused = False
        self._drain: asyncio.Future[None] | None = None
        self._on_close: list[Callable[[BrokerConnection], None]] = []
        self._scratch = bytearray(_SCRATCH)
        self._view = memoryview(self._scratch)
        self._start = 0
        self._end = 0
        self._big: bytearray | None = None
        self._big_got = 0

    def __repr__(self) -> str:
        return f"<BrokerConnection node={self.node_id} {self.host}:{self.port}>"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None,
        node_id: int,
        timeout: float,
        security: ClientSecurity | None = None,
    ) -> BrokerConnection:
        """Connect (TLS and SASL as ``security`` says) and negotiate versions.

        `KafkaConnectionError` if that fails within ``timeout`` s; `AuthenticationError`
        when the TLS handshake or the SASL credentials are refused.
        """
        conn = cls(host, port, client_id=client_id, node_id=node_id)
        context = security.ssl_context if security is not None else None
        tls: dict[str, Any] = {}
        if context is not None:
            tls = {"ssl": context, "server_hostname": host if security and security.check_hostname else None}
        try:
            async with asyncio.timeout(timeout):
                await conn._loop.create_connection(lambda: conn, host, port, **tls)
        except ssl.SSLError as exc:
            raise AuthenticationError(
                f"TLS handshake with {host}:{port} failed: {exc.reason or exc}"
            ) from None
        except (OSError, TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: {reason}") from None
        try:
            await conn._negotiate(timeout)
            if security is not None and security.sasl:
                await authenticate(conn, security, timeout)
        except BaseException as exc:
            conn.close(exc if isinstance(exc, Exception) else None)
            if isinstance(exc, KafkaTimeoutError | asyncio.TimeoutError):
                raise KafkaConnectionError(f"{host}:{port} did not answer ApiVersions") from None
            raise
        return conn

    # -- asyncio protocol callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's transports are not subclasses
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc else ""
        self._fail(KafkaConnectionError(f"connection to {self.address} closed{reason}"))

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        self._drain = None

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_got :]
        if self._end == len(self._scratch):
            self._compact()
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._big is not None:
            self._big_got += nbytes
            if self._big_got == len(self._big):
                frame = self._big
                self._big = None
                self._big_got = 0
                self._deliver(frame)
            return
        self._end += nbytes
        self._parse()

    def eof_received(self) -> bool | None:
        return None  # close the transport

    # -- framing -------------------------------------------------------------------------------

    def _compact(self) -> None:
        left = self._end - self._start
        if self._start:
            self._scratch[:left] = self._scratch[self._start : self._end]
        self._start = 0
        self._end = left

    def _parse(self) -> None:
        scratch = self._scratch
        while self._closed is None:
            avail = self._end - self._start
            if avail < 4:
                break
            (size,) = _I32.unpack_from(scratch, self._start)
            if size < 4 or size > MAX_RESPONSE_BYTES:
                self.close(KafkaConnectionError(f"{self.address} sent a frame of size {size}"))
                return
            if avail - 4 >= size:
                begin = self._start + 4
                frame = bytes(scratch[begin : begin + size])
                self._start = begin + size
                self._deliver(frame)
                continue
            if size + 4 > len(scratch):
                # A big frame: receive the rest straight into a buffer of its own.
                big = bytearray(size)
                got = avail - 4
                big[:got] = scratch[self._start + 4 : self._end]
                self._start = self._end = 0
                self._big = big
                self._big_got = got
                return
            if self._start + 4 + size > len(scratch):
                self._compact()
            break
        if self._start == self._end:
            self._start = self._end = 0

    def _deliver(self, frame: bytes | bytearray) -> None:
        (correlation_id,) = _I32.unpack_from(frame, 0)
        if not self._inflight:
            self.close(KafkaConnectionError(f"{self.address} sent an unrequested response {correlation_id}"))
            return
        pending = self._inflight[0]
        if pending.correlation_id != correlation_id:
            self.close(
                KafkaConnectionError(
                    f"{self.address} answered correlation id {correlation_id}, "
                    f"expected {pending.correlation_id}: closing the out-of-sync connection"
                )
            )
            return
        self._inflight.popleft()
        if pending.timer is not None:
            pending.timer.cancel()
        if pending.future.done():
            return
        try:
            body = memoryview(frame)[skip_response_header(frame, pending.api_key, pending.version) :]
            version = pending.version
            if pending.api_key == API_VERSIONS and len(body) >= 2 and body[0:2] == b"\x00\x23":
                version = 0  # UNSUPPORTED_VERSION comes back as a v0 body
            response = decode_response(pending.api_key, version, body)
        except ProtocolError as exc:
            pending.future.set_exception(exc)
            self.close(KafkaConnectionError(f"undecodable response from {self.address}: {exc}"))
            return
        pending.future.set_result(response)

    # -- requests --------------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    @property
    def in_flight(self) -> int:
        return len(self._inflight)

    def on_close(self, callback: Callable[[BrokerConnection], None]) -> None:
        self._on_close.append(callback)

    def version(self, api_key: int) -> int:
        """The negotiated version of ``api_key``; `UnsupportedVersionError` if there is none."""
        v = self.versions.get(api_key)
        if v is None:
            name = API_NAMES.get(api_key, str(api_key))
            raise UnsupportedVersionError(f"broker {self.address} supports no version of {name} we speak")
        return v

    def request(
        self,
        api_key: int,
        body: dict[str, Any],
        *,
        version: int | None = None,
        timeout: float | None = 30.0,
        expect_response: bool = True,
    ) -> asyncio.Future[Any]:
        """Send one request now; the future resolves to the decoded response body.

        With ``expect_response=False`` (Produce acks=0) the future resolves to
        None once the bytes are handed to the socket. Raises at once when the
        connection is closed or the API is unsupported.
        """
        if self._closed is not None:
            raise KafkaConnectionError(f"connection to {self.address} is closed")
        v = self.version(api_key) if version is None else version
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        cid = self._correlation
        header = encode_request_header(api_key, v, cid, self.client_id)
        payload = encode_request(api_key, v, body)
        assert self._transport is not None
        self._transport.write(_I32.pack(len(header) + len(payload)) + header + payload)
        future: asyncio.Future[Any] = self._loop.create_future()
        if not expect_response:
            future.set_result(None)
            return future
        pending = _Pending(cid, api_key, v, future)
        if timeout is not None:
            pending.timer = self._loop.call_later(timeout, self._timed_out, pending, timeout)
        self._inflight.append(pending)
        return future

    async def send(
        self,
        api_key: int,
        body: dict[str, Any],
        *,
        version: int | None = None,
        timeout: float | None = 30.0,
        expect_response: bool = True,
    ) -> Any:
        """`request`, waiting for the response (and for the socket to drain first if it is backed up)."""
        if self._write_paused:
            await self.drained()
        return await self.request(
            api_key, body, version=version, timeout=timeout, expect_response=expect_response
        )

    async def drained(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        if not self._write_paused or self._closed is not None:
            return
        if self._drain is None:
            self._drain = self._loop.create_future()
        await asyncio.shield(self._drain)

    def _timed_out(self, pending: _Pending, timeout: float) -> None:
        if pending.future.done():
            return
        name = API_NAMES.get(pending.api_key, str(pending.api_key))
        self.close(KafkaTimeoutError(f"{name} request to {self.address} timed out after {timeout:g} s"))

    async def _negotiate(self, timeout: float) -> None:
        version = 3
        tried: set[int] = set()
        while True:
            tried.add(version)
            body: dict[str, Any] = {}
            if version >= 3:
                body = {
                    "client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": CLIENT_SOFTWARE_VERSION,
                    "tagged_fields": {},
                }
            resp = await self.request(API_VERSIONS, body, version=version, timeout=timeout)
            table = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                broker = table.get(API_VERSIONS)
                if broker is None:
                    raise UnsupportedVersionError(f"{self.address} rejected every ApiVersions version")
                nxt = min(broker[1], 3)
                if nxt in tried or nxt < 0:
                    raise UnsupportedVersionError(f"{self.address}: no common ApiVersions version")
                version = nxt
                continue
            if resp.error_code:
                raise error_for(resp.error_code, context=f"ApiVersions from {self.address}")
            break
        self.broker_versions = table
        for key, (lo, hi) in _OURS.items():
            theirs = table.get(key)
            if theirs is None:
                continue
            best = min(hi, theirs[1])
            if best >= max(lo, theirs[0]):
                self.versions[key] = best

    # -- closing ---------------------------------------------------------------------------------

    def close(self, exc: BaseException | None = None) -> None:
        """Close the socket; every outstanding request fails with ``exc`` (or a connection error)."""
        if self._transport is not None:
            # A TLS close waits for the peer's close_notify, which could outlive the client's loop:
            # once everything written has left, the socket just goes.
            tls = self._transport.get_extra_info("ssl_object") is not None
            drained = self._transport.get_write_buffer_size() == 0
            self._transport.abort() if exc is not None or (tls and drained) else self._transport.close()
        self._fail(exc or KafkaConnectionError(f"connection to {self.address} closed"))

    def _fail(self, exc: BaseException) -> None:
        if self._closed is not None:
            return
        self._closed = exc
        while self._inflight:
            pending = self._inflight.popleft()
            if pending.timer is not None:
                pending.timer.cancel()
            if not pending.future.done():
                pending.future.set_exception(exc)
                pending.future.exception()  # mark retrieved: callers may have stopped waiting
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        for cb in self._on_close:
            try:
                cb(self)
            except Exception:  # a callback must not keep the others from running
                log.exception("connection close callback failed")
        self._on_close.clear()
