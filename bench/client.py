"""Client throughput: our client against kafka-python, aiokafka and confluent-kafka, on one broker.

For each client, in a fresh subprocess (so no client's threads, buffers or GC
debt weigh on the next): produce N records of S bytes to P partitions
(partition i % P, acks=1, linger.ms=5, batch size 1 MB, no compression, no
idempotence), then consume N records from one shared topic (written once by
our producer, so every consumer reads the same batches) in assign mode from
the beginning, touching every record. Produce is timed from the first send to
the end of flush; consume from the first record received to the N-th (connect
and metadata time is reported apart). Figures are records/s, with the ratios
the issue asks for: ours / kafka-python (goal >= 3) and ours / aiokafka
(goal >= 1.5); confluent-kafka (librdkafka, C) is the reference.

    python -m bench.client [--records N] [--size S] [--partitions P]

`run()` returns [(label, value, unit)] rows: records/s figures and "x" ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CLIENTS = ("minikafka", "kafka-python", "aiokafka", "confluent-kafka")
FETCH_MAX = 52_428_800
PARTITION_FETCH_MAX = 4 * 1_048_576
BATCH = 1_000_000


# -- one measurement (runs in a child process) -----------------------------------------------------------


def produce(client: str, bootstrap: str, topic: str, n: int, size: int, parts: int) -> float:
    payload = bytes(range(256)) * (size // 256 + 1)
    payload = payload[:size]
    if client == "minikafka":
        from client import Producer

        p = Producer(
            bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=BATCH, max_request_size=10 * BATCH
        )
        p.partitions_for(topic)
        send = p.send
        start = time.perf_counter()
        for i in range(n):
            send(topic, payload, partition=i % parts)
        p.flush()
        elapsed = time.perf_counter() - start
        p.close()
    elif client == "kafka-python":
        from kafka import KafkaProducer

        kp = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks=1,
            linger_ms=5,
            batch_size=BATCH,
            max_request_size=10 * BATCH,
        )
        kp.partitions_for(topic)
        start = time.perf_counter()
        for i in range(n):
            kp.send(topic, payload, partition=i % parts)
        kp.flush()
        elapsed = time.perf_counter() - start
        kp.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaProducer

        async def go() -> float:
            ap = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                acks=1,
                linger_ms=5,
                max_batch_size=BATCH,
                max_request_size=10 * BATCH,
            )
            await ap.start()
            await ap.partitions_for(topic)
            start = time.perf_counter()
            for i in range(n):
                await ap.send(topic, payload, partition=i % parts)
            await ap.flush()
            elapsed = time.perf_counter() - start
            await ap.stop()
            return elapsed

        elapsed = asyncio.run(go())
    else:
        from confluent_kafka import Producer as CProducer

        cp = CProducer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "1",
                "linger.ms": 5,
                "batch.size": BATCH,
                "batch.num.messages": 1_000_000,
                "queue.buffering.max.messages": 2_000_000,
                "queue.buffering.max.kbytes": 2_000_000,
                "enable.idempotence": False,
            }
        )
        start = time.perf_counter()
        for i in range(n):
            while True:
                try:
                    cp.produce(topic, payload, partition=i % parts)
                    break
                except BufferError:
                    cp.poll(0.01)
            if i & 0x3FFF == 0:
                cp.poll(0)
        left = cp.flush(300)
        elapsed = time.perf_counter() - start
        if left:
            raise SystemExit(f"confluent-kafka: {left} records undelivered")
    return n / elapsed


def consume(client: str, bootstrap: str, topic: str, n: int, parts: int) -> tuple[float, float]:
    """(records/s from the first record to the n-th, seconds until the first record)."""
    got = 0
    start = time.perf_counter()
    first = 0.0
    if client == "minikafka":
        from client import Consumer, TopicPartition

        c = Consumer(
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            fetch_max_bytes=FETCH_MAX,
            max_partition_fetch_bytes=PARTITION_FETCH_MAX,
        )
        c.assign([TopicPartition(topic, p) for p in range(parts)])
        while got < n:
            records = c.poll(1.0, max_records=100_000)
            if records and not first:
                first = time.perf_counter()
            for r in records:
                r.value  # noqa: B018 - touch every record, as an application does
                got += 1
        end = time.perf_counter()
        c.close()
    elif client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTP

        kc = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_bytes=FETCH_MAX,
            max_partition_fetch_bytes=PARTITION_FETCH_MAX,
        )
        kc.assign([KTP(topic, p) for p in range(parts)])
        while got < n:
            batches = kc.poll(timeout_ms=1000, max_records=100_000)
            if batches and not first:
                first = time.perf_counter()
            for recs in batches.values():
                for r in recs:
                    r.value  # noqa: B018
                    got += 1
        end = time.perf_counter()
        kc.close()
    elif client == "aiokafka":
        from aiokafka import AIOKafkaConsumer
        from aiokafka import TopicPartition as ATP

        async def go() -> tuple[float, float]:
            nonlocal got
            first = 0.0
            ac = AIOKafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                fetch_max_bytes=FETCH_MAX,
                max_partition_fetch_bytes=PARTITION_FETCH_MAX,
            )
            await ac.start()
            ac.assign([ATP(topic, p) for p in range(parts)])
            while got < n:
                batches = await ac.getmany(timeout_ms=1000, max_records=100_000)
                if batches and not first:
                    first = time.perf_counter()
                for recs in batches.values():
                    for r in recs:
                        r.value  # noqa: B018
                        got += 1
            end = time.perf_counter()
            await ac.stop()
            return first, end

        first, end = asyncio.run(go())
    else:
        from confluent_kafka import OFFSET_BEGINNING
        from confluent_kafka import Consumer as CConsumer
        from confluent_kafka import TopicPartition as CTP

        cc = CConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-client",
                "enable.auto.commit": False,
                "fetch.max.bytes": FETCH_MAX,
                "max.partition.fetch.bytes": PARTITION_FETCH_MAX,
                "queued.max.messages.kbytes": 1048576,
                "queued.min.messages": 10_000_000,
                "fetch.queue.backoff.ms": 1,
            }
        )
        cc.assign([CTP(topic, p, OFFSET_BEGINNING) for p in range(parts)])
        while got < n:
            batch = cc.consume(num_messages=100_000, timeout=0.5)
            if batch and not first:
                first = time.perf_counter()
            for m in batch:
                if m.error() is None:
                    m.value()
                    got += 1
        end = time.perf_counter()
        cc.close()
    return n / (end - first), first - start


def _child(argv: list[str]) -> None:
    op, client, bootstrap, topic, n, size, parts = argv
    if op == "produce":
        print(json.dumps({"rate": produce(client, bootstrap, topic, int(n), int(size), int(parts))}))
    else:
        rate, startup = consume(client, bootstrap, topic, int(n), int(parts))
        print(json.dumps({"rate": rate, "startup": startup}))


def _measure(
    op: str, client: str, bootstrap: str, topic: str, n: int, size: int, parts: int
) -> dict[str, Any]:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.client",
            "--child",
            op,
            client,
            bootstrap,
            topic,
            str(n),
            str(size),
            str(parts),
        ],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if res.returncode != 0:
        raise RuntimeError(f"{client} {op} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


# -- the whole run ---------------------------------------------------------------------------------


def run(records: int = 1_000_000, size: int = 100, partitions: int = 8) -> list[tuple[str, float, str]]:
    """Start a broker, measure every client, print the table; returns [(label, value, unit)]."""
    from client import AdminClient, NewTopic
    from tests.broker_process import BrokerProcess

    rows: list[tuple[str, float, str]] = []
    produce_rate: dict[str, float] = {}
    consume_rate: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", extra=["--log-level", "WARNING"]).start()
        try:
            with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
                topics = [f"bench-client-{c}" for c in CLIENTS] + ["bench-client-read"]
                admin.create_topics([NewTopic(t, partitions) for t in topics])
            for client in CLIENTS:
                r = _measure(
                    "produce", client, broker.bootstrap, f"bench-client-{client}", records, size, partitions
                )
                produce_rate[client] = r["rate"]
                print(f"  produce  {client:<16} {r['rate']:>12,.0f} records/s", flush=True)
            _measure("produce", "minikafka", broker.bootstrap, "bench-client-read", records, size, partitions)
            for client in CLIENTS:
                r = _measure(
                    "consume", client, broker.bootstrap, "bench-client-read", records, size, partitions
                )
                consume_rate[client] = r["rate"]
                print(
                    f"  consume  {client:<16} {r['rate']:>12,.0f} records/s (first record after {r['startup']:.2f} s)",
                    flush=True,
                )
        finally:
            broker.stop()

    print(f"\nclient throughput, {records:,} records x {size} B, {partitions} partitions (records/s)")
    print(f"{'client':<18} {'produce':>12} {'consume':>12}")
    for client in CLIENTS:
        print(f"{client:<18} {produce_rate[client]:>12,.0f} {consume_rate[client]:>12,.0f}")
        rows.append((f"{client} produce", produce_rate[client], "records/s"))
        rows.append((f"{client} consume", consume_rate[client], "records/s"))
    print()
    for other, goal in (("kafka-python", 3.0), ("aiokafka", 1.5), ("confluent-kafka", None)):
        for op, rates in (("produce", produce_rate), ("consume", consume_rate)):
            ratio = rates["minikafka"] / rates[other]
            note = f"(goal >= {goal:g})" if goal else "(C reference)"
            print(f"minikafka / {other:<16} {op:<8} {ratio:6.2f}x {note}")
            rows.append((f"minikafka/{other} {op}", ratio, "x"))
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(prog="python -m bench.client")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args()
    run(args.records, args.size, args.partitions)


if __name__ == "__main__":
    main()
