"""Connection limits, idle timeouts and internal-error answers."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker import registry
from broker.config import BrokerConfig
from broker.server import BrokerServer
from protocol.errors import ErrorCode
from protocol.headers import encode_request_header
from protocol.messages import decode_response, encode_request
from tests.broker_process import BrokerProcess, rss_mb
from tests.wire import RawClient


def limited_broker(tmp_path: Path, **settings: str) -> BrokerProcess:
    env = {"MINIKAFKA_" + k.upper().replace(".", "_"): v for k, v in settings.items()}
    return BrokerProcess(tmp_path / "data", env=env).start()


def test_idle_and_stalled_connections_closed(tmp_path: Path) -> None:
    proc = limited_broker(tmp_path, **{"connections.max.idle.ms": "600"})
    try:
        with RawClient(proc.port) as stalled, RawClient(proc.port) as idle, RawClient(proc.port) as busy:
            stalled.sock.sendall(struct.pack(">i", 100) + b"\x00\x12")  # part of a frame, then nothing
            started = time.monotonic()
            for _ in range(8):
                assert busy.request(18, 2, {}).error_code == 0
                time.sleep(0.2)
            assert stalled.is_closed(timeout=3) and idle.is_closed(timeout=3)
            assert time.monotonic() - started < 5
            assert busy.request(18, 2, {}).error_code == 0  # active connections stay
    finally:
        assert proc.stop() == 0
    assert "reason=idle for" in proc.log()


def test_size_prefix_alone_commits_no_memory(tmp_path: Path) -> None:
    """40 connections announce 100 MB frames and send 100 KB of each: RAM follows the bytes sent."""
    proc = limited_broker(tmp_path)
    assert proc.proc is not None
    try:
        before = rss_mb(proc.proc.pid)
        clients = [RawClient(proc.port) for _ in range(40)]
        for c in clients:
            c.sock.sendall(
                struct.pack(">i", 100_000_000) + struct.pack(">hhih", 0, 7, 1, -1) + b"\0" * 100_000
            )
        with RawClient(proc.port) as busy:
            assert busy.request(18, 2, {}).error_code == 0
        grown = rss_mb(proc.proc.pid) - before
        assert grown < 150, f"broker RSS grew by {grown:.0f} MB for 4 MB of partial frames"
        for c in clients:
            c.close()
    finally:
        assert proc.stop() == 0


def test_max_connections_per_ip(tmp_path: Path) -> None:
    proc = limited_broker(tmp_path, **{"max.connections.per.ip": "3"})
    try:
        clients = [RawClient(proc.port) for _ in range(3)]
        for c in clients:
            assert c.request(18, 2, {}).error_code == 0
        with RawClient(proc.port) as extra:
            assert extra.is_closed(timeout=3)
        clients.pop().close()
        time.sleep(0.2)
        with RawClient(proc.port) as again:
            assert again.request(18, 2, {}).error_code == 0
        for c in clients:
            c.close()
    finally:
        assert proc.stop() == 0
    assert "max.connections.per.ip (3) reached" in proc.log()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[BrokerServer]:
    config = BrokerConfig.load(None, overrides={"log.dirs": str(tmp_path / "d"), "port": 0})
    srv = BrokerServer(config)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


async def roundtrip(port: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        payload = encode_request_header(api_key, version, 7, "t") + encode_request(api_key, version, body)
        writer.write(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        frame = await reader.readexactly(size)
        return decode_response(api_key, version, frame[4:])
    except asyncio.IncompleteReadError:
        return None
    finally:
        writer.close()


async def test_internal_error_answers_unknown_server_error(
    server: BrokerServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(ctx: Any, req: Any) -> Any:
        raise RuntimeError("injected failure")

    for key in (18, 3):
        h = registry.HANDLERS[key]
        monkeypatch.setitem(
            registry.HANDLERS,
            key,
            registry.ApiHandler(key, h.min_version, h.max_version, boom, h.advertise_min),
        )
    resp = await roundtrip(server.port, 18, 2, {})
    assert resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    # Metadata has no top-level error code: the connection is closed instead
    assert await roundtrip(server.port, 3, 1, {"topics": None}) is None
    failures = [r for r in caplog.records if "internal error in api" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info for r in failures)
