"""BrokerConnection against a scripted fake broker: version negotiation, pipelining, correlation, timeouts."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from client.connection import BrokerConnection
from client.errors import KafkaConnectionError, KafkaTimeoutError, UnsupportedVersionError
from protocol.headers import parse_request_header
from protocol.messages import decode_request, encode_response

pytestmark = pytest.mark.timeout(30)

Handler = Callable[[Any, Any], "bytes | None"]


def api_versions(versions: dict[int, tuple[int, int]], version: int = 0, error: int = 0) -> bytes:
    keys = [
        {"api_key": k, "min_version": lo, "max_version": hi, "tagged_fields": {}}
        for k, (lo, hi) in versions.items()
    ]
    body = {"error_code": error, "api_keys": keys, "throttle_time_ms": 0, "tagged_fields": {}}
    return encode_response(18, version, body)


class FakeBroker:
    """Reads request frames and answers each with ``handler(header, raw frame)`` (None: no answer)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[tuple[int, int]] = []
        self.server: asyncio.Server | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                header = parse_request_header(frame)
                self.seen.append((header.api_key, header.api_version))
                body = self.handler(header, frame)
                if body is not None:
                    writer.write(struct.pack(">ii", len(body) + 4, header.correlation_id) + body)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]


@pytest.fixture
async def make_broker() -> AsyncIterator[Callable[[Handler], Any]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> FakeBroker:
        fake = FakeBroker(handler)
        fake.server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
        servers.append(fake.server)
        return fake

    yield start
    for s in servers:
        s.close()
        await s.wait_closed()


BASIC = {18: (0, 3), 3: (0, 12), 0: (3, 9), 1: (4, 16)}


def metadata_body(version: int, n_topics: int = 0) -> bytes:
    topics = [
        {"error_code": 0, "name": f"t{i}" + "x" * 200, "is_internal": False, "partitions": []}
        for i in range(n_topics)
    ]
    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c", "controller_id": 0, "topics": topics}
    return encode_response(3, version, body)


async def test_negotiates_highest_common_versions(make_broker: Any) -> None:
    def handler(h: Any, frame: bytes) -> bytes | None:
        if h.api_key == 18:
            return api_versions(BASIC, version=min(h.api_version, 3))
        return None

    fake = await make_broker(handler)
    conn = await BrokerConnection.open("127.0.0.1", fake.port, client_id="t", node_id=0, timeout=5)
    # Ours: Metadata 0-5, Produce 3-7, Fetch 4-11; the broker's ranges are wider.
    assert conn.versions[3] == 5 and conn.versions[0] == 7 and conn.versions[1] == 11
    assert 2 not in conn.versions  # ListOffsets: the broker does not have it
    with pytest.raises(UnsupportedVersionError, match="ListOffsets"):
        conn.request(2, {})
    conn.close()


async def test_falls_back_when_apiversions_v3_is_unsupported(make_broker: Any) -> None:
    def handler(h: Any, frame: bytes) -> bytes | None:
        if h.api_key == 18 and h.api_version > 2:
            # An older broker: error 35 and a v0 body naming the ApiVersions versions it has.
            return api_versions({18: (0, 2)}, version=0, error=35)
        if h.api_key == 18:
            return api_versions({18: (0, 2), 3: (0, 5)}, version=h.api_version)
        return None

    fake = await make_broker(handler)
    conn = await BrokerConnection.open("127.0.0.1", fake.port, client_id=None, node_id=0, timeout=5)
    assert [v for k, v in fake.seen if k == 18] == [3, 2]
    assert conn.versions == {18: 2, 3: 5}
    conn.close()


async def test_pipelined_requests_and_a_big_frame(make_broker: Any) -> None:
    def handler(h: Any, frame: bytes) -> bytes | None:
        if h.api_key == 18:
            return api_versions(BASIC, version=min(h.api_version, 3))
        req = decode_request(3, h.api_version, frame[h.size :])
        return metadata_body(h.api_version, n_topics=len(req.topics or []))

    fake = await make_broker(handler)
    conn = await BrokerConnection.open("127.0.0.1", fake.port, client_id="t", node_id=0, timeout=5)
    # Three requests in flight at once, the last answer ~400 KB (read straight into its own buffer).
    futures = [
        conn.request(3, {"topics": [{"name": "a"}] * n, "allow_auto_topic_creation": False})
        for n in (1, 2, 2000)
    ]
    assert conn.in_flight == 3
    answers = await asyncio.gather(*futures)
    assert [len(a.topics) for a in answers] == [1, 2, 2000]
    conn.close()


async def test_wrong_correlation_id_closes_the_connection(make_broker: Any) -> None:
    def handler(h: Any, frame: bytes) -> bytes | None:
        if h.api_key == 18:
            return api_versions(BASIC, version=min(h.api_version, 3))
        h.correlation_id += 7  # answer as if to another request
        return metadata_body(h.api_version)

    fake = await make_broker(handler)
    conn = await BrokerConnection.open("127.0.0.1", fake.port, client_id="t", node_id=0, timeout=5)
    first = conn.request(3, {"topics": [], "allow_auto_topic_creation": False})
    second = conn.request(3, {"topics": [], "allow_auto_topic_creation": False})
    for f in (first, second):
        with pytest.raises(KafkaConnectionError, match="out-of-sync"):
            await f
    assert conn.is_closed
    with pytest.raises(KafkaConnectionError):
        conn.request(3, {"topics": [], "allow_auto_topic_creation": False})


async def test_request_timeout_closes_the_connection(make_broker: Any) -> None:
    def handler(h: Any, frame: bytes) -> bytes | None:
        return api_versions(BASIC, version=min(h.api_version, 3)) if h.api_key == 18 else None

    fake = await make_broker(handler)
    conn = await BrokerConnection.open("127.0.0.1", fake.port, client_id="t", node_id=0, timeout=5)
    with pytest.raises(KafkaTimeoutError, match="timed out after 0.2 s"):
        await conn.send(3, {"topics": [], "allow_auto_topic_creation": False}, timeout=0.2)
    assert conn.is_closed


async def test_unreachable_and_silent_brokers() -> None:
    with pytest.raises(KafkaConnectionError, match="cannot connect to 127.0.0.1:1"):
        await BrokerConnection.open("127.0.0.1", 1, client_id=None, node_id=0, timeout=2)
    accepted: list[asyncio.StreamWriter] = []
    silent = await asyncio.start_server(lambda _r, w: accepted.append(w), "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    try:
        with pytest.raises(KafkaConnectionError, match="did not answer ApiVersions"):
            await BrokerConnection.open("127.0.0.1", port, client_id=None, node_id=0, timeout=0.3)
    finally:
        for w in accepted:
            w.close()
        silent.close()
        await silent.wait_closed()


async def test_cancelling_a_connect_is_never_lost() -> None:
    """A task cancelled while it connects ends cancelled, whatever the connect was doing at that
    moment. Python 3.11's ``asyncio.wait_for`` returned the inner result instead when the connect
    had just finished (here: refused), so a cancelled task went on; the console then never stopped
    after it failed to bind its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: connecting is refused
    outcomes: dict[str, int] = {}
    for i in range(120):
        task = asyncio.ensure_future(
            BrokerConnection.open("127.0.0.1", port, client_id="t", node_id=-1, timeout=5)
        )
        for _ in range(i % 6):  # cancel at each step the connect goes through
            await asyncio.sleep(0)
        if task.done():  # refused before the cancel came: nothing to lose
            outcomes["done first"] = outcomes.get("done first", 0) + 1
            task.exception()
            continue
        task.cancel()
        try:
            await task
            outcome = "returned"
        except asyncio.CancelledError:
            outcome = "cancelled"
        except Exception as exc:
            outcome = type(exc).__name__
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.keys() <= {"cancelled", "done first"}, outcomes
    assert outcomes["cancelled"] >= 60
