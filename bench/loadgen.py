"""Load generators for the broker suite, and their own ceilings measured without a broker.

Two generators, both librdkafka underneath:
- confluent-kafka from Python (`py_produce`, `py_consume`, `latency`): the
  `produce()` call loop is the limit near 1M calls/s on this machine;
- kcat, the C command-line client (`kcat_produce`, `kcat_consume`), reading a
  prepared file of newline-separated records (`record_file`), one process per
  producer connection.

Ceilings: `py_ceiling()` times `produce()` into a producer whose broker is
unreachable (nothing leaves the process); `kcat_ceiling()` times kcat into
librdkafka's in-process mock cluster (`test.mock.num.brokers=1`), so it also
pays for a (C) broker on the same cores: a lower bound of the generator's own.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import NamedTuple

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.broker_process import free_port

# librdkafka producer settings shared by both generators: big batches, no compression.
PRODUCER: dict[str, object] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 1_000_000,
    "message.max.bytes": 1_000_000,
    "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 2_000_000,
    "compression.type": "none",
    "enable.idempotence": False,
}
CONSUMER: dict[str, object] = {
    "group.id": "bench",
    "enable.auto.commit": False,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 10485760,
    # librdkafka backs a partition off for fetch.queue.backoff.ms (1 s) once its local queue
    # holds queued.min.messages; a consumer draining at full speed must not idle on that timer.
    "queued.max.messages.kbytes": 1048576,
    "queued.min.messages": 10_000_000,
    "fetch.queue.backoff.ms": 1,
}
# Consumer keys that kcat does not take (enable.auto.commit is Python's; Debian's kcat is built on an
# older librdkafka without fetch.queue.backoff.ms).
KCAT_MISSING = ("enable.auto.commit", "fetch.queue.backoff.ms")


def _kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        raise RuntimeError("kcat not found: `make bench` installs it (Makefile bench-tools)")
    return path


def _x(config: dict[str, object]) -> list[str]:
    return [arg for k, v in config.items() for arg in ("-X", f"{k}={v}")]


def record_file(directory: Path, n: int, size: int) -> Path:
    """A file of n newline-terminated records of `size` bytes (the newline is the delimiter, not data)."""
    path = directory / f"records-{n}x{size}.txt"
    if not path.exists():
        line = os.urandom(size).hex().encode()[:size].replace(b"\n", b"x") + b"\n"
        with open(path, "wb") as f:
            chunk = line * 10_000
            for _ in range(n // 10_000):
                f.write(chunk)
            f.write(line * (n % 10_000))
    return path


def split(path: Path, parts: int) -> list[Path]:
    """The record file cut into ``parts`` files of whole lines (one per producer connection)."""
    if parts == 1:
        return [path]
    lines = path.read_bytes().splitlines(keepends=True)
    out = []
    for i in range(parts):
        p = path.with_suffix(f".{parts}.{i}")
        if not p.exists():
            p.write_bytes(b"".join(lines[i::parts]))
        out.append(p)
    return out


def py_ceiling(n: int, payload: bytes) -> float:
    """produce() calls/s with nothing behind the producer: the Python generator's own limit."""
    p = Producer(
        {
            **PRODUCER,
            "bootstrap.servers": f"127.0.0.1:{free_port()}",
            "message.timeout.ms": 600000,
            "log_level": 0,
        }
    )
    start = time.perf_counter()
    for i in range(n):
        p.produce("ceiling", payload, partition=i & 7)
        if i & 0xFFFF == 0:
            p.poll(0)
    elapsed = time.perf_counter() - start
    p.purge()
    return n / elapsed


def kcat_ceiling(path: Path, n: int) -> float:
    """kcat -P of the file into librdkafka's in-process mock cluster: records/s."""
    start = time.perf_counter()
    subprocess.run(
        [_kcat(), "-P", "-b", "127.0.0.1:1", "-t", "ceiling", "-X", "test.mock.num.brokers=1"]
        + _x(PRODUCER)
        + ["-l", str(path)],
        capture_output=True,
        timeout=600,
        check=True,
    )
    return n / (time.perf_counter() - start)


