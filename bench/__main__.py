"""`make bench`: every benchmark suite, each figure beside a baseline measured in the same run.

Suites (`--suites`, default all): `broker` (below), `groups` (bench/groups.py:
rebalance latency, OffsetCommit throughput), `storage` (bench/storage.py:
lookup latency at 1M and 50M records, unclean recovery, cleaner throughput),
`client` (bench/client.py: our client against kafka-python, aiokafka and
confluent-kafka), `spark` (bench/spark.py: the Spark data source against a
synthetic Arrow source in the same Spark session).

The `broker` suite runs, in one process tree on this machine:
1. the load generator's own ceiling: confluent-kafka `produce()` calls/s into a
   producer whose broker is unreachable (nothing leaves the process), the
   baseline the broker figures are compared against;
2. produce N records of S bytes to P partitions, acks=1, linger.ms=5,
   batch.size 1 MB, no compression; records/s and MB/s;
3. consume them all back with a confluent-kafka consumer (assign mode);
4. produce again with acks=all (fsync group commit);
while sampling the broker's RSS, so a memory that is not flat shows up.

Figures are printed as a table, each with its ratio to the generator ceiling
measured in the same run (shared, noisy machines: ratios are the result).
Options: --records, --size, --partitions (defaults 1,000,000 / 100 / 8).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.broker_process import BrokerProcess, free_port, rss_mb  # noqa: E402


class RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[float] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(0.25):
            try:
                self.samples.append(rss_mb(self.pid))
            except OSError:
                return


def producer_config(bootstrap: str, acks: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "batch.size": 1_000_000,
        "batch.num.messages": 1_000_000,
        "message.max.bytes": 1_000_000,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000,
        "compression.type": "none",
        "enable.idempotence": False,
    }


def generator_ceiling(n: int, payload: bytes) -> float:
    """produce() calls/s with nothing behind the producer: the load generator's own limit."""
    p = Producer({**producer_config(f"127.0.0.1:{free_port()}", "1"), "message.timeout.ms": 600000})
    start = time.perf_counter()
    for i in range(n):
        p.produce("ceiling", payload, partition=i & 7)
        if i & 0xFFFF == 0:
            p.poll(0)
    elapsed = time.perf_counter() - start
    p.purge()
    return n / elapsed


def produce(bootstrap: str, topic: str, n: int, payload: bytes, partitions: int, acks: str) -> float:
    p = Producer(producer_config(bootstrap, acks))
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
        raise SystemExit(f"produce failed: {left} undelivered, {errors[0]} errors")
    return n / elapsed


def consume(bootstrap: str, topic: str, n: int, partitions: int) -> tuple[float, float]:
    """(records/s from the first record received to the last, seconds until the first record).

    The start-up part is librdkafka's own (it connects to the partition leader
    on a timer, about 0.5 s after metadata), so it is reported apart.
    """
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
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
    )
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
        raise SystemExit(f"consume got {got} of {n}")
    return n / (end - first), first - start


def main() -> None:
    ap = argparse.ArgumentParser(prog="make bench")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument(
        "--memory-gb", type=float, default=1.0, help="GB of 1 KB records for the memory pass (0: skip)"
    )
    ap.add_argument(
        "--suites",
        default="broker,groups,storage,client,spark",
        help="comma-separated: broker (this module's throughput run), groups, storage, client, spark",
    )
    args = ap.parse_args()
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    if "broker" in suites:
        broker_suite(args)
    for name in suites:
        if name != "broker":
            print(f"\n== bench.{name}", flush=True)
            importlib.import_module(f"bench.{name}").run()  # each suite prints its own table


def broker_suite(args: argparse.Namespace) -> None:
    n, size, parts = args.records, args.size, args.partitions
    payload = os.urandom(size)
    mb = size / 1e6

    rows: list[tuple[str, float, float]] = []
    mem_pass: list[float] = []
    ceiling = generator_ceiling(n, payload)
    rows.append(("generator ceiling (produce() calls, no broker)", ceiling, ceiling * mb))

    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", extra=["--log-level", "WARNING"]).start()
        sampler = RssSampler(broker.proc.pid)  # type: ignore[union-attr]
        sampler.start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for t in ("bench-acks1", "bench-acksall"):
                admin.create_topics([NewTopic(t, parts, 1)])[t].result(30)
            r = produce(broker.bootstrap, "bench-acks1", n, payload, parts, "1")
            rows.append((f"produce acks=1 ({n:,} x {size} B, {parts} partitions)", r, r * mb))
            r, startup = consume(broker.bootstrap, "bench-acks1", n, parts)
            rows.append((f"consume (from first record; start-up {startup:.2f} s)", r, r * mb))
            r = produce(broker.bootstrap, "bench-acksall", n, payload, parts, "all")
            rows.append(("produce acks=all (group-commit fsync)", r, r * mb))
            if args.memory_gb > 0:
                big = os.urandom(1000)
                count = int(args.memory_gb * 1e9 / len(big))
                admin.create_topics([NewTopic("bench-1k", parts, 1)])["bench-1k"].result(30)
                mark = len(sampler.samples)
                r = produce(broker.bootstrap, "bench-1k", count, big, parts, "1")
                rows.append((f"produce acks=1 ({count:,} x 1 KB: memory pass)", r, r * len(big) / 1e6))
                r, _ = consume(broker.bootstrap, "bench-1k", count, parts)
                rows.append(("consume 1 KB records", r, r * len(big) / 1e6))
                mem_pass = sampler.samples[mark:]
        finally:
            sampler.stop_event.set()
            broker.stop()

    print()
    print(f"{'benchmark':<55} {'records/s':>12} {'MB/s':>9} {'x ceiling':>10}")
    for name, rate, mbs in rows:
        print(f"{name:<55} {rate:>12,.0f} {mbs:>9.1f} {rate / ceiling:>10.2f}")
    s = sampler.samples or [0.0]
    third = max(1, len(s) // 3)
    print(
        f"\nbroker RSS MB over the run: start {s[0]:.0f}, max {max(s):.0f}, "
        f"mean of first third {sum(s[:third]) / third:.0f}, mean of last third {sum(s[-third:]) / third:.0f} "
        f"({len(s)} samples)"
    )
    if mem_pass:
        q = max(1, len(mem_pass) // 4)
        print(
            f"broker RSS MB during the {args.memory_gb:g} GB pass: first quarter mean "
            f"{sum(mem_pass[:q]) / q:.0f}, last quarter mean {sum(mem_pass[-q:]) / q:.0f}, max {max(mem_pass):.0f}"
        )


if __name__ == "__main__":
    main()
