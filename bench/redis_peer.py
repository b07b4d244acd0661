"""The peer measured in the same run: Redis Streams on this machine.

`RedisServer` starts Debian's `redis-server` on a free 127.0.0.1 port in a temp
dir with `appendonly yes`, `appendfsync everysec` (durability comparable to
acks=1 plus the broker's periodic flush), RDB snapshots off; `stop()` shuts it
down. `xadd_rate()` appends N entries of one 100-byte field with
`redis-benchmark` (pipelined XADD, its default 50 clients); `xrange_rate()`
reads them back with redis-py XRANGE in pages. Both return entries/s.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

from tests.broker_process import free_port

STREAM = "bench-stream"


class RedisServer:
    """A private redis-server for one bench run: 127.0.0.1 only, data in `directory`."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: `make bench` installs it (Makefile bench-tools)")
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> RedisServer:
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = self.client()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def xadd_rate(server: RedisServer, n: int, size: int = 100, pipeline: int = 64) -> float:
    """redis-benchmark: n pipelined `XADD bench-stream * v <size bytes>`; entries/s (its own figure)."""
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise RuntimeError("redis-benchmark not found: `make bench` installs redis-tools")
    res = subprocess.run(
        [binary, "-h", "127.0.0.1", "-p", str(server.port), "-n", str(n), "-P", str(pipeline), "--csv"]
        + ["XADD", STREAM, "*", "v", "x" * size],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    # --csv: a header line, then "name","rps",... per test
    line = [ln for ln in res.stdout.splitlines() if ln.strip()][-1]
    rate = float(line.split(",")[1].strip('"'))
    got = server.client().xlen(STREAM)
    if got < n:
        raise RuntimeError(f"redis-benchmark appended {got} of {n} entries")
    return rate


def xrange_rate(server: RedisServer, n: int, page: int = 10_000) -> float:
    """Read n entries back with XRANGE in pages of `page`; entries/s."""
    client = server.client()
    got = 0
    lower = "-"
    start = time.perf_counter()
    while got < n:
        entries = client.xrange(STREAM, min=lower, max="+", count=page)
        if not entries:
            break
        got += len(entries)
        lower = "(" + entries[-1][0].decode()
    elapsed = time.perf_counter() - start
    if got < n:
        raise RuntimeError(f"XRANGE read {got} of {n} entries")
    return got / elapsed
