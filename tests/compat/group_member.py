"""One consumer-group member driven by a real client, run as its own process by the group tests.

    python -m tests.compat.group_member --client kafka-python|aiokafka|confluent-kafka[-848] \
        --bootstrap HOST:PORT --group G --topic T --out EVENTS.jsonl [--instance-id ID] [--session-ms 6000]

It subscribes with the `range` assignor (``confluent-kafka-848``: with
``group.protocol=consumer``, the broker assigning), commits synchronously after every
batch it has processed (auto-commit off), and appends one JSON object per line
to ``--out`` (flushed per line, so a SIGKILL loses nothing already written)::

    {"e": "assigned", "tps": [[topic, partition], ...], "t": <unix time>}
    {"e": "revoked",  "tps": [...], "t": ...}
    {"e": "records",  "recs": [[partition, offset, value], ...], "t": ...}   (written before the commit)
    {"e": "commit",   "offsets": {"<partition>": next_offset}, "t": ...}     (after a successful commit)
    {"e": "committed", "offsets": {"<partition>": offset or null}, "t": ...} (the client's committed())
    {"e": "closed", "t": ...}

Signals: SIGUSR1 writes a "committed" event for the current assignment;
SIGTERM closes the consumer cleanly (a dynamic member sends LeaveGroup) and exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import signal
import sys
import time
from typing import Any, TextIO


class Events:
    def __init__(self, path: str) -> None:
        self.f: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at exit
        self.stop = False
        self.report = False

    def write(self, event: str, **fields: Any) -> None:
        self.f.write(json.dumps({"e": event, "t": time.time(), **fields}) + "\n")
        self.f.flush()

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop", True))
        signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "report", True))


def run_kafka_python(args: argparse.Namespace, ev: Events) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            ev.write("revoked", tps=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            ev.write("assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned))

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id,
        client_id=f"kp-{args.instance_id or 'dyn'}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        max_poll_interval_ms=args.max_poll_ms,
        partition_assignment_strategy=[RangePartitionAssignor],
    )
    consumer.subscribe([args.topic], listener=Listener())
    ev.install_signals()
    while not ev.stop:
        try:
            batches = consumer.poll(timeout_ms=200)
        except KafkaError as exc:  # kafka-python lets e.g. a refused reconnect escape poll(): an app retries
            ev.write("poll_failed", error=repr(exc))
            time.sleep(0.2)
            continue
        for tp, recs in batches.items():
            ev.write("records", recs=[[tp.partition, r.offset, r.value.decode()] for r in recs])
            try:
                consumer.commit({tp: OffsetAndMetadata(recs[-1].offset + 1, "", -1)})
                ev.write("commit", offsets={str(tp.partition): recs[-1].offset + 1})
            except KafkaError as exc:  # e.g. a rebalance started: the records come again to their next owner
                ev.write("commit_failed", error=repr(exc))
        if ev.report:
            ev.report = False
            tps = sorted(consumer.assignment(), key=lambda tp: tp.partition)
            ev.write("committed", offsets={str(tp.partition): consumer.committed(tp) for tp in tps})
    consumer.close()
    ev.write("closed")


def run_aiokafka(args: argparse.Namespace, ev: Events) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            ev.write("revoked", tps=sorted([tp.topic, tp.partition] for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            ev.write("assigned", tps=sorted([tp.topic, tp.partition] for tp in assigned))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: setattr(ev, "stop", True))
        loop.add_signal_handler(signal.SIGUSR1, lambda: setattr(ev, "report", True))
        consumer = AIOKafkaConsumer(
            bootstrap_servers=args.bootstrap,
            group_id=args.group,
            group_instance_id=args.instance_id,
            client_id=f"aio-{args.instance_id or 'dyn'}",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=args.session_ms,
            heartbeat_interval_ms=args.heartbeat_ms,
            max_poll_interval_ms=args.max_poll_ms,
            rebalance_timeout_ms=args.max_poll_ms,
            partition_assignment_strategy=(RangePartitionAssignor,),
        )
        consumer.subscribe([args.topic], listener=Listener())
        await consumer.start()
        try:
            while not ev.stop:
                try:
                    batches = await consumer.getmany(timeout_ms=200)
                except KafkaError as exc:
                    ev.write("poll_failed", error=repr(exc))
                    await asyncio.sleep(0.2)
                    continue
                for tp, recs in batches.items():
                    ev.write("records", recs=[[tp.partition, r.offset, r.value.decode()] for r in recs])
                    try:
                        await consumer.commit({tp: recs[-1].offset + 1})
                        ev.write("commit", offsets={str(tp.partition): recs[-1].offset + 1})
                    except KafkaError as exc:
                        ev.write("commit_failed", error=repr(exc))
                if ev.report:
                    ev.report = False
                    tps = sorted(consumer.assignment(), key=lambda tp: tp.partition)
                    ev.write(
                        "committed", offsets={str(tp.partition): await consumer.committed(tp) for tp in tps}
                    )
        finally:
            await consumer.stop()
        ev.write("closed")

    asyncio.run(main())


def run_confluent(args: argparse.Namespace, ev: Events, *, kip848: bool = False) -> None:
    """``kip848``: ``group.protocol=consumer``, whose callbacks are incremental; every change is
    then written as an "assigned" event holding the whole assignment."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": f"ck-{args.instance_id or 'dyn'}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "max.poll.interval.ms": args.max_poll_ms,
        "isolation.level": "read_uncommitted",
    }
    if kip848:
        config["group.protocol"] = "consumer"
    else:
        config["session.timeout.ms"] = args.session_ms
        config["heartbeat.interval.ms"] = args.heartbeat_ms
        config["partition.assignment.strategy"] = "range"
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
    assignment: list[Any] = []

    def on_assign(c: Any, parts: list[Any]) -> None:
        if kip848:
            assignment.extend(parts)
            parts = assignment
        else:
            assignment[:] = parts
        ev.write("assigned", tps=sorted([tp.topic, tp.partition] for tp in parts))

    def on_revoke(c: Any, parts: list[Any]) -> None:
        if kip848:
            gone = {(tp.topic, tp.partition) for tp in parts}
            assignment[:] = [tp for tp in assignment if (tp.topic, tp.partition) not in gone]
            ev.write("assigned", tps=sorted([tp.topic, tp.partition] for tp in assignment))
            return
        assignment.clear()
        ev.write("revoked", tps=sorted([tp.topic, tp.partition] for tp in parts))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    ev.install_signals()
    while not ev.stop:
        msgs = consumer.consume(num_messages=500, timeout=0.2)
        by_partition: dict[int, list[Any]] = {}
        for m in msgs:
            if m.error() is None:
                by_partition.setdefault(m.partition(), []).append(m)
        for p, recs in sorted(by_partition.items()):
            ev.write("records", recs=[[p, m.offset(), m.value().decode()] for m in recs])
            try:
                consumer.commit(
                    offsets=[TopicPartition(args.topic, p, recs[-1].offset() + 1)], asynchronous=False
                )
                ev.write("commit", offsets={str(p): recs[-1].offset() + 1})
            except KafkaException as exc:
                ev.write("commit_failed", error=repr(exc))
        if ev.report:
            ev.report = False
            got = consumer.committed(
                [TopicPartition(tp.topic, tp.partition) for tp in assignment], timeout=10
            )
            ev.write(
                "committed", offsets={str(tp.partition): tp.offset if tp.offset >= 0 else None for tp in got}
            )
    consumer.close()
    ev.write("closed")


RUNNERS = {
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "confluent-kafka": run_confluent,
    "confluent-kafka-848": functools.partial(run_confluent, kip848=True),
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=sorted(RUNNERS), required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--instance-id", default=None)
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--heartbeat-ms", type=int, default=500)
    p.add_argument("--max-poll-ms", type=int, default=30000)
    args = p.parse_args(argv)
    ev = Events(args.out)
    ev.write("started", client=args.client)
    RUNNERS[args.client](args, ev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
