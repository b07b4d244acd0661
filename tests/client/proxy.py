"""A TCP proxy for fault injection: forwards 127.0.0.1:port to a broker and cuts connections on demand.

`cut()` aborts every proxied connection at once. `swallow_responses(n)` lets
the next ``n`` connections' requests through but drops the broker's answers
and then cuts the connection: the broker has applied the request, the client
never hears so, which is exactly when a naive retry writes a duplicate.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class ChaosProxy:
    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port: int = self.listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._swallow = 0
        self._closed = False
        self.cuts = 0
        self.swallowed = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def start(self, target_port: int) -> ChaosProxy:
        self.target = ("127.0.0.1", target_port)
        self._thread.start()
        return self

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            assert self.target is not None
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
                swallow = self._swallow > 0
                if swallow:
                    self._swallow -= 1
            threading.Thread(target=self._pump, args=(client, upstream, swallow), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket, swallow: bool) -> None:
        forwarded_requests = 0
        try:
            while True:
                readable, _, _ = select.select([client, upstream], [], [], 0.5)
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    if s is client:
                        upstream.sendall(data)
                        forwarded_requests += 1
                    elif swallow and forwarded_requests > 1:
                        # The broker answered something after the handshake: drop it and cut.
                        self.swallowed += 1
                        return
                    else:
                        client.sendall(data)
        except OSError:
            return
        finally:
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    s.close()
            with self._lock, contextlib.suppress(ValueError):
                self._pairs.remove((client, upstream))

    def cut(self) -> int:
        """Abort every open proxied connection; returns how many."""
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            for s in pair:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
        self.cuts += len(pairs)
        return len(pairs)

    def swallow_responses(self, connections: int = 1) -> None:
        with self._lock:
            self._swallow += connections

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()
