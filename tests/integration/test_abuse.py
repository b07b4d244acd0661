"""Hostile load: many connections sending garbage, many parked fetches, while a normal client is served.

The default suite runs a short version; `make test-all` (marker `slow`) runs
the full one from the issue: 1,000 garbage connections for 60 s and 200
parked fetches, with the broker's RSS bounded throughout.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
import threading
import time
from pathlib import Path

import pytest

from protocol.headers import encode_request_header
from protocol.messages import encode_request
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess, rss_mb
from tests.integration.test_wire import create, fetch_request, produce
from tests.wire import RawClient

RSS_BOUND_MB = 400


def garbage(rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    if kind == 0:
        return os.urandom(rng.randrange(1, 200))
    if kind == 1:  # plausible size prefix, random body
        body = os.urandom(rng.randrange(1, 300))
        return struct.pack(">i", len(body)) + body
    if kind == 2:  # valid header, corrupt body
        body = encode_request_header(rng.choice([0, 1, 3, 19]), 4, 1, "x") + os.urandom(rng.randrange(0, 64))
        return struct.pack(">i", len(body)) + body
    if kind == 3:  # huge or negative sizes
        return struct.pack(">i", rng.choice([-5, 0, 104_857_601, 0x7FFFFFFF]))
    return struct.pack(">i", 1000) + os.urandom(10)  # a frame that never completes


async def abuse(port: int, connections: int, seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    sent = 0

    async def one() -> None:
        nonlocal sent
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            try:
                for _ in range(rng.randrange(1, 5)):
                    writer.write(garbage(rng))
                    sent += 1
                await writer.drain()
                await asyncio.wait_for(reader.read(1024), timeout=rng.uniform(0.05, 0.5))
            except (OSError, TimeoutError):
                pass
            finally:
                writer.close()

    await asyncio.gather(*(one() for _ in range(connections)))
    return sent


def park_fetches(port: int, topic: str, count: int) -> list[RawClient]:
    parked = []
    for _ in range(count):
        c = RawClient(port)
        c.send(1, 11, fetch_request(topic, 0, max_wait=120_000, min_bytes=1))
        parked.append(c)
    return parked


def run_abuse(tmp_path: Path, connections: int, seconds: float, fetches: int) -> None:
    proc = BrokerProcess(tmp_path / "data", extra=["--log-level", "ERROR"]).start()
    assert proc.proc is not None
    pid = proc.proc.pid
    try:
        with RawClient(proc.port) as normal:
            create(normal, "abuse")
            create(normal, "parked")
            parked = park_fetches(proc.port, "parked", fetches)
            peak = [rss_mb(pid)]
            done = threading.Event()
            served = [0]

            def keep_serving() -> None:
                with RawClient(proc.port) as c:
                    while not done.is_set():
                        assert produce(c, "abuse", build_batch([Record(0, 0, b"k", b"v")])).error_code == 0
                        served[0] += 1
                        peak.append(rss_mb(pid))
                        time.sleep(0.05)

            t = threading.Thread(target=keep_serving)
            t.start()
            try:
                sent = asyncio.run(abuse(proc.port, connections, seconds, seed=7))
            finally:
                done.set()
                t.join()
            assert sent > connections
            assert served[0] >= seconds * 5, f"normal client served only {served[0]} times"
            # the fetches stayed parked through the abuse; one produce wakes and answers them all
            produce(normal, "parked", build_batch([Record(0, 0, None, b"wake")]))
            for c in parked:
                part = c.recv(1, 11).responses[0].partitions[0]
                assert part.error_code == 0 and part.records
                c.close()
            assert normal.request(18, 2, {}).error_code == 0
            assert max(peak) < RSS_BOUND_MB, f"broker RSS peaked at {max(peak):.0f} MB"
    finally:
        assert proc.stop() == 0, proc.log()


def test_garbage_connections_short(tmp_path: Path) -> None:
    run_abuse(tmp_path, connections=100, seconds=4, fetches=50)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_garbage_connections_full(tmp_path: Path) -> None:
    run_abuse(tmp_path, connections=1000, seconds=60, fetches=200)


def test_slow_reader_does_not_grow_broker_memory(tmp_path: Path) -> None:
    """A client that pipelines fetches of 1 MB each and never reads: reading pauses, RSS stays bounded."""
    proc = BrokerProcess(tmp_path / "data", extra=["--log-level", "ERROR"]).start()
    assert proc.proc is not None
    pid = proc.proc.pid
    try:
        with RawClient(proc.port) as normal:
            create(normal, "big")
            for _ in range(4):
                produce(
                    normal, "big", build_batch([Record(i, 0, None, os.urandom(1000)) for i in range(900)])
                )
            slow = RawClient(proc.port)
            slow.sock.setblocking(False)
            request = encode_request_header(1, 11, 1, "slow") + encode_request(1, 11, fetch_request("big", 0))
            frame = struct.pack(">i", len(request)) + request
            queued = 0
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and queued < 2000:
                try:
                    slow.sock.send(frame)  # may send part of a frame once the buffers are full: fine
                    queued += 1
                except BlockingIOError:
                    time.sleep(0.05)
            rss = rss_mb(pid)
            print(f"slow reader: {queued} fetches sent, broker RSS {rss:.0f} MB")
            assert normal.request(18, 2, {}).error_code == 0
            assert rss < RSS_BOUND_MB, f"broker RSS {rss:.0f} MB with {queued} unread 3.6 MB fetches queued"
            slow.close()
    finally:
        assert proc.stop() == 0, proc.log()
