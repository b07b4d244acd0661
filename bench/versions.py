"""The versions suite: Produce and Fetch at Kafka 4's newest versions beside the old ones, same run.

What a version changes is the broker's work per request (decoding, the
handler, encoding), not per record: so this suite sends many small requests
and counts them. The client is as cheap as a client can be, so the broker is
the limit: every request is encoded once, before the clock starts, and sent
as bytes (only the correlation id patched); responses are read whole and not
decoded. Correctness is checked outside the timed loops: the stored record
count after producing, and one decoded answer of each fetch version.

- produce: ``REQUESTS`` Produce requests of one 10-record batch (100 B
  values) to one partition, acks=1, ``WINDOW`` in flight, at v7 (the newest
  of Kafka 2.x's layout) and at v13 (Kafka 4.1's newest: flexible, by topic ID);
- fetch: the same number of Fetch requests, each reading one of those
  batches (offsets known in advance), at v11 (by name) and at v18 (Kafka
  4.1's newest: flexible, by topic ID).

Each figure is the best of ``ROUNDS`` rounds, the versions alternating (and
which goes first) so that the machine's drift hits both. Goal (issue 17): new / old >= 0.95.
"""

from __future__ import annotations

import socket
import struct
import tempfile
import time
import uuid
from collections import deque
from pathlib import Path

from bench import loadgen
from bench.replay import _recv_exact
from client.records import build_batch
from protocol.headers import encode_request_header
from protocol.messages import encode_request
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

REQUESTS = 20_000
ROUNDS = 5
WINDOW = 5
RECORDS_PER_BATCH = 10
VALUE = b"v" * 100
_I32 = struct.Struct(">i")
_CORRELATION_AT = 8  # size prefix, api key, api version


def _frame(api_key: int, version: int, body: dict) -> bytearray:
    payload = encode_request_header(api_key, version, 0, "bench-versions") + encode_request(
        api_key, version, body
    )
    return bytearray(_I32.pack(len(payload)) + payload)


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = _I32.unpack(_recv_exact(sock, 4))
    return _recv_exact(sock, size)


def _pipeline(port: int, frames: list[bytearray]) -> float:
    """Send every frame, ``WINDOW`` in flight; requests per second."""
    return _timed(port, frames, None)[0]


def _timed(port: int, frames: list[bytearray], pid: int | None) -> tuple[float, float]:
    """(requests per second, broker CPU microseconds per request) of `_pipeline`."""
    cpu = loadgen.cpu_seconds(pid) if pid else 0.0
    rate = _send_all(port, frames)
    cpu = loadgen.cpu_seconds(pid) - cpu if pid else 0.0
    return rate, cpu / len(frames) * 1e6


def _send_all(port: int, frames: list[bytearray]) -> float:
    pending: deque[int] = deque()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.perf_counter()
        for i, frame in enumerate(frames):
            if len(pending) >= WINDOW:
                pending.popleft()
                _read_frame(sock)
            _I32.pack_into(frame, _CORRELATION_AT, i)
            sock.sendall(frame)
            pending.append(i)
        while pending:
            pending.popleft()
            _read_frame(sock)
        return len(frames) / (time.perf_counter() - start)


def _produce_frames(topic: str, version: int, requests: int, topic_id: uuid.UUID) -> list[bytearray]:
    batch = bytes(build_batch([(b"k", VALUE, int(time.time() * 1000), None)] * RECORDS_PER_BATCH))
    named = {"topic_id": topic_id} if version >= 13 else {"name": topic}
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 30_000,
        "topic_data": [{**named, "partition_data": [{"index": 0, "records": batch}]}],
    }
    frame = _frame(0, version, body)
    return [bytearray(frame) for _ in range(requests)]


def _fetch_body(version: int, topic: str, topic_id: uuid.UUID, offset: int, max_bytes: int) -> dict:
    named = {"topic_id": topic_id} if version >= 13 else {"topic": topic}
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                **named,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def _fetch_frames(
    version: int, topic: str, topic_id: uuid.UUID, batch_bytes: int, requests: int
) -> list[bytearray]:
    return [
        _frame(1, version, _fetch_body(version, topic, topic_id, i * RECORDS_PER_BATCH, batch_bytes))
        for i in range(requests)
    ]


