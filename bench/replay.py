"""Produce load from pre-encoded requests: a generator whose cost per byte is the kernel's copy.

For large records librdkafka is the limit of the 1 MB cell: confluent-kafka
spends about a core-second per GB on its own copies and framing, as much as
the broker does to store the bytes, and the two share two cores. This is the
counterpart of `redis-benchmark -P`, which feeds Redis pipelined, pre-encoded
commands: it builds one Produce request (v7, one record batch of one record of
``size`` bytes, CRC included) per partition once, then sends ``count`` of them
round-robin over the partitions on one connection, ``window`` in flight (as
librdkafka's max.in.flight), patching only the correlation id. Every response
is read and every partition's error code must be 0, else it exits non-zero.
The bench checks the stored count afterwards with a client of its own.

Run in its own process: ``python -m bench.replay BOOTSTRAP TOPIC COUNT SIZE PARTITIONS ACKS [WINDOW]``
prints one JSON line: {"records", "bytes", "seconds", "cpu_seconds"}; `run` does
that from the bench. `ceiling` is the generator's own limit: acks=0 into a
socket that only reads (in this process), no broker.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import deque

from client.records import build_batch
from protocol.headers import encode_request_header
from protocol.messages import decode_response, encode_request

PRODUCE_KEY, PRODUCE_VERSION = 0, 7
_CORRELATION_AT = 8  # size prefix (4), api key (2), api version (2)
_I32 = struct.Struct(">i")


def produce_frames(topic: str, size: int, partitions: int, acks: int) -> list[bytearray]:
    """One framed Produce request per partition, each a single-record batch of ``size`` random bytes."""
    value = os.urandom(size)
    frames = []
    for p in range(partitions):
        batch = build_batch([(None, value, int(time.time() * 1000), None)])
        body = encode_request(
            PRODUCE_KEY,
            PRODUCE_VERSION,
            {
                "transactional_id": None,
                "acks": acks,
                "timeout_ms": 30_000,
                "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": bytes(batch)}]}],
            },
        )
        payload = encode_request_header(PRODUCE_KEY, PRODUCE_VERSION, 0, "bench-replay") + body
        frames.append(bytearray(_I32.pack(len(payload)) + payload))
    return frames


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("broker closed the connection")
        got += k
    return bytes(buf)


def _check_response(sock: socket.socket, correlation: int) -> None:
    (size,) = _I32.unpack(_recv_exact(sock, 4))
    frame = _recv_exact(sock, size)
    (cid,) = _I32.unpack_from(frame)
    if cid != correlation:
        raise RuntimeError(f"response to correlation id {cid}, expected {correlation}")
    response = decode_response(PRODUCE_KEY, PRODUCE_VERSION, frame[4:])
    for topic in response.responses:
        for part in topic.partition_responses:
            if part.error_code:
                raise RuntimeError(f"partition {part.index}: error code {part.error_code}")


def replay(
    bootstrap: str, topic: str, count: int, size: int, partitions: int, acks: int, window: int = 5
) -> dict:
    """Send ``count`` Produce requests (see the module doc); figures of the run."""
    host, port = bootstrap.rsplit(":", 1)
    frames = produce_frames(topic, size, partitions, acks)
    pending: deque[int] = deque()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(count):
            if len(pending) >= window:
                _check_response(sock, pending.popleft())
            frame = frames[i % partitions]
            _I32.pack_into(frame, _CORRELATION_AT, i)
            sock.sendall(frame)
            if acks != 0:
                pending.append(i)
        while pending:
            _check_response(sock, pending.popleft())
    seconds = time.perf_counter() - start
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"records": count, "bytes": count * size, "seconds": seconds, "cpu_seconds": cpu}


def run(bootstrap: str, topic: str, count: int, size: int, partitions: int, acks: int) -> dict:
    """`replay` in a child process (so its CPU is its own); its figures."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.replay",
            bootstrap,
            topic,
            str(count),
            str(size),
            str(partitions),
            str(acks),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    if out.returncode != 0:
        raise RuntimeError(f"bench.replay failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def ceiling(count: int, size: int) -> float:
    """Bytes/s `replay` sends with acks=0 into a socket that reads and discards (no broker)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        received = [0]

        def sink() -> None:
            conn, _ = listener.accept()
            buf = memoryview(bytearray(1 << 20))
            with conn:
                while n := conn.recv_into(buf):
                    received[0] += n

        reader = threading.Thread(target=sink, daemon=True)
        reader.start()
        figures = run(f"127.0.0.1:{listener.getsockname()[1]}", "ceiling", count, size, 1, 0)
        reader.join(60)
    if received[0] < figures["bytes"]:
        raise RuntimeError(f"replay ceiling: {received[0]} of {figures['bytes']} bytes arrived")
    return figures["bytes"] / figures["seconds"]


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) not in (6, 7):
        sys.exit(__doc__.strip().splitlines()[-2])
    bootstrap, topic, count, size, partitions, acks = args[:6]
    window = int(args[6]) if len(args) == 7 else 5
    print(json.dumps(replay(bootstrap, topic, int(count), int(size), int(partitions), int(acks), window)))
