"""A minimal raw-socket Kafka client for tests: encode with our schemas, send, read one response."""

from __future__ import annotations

import socket
import ssl
import struct
import time
from typing import Any

from protocol.headers import encode_request_header, skip_response_header
from protocol.messages import decode_response, encode_request


class RawClient:
    def __init__(
        self,
        port: int,
        timeout: float = 10.0,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """``tls``: speak TLS with this context (server name ``host``) instead of plain TCP."""
        sock = socket.create_connection((host, port), timeout=timeout)
        self.sock: socket.socket = sock if tls is None else tls.wrap_socket(sock, server_hostname=host)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def send(
        self, api_key: int, version: int, body: dict[str, Any] | bytes, client_id: str | None = "raw"
    ) -> int:
        self.correlation += 1
        data = body if isinstance(body, bytes) else encode_request(api_key, version, body)
        self.send_frame(encode_request_header(api_key, version, self.correlation, client_id) + data)
        return self.correlation

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def recv(self, api_key: int, version: int, correlation: int | None = None) -> Any:
        frame = self.recv_frame()
        (cid,) = struct.unpack_from(">i", frame)
        if correlation is not None:
            assert cid == correlation, (cid, correlation)
        return decode_response(api_key, version, frame[skip_response_header(frame, api_key, version) :])

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        return self.recv(api_key, version, self.send(api_key, version, body))

    def await_transaction_coordinator(self, *transactional_ids: str, timeout: float = 30.0) -> None:
        """Ask FindCoordinator (key type 1) for ``transactional_ids`` until every one has a
        coordinator, or ``timeout`` seconds pass: the first such request creates
        __transaction_state, whose partitions load before they answer."""
        deadline = time.monotonic() + timeout
        body = {"key_type": 1, "coordinator_keys": list(transactional_ids)}
        while any(f.error_code for f in self.request(10, 4, body).coordinators):
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True if the broker closed the connection (EOF) within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True
        except TimeoutError:
            return False

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)