def kcat_produce(bootstrap: str, topic: str, paths: list[Path], n: int, acks: str) -> float:
    """One kcat -P process per file (= per producer connection), all at once; records/s overall.

    No key, no partition: librdkafka's partitioner spreads the records over the topic.
    """
    cmd = [_kcat(), "-P", "-b", bootstrap, "-t", topic, "-X", f"acks={acks}", *_x(PRODUCER)]
    start = time.perf_counter()
    procs = [
        subprocess.Popen([*cmd, "-l", str(p)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for p in paths
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"kcat -P failed ({proc.returncode}): {err.decode(errors='replace')[-500:]}")
    return n / (time.perf_counter() - start)


class ConsumeRun(NamedTuple):
    rate: float  # records/s, start-up taken out
    startup: float  # seconds
    broker_cpu: float  # broker CPU seconds during the timed read (0 without a pid)
    consumer_cpu: float  # kcat's own CPU seconds during the timed read
    seconds: float  # wall seconds of the timed read


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stored_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records in a topic by librdkafka's reading of the high watermarks (what a run really stored)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in range(partitions))
    finally:
        c.close()


def kcat_consume(bootstrap: str, topic: str, n: int, broker_pid: int | None = None) -> ConsumeRun:
    """kcat -C reading n records from the start, into /dev/null.

    The start-up (metadata, connecting to the leader, the first fetch) is timed
    apart by a kcat that reads one record, and subtracted, as the
    confluent-kafka figure does. The CPU both sides used during the full read
    shows which one is the limit: on two cores kcat, which formats and writes
    every record, usually is.
    """

    def timed(count: int) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [_kcat(), "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(count), "-q"]
            + _x({k: v for k, v in CONSUMER.items() if k not in KCAT_MISSING}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=600,
            check=True,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    startup = min(timed(1)[0], timed(1)[0])
    broker_before = cpu_seconds(broker_pid) if broker_pid else 0.0
    total, kcat_cpu = timed(n)
    broker_cpu = cpu_seconds(broker_pid) - broker_before if broker_pid else 0.0
    return ConsumeRun(n / max(total - startup, 1e-3), startup, broker_cpu, kcat_cpu, total)


def py_big_ceiling(n: int, payload: bytes, **extra: object) -> float:
    """confluent-kafka `py_produce` of n large records into librdkafka's mock cluster: records/s.

    The generator's own limit for the 1 MB cell (its copies and librdkafka's
    framing, plus a C broker on the same cores). The mock cluster creates
    topics with 4 partitions.
    """
    return py_produce(
        "127.0.0.1:1",
        "ceiling",
        n,
        payload,
        4,
        "1",
        **{"test.mock.num.brokers": 1, **extra},
    )


def py_produce(
    bootstrap: str, topic: str, n: int, payload: bytes, partitions: int, acks: str, **extra: object
) -> float:
    """confluent-kafka produce() loop, partition i % partitions; records/s until all are acknowledged."""
    p = Producer({**PRODUCER, "bootstrap.servers": bootstrap, "acks": acks, **extra})
    errors = [0]

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors[0] += 1

    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)
        if i & 0x3FFF == 0:
            p.poll(0)
    left = p.flush(300)
    elapsed = time.perf_counter() - start
    if left or errors[0]:
        raise RuntimeError(f"produce failed: {left} undelivered, {errors[0]} errors")
    return n / elapsed


def py_consume(bootstrap: str, topic: str, n: int, partitions: int) -> tuple[float, float]:
    """(records/s from the first record received to the n-th, seconds until the first record).

    The start-up part is librdkafka's own (it connects to the partition leader
    on a timer, about 0.5 s after metadata), so it is reported apart.
    """
    c = Consumer({**CONSUMER, "bootstrap.servers": bootstrap})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    first = 0.0
    deadline = start + 300
    while got < n and time.perf_counter() < deadline:
        batch = c.consume(num_messages=100_000, timeout=0.5)
        if batch and not first:
            first = time.perf_counter()
        for msg in batch:
            if msg.error() is None:
                got += 1
    end = time.perf_counter()
    c.close()
    if got < n:
        raise RuntimeError(f"consume got {got} of {n}")
    return n / (end - first), first - start


def latency(bootstrap: str, topic: str, rate: int, seconds: float, linger_ms: float = 0) -> list[float]:
    """End-to-end latencies in ms at a fixed `rate` records/s for `seconds` (one partition).

    Each record carries its perf_counter_ns at produce() time; a consumer thread
    in the same process notes the time each arrives (linger.ms=0, acks=1).
    """
    n = int(rate * seconds)
    c = Consumer({**CONSUMER, "bootstrap.servers": bootstrap, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    lat: list[float] = []
    done = threading.Event()

    def consume() -> None:
        deadline = time.monotonic() + seconds + 30
        while len(lat) < n and time.monotonic() < deadline:
            # poll(), not consume(num_messages=...): a batch call waits for its count or its timeout
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                lat.append((time.perf_counter_ns() - int(msg.value()[:20])) / 1e6)
        done.set()

    p = Producer({**PRODUCER, "bootstrap.servers": bootstrap, "acks": "1", "linger.ms": linger_ms})
    # let the consumer find its leader before the clock starts
    p.produce(topic, b"%020d" % time.perf_counter_ns(), partition=0)
    p.flush(10)
    n += 1
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    time.sleep(1.0)
    pad = b"x" * 80
    start = time.perf_counter()
    for i in range(n - 1):
        due = start + i / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        p.produce(topic, b"%020d" % time.perf_counter_ns() + pad, partition=0)
        p.poll(0)
    p.flush(30)
    done.wait(seconds + 30)
    c.close()
    return lat[1:]  # the warm-up record waited for the consumer's start-up


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")