def _check_fetch(port: int, version: int, topic: str, topic_id: uuid.UUID, batch_bytes: int) -> None:
    """One decoded answer per version: the batch at offset 10, whole, no error."""
    with RawClient(port) as c:
        resp = c.request(1, version, _fetch_body(version, topic, topic_id, RECORDS_PER_BATCH, batch_bytes))
    p = resp.responses[0].partitions[0]
    if p.error_code or len(p.records) != batch_bytes:
        raise RuntimeError(f"fetch v{version}: error {p.error_code}, {len(p.records)} bytes")


def _best(fig: dict[str, float], key: str, figures: tuple[float, float]) -> None:
    """Keep the highest rate and the lowest broker CPU per request seen for ``key``."""
    rate, cpu = figures
    fig[key] = max(fig.get(key, 0.0), rate)
    fig[key + "_cpu_us"] = min(fig.get(key + "_cpu_us", float("inf")), cpu)


def run(quick: bool = False) -> dict[str, float]:
    requests = REQUESTS // 4 if quick else REQUESTS
    fig: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            with RawClient(broker.port) as c:
                ids = {}
                for name in ("p7", "p13", "f"):
                    topic = {
                        "name": name,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    made = c.request(19, 7, {"topics": [topic], "timeout_ms": 5000}).topics[0]
                    if made.error_code:
                        raise RuntimeError(f"create {name}: error {made.error_code}")
                    ids[name] = made.topic_id
                topic_id = ids["f"]
            produce = {v: _produce_frames(f"p{v}", v, requests, ids[f"p{v}"]) for v in (7, 13)}
            pid = broker.proc.pid if broker.proc else None
            for i in range(ROUNDS):
                for v in (7, 13) if i % 2 == 0 else (13, 7):
                    _best(fig, f"produce_v{v}", _timed(broker.port, produce[v], pid))
            stored = {}
            with RawClient(broker.port) as c:
                for v in (7, 13):
                    answer = c.request(
                        2,
                        3,
                        {
                            "replica_id": -1,
                            "isolation_level": 0,
                            "topics": [
                                {"name": f"p{v}", "partitions": [{"partition_index": 0, "timestamp": -1}]}
                            ],
                        },
                    )
                    stored[v] = answer.topics[0].partitions[0].offset
            for v in (7, 13):
                if stored[v] != ROUNDS * requests * RECORDS_PER_BATCH:
                    raise RuntimeError(f"produce v{v}: {stored[v]} records stored")
            # The fetch topic: REQUESTS batches; each fetch reads exactly one.
            _pipeline(broker.port, _produce_frames("f", 11, requests, topic_id))
            with RawClient(broker.port) as c:  # max 1 byte: the first batch, whole
                first = c.request(1, 11, _fetch_body(11, "f", topic_id, 0, 1))
            batch_bytes = len(first.responses[0].partitions[0].records)
            fetch = {v: _fetch_frames(v, "f", topic_id, batch_bytes, requests) for v in (11, 18)}
            for v in (11, 18):
                _check_fetch(broker.port, v, "f", topic_id, batch_bytes)
            for i in range(ROUNDS):
                for v in (11, 18) if i % 2 == 0 else (18, 11):
                    _best(fig, f"fetch_v{v}", _timed(broker.port, fetch[v], pid))
        finally:
            broker.stop()
    fig["produce_ratio"] = fig["produce_v13"] / fig["produce_v7"]
    fig["fetch_ratio"] = fig["fetch_v18"] / fig["fetch_v11"]
    fig["produce_cpu_ratio"] = fig["produce_v7_cpu_us"] / fig["produce_v13_cpu_us"]
    fig["fetch_cpu_ratio"] = fig["fetch_v11_cpu_us"] / fig["fetch_v18_cpu_us"]
    print(f"\n== Produce and Fetch: newest versions beside the old ones (best of {ROUNDS} rounds) ==")
    print(f"  {'':38} {'req/s':>9} {'broker CPU/req':>15}")
    rows = (
        ("produce v7  (Kafka 2.x layout)", "produce_v7", None),
        ("produce v13 (flexible, by topic ID)", "produce_v13", "produce"),
        ("fetch v11   (by name)", "fetch_v11", None),
        ("fetch v18   (flexible, by topic ID)", "fetch_v18", "fetch"),
    )
    for label, key, ratio in rows:
        line = f"  {label:38} {fig[key]:>9,.0f} {fig[key + '_cpu_us']:>12.1f} us"
        if ratio:
            line += f"   new/old: rate {fig[ratio + '_ratio']:.3f}, CPU {fig[ratio + '_cpu_ratio']:.3f}"
        print(line)
    print("  goal (issue 17): new / old >= 0.95 (CPU: old cost / new cost)")
    return fig
