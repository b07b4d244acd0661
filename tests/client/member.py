"""One consumer-group member run as its own process by tests/client/test_groups.py.

    python -m tests.client.member --client minikafka|kafka-python|confluent-kafka \
        --bootstrap HOST:PORT --group G --topic T --assignor range|cooperative-sticky --out EVENTS.jsonl

Appends one JSON object per line to --out, flushed per line so a SIGKILL loses
nothing already written:

    {"e": "assigned"|"revoked"|"lost", "tps": [partition, ...], "t": ...}   (what the listener got)
    {"e": "records", "recs": [[partition, offset], ...], "t": ...}
    {"e": "closed", "t": ...}

Commits synchronously after each batch (auto-commit off). SIGTERM closes cleanly.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, TextIO


class Events:
    def __init__(self, path: str) -> None:
        self.f: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed at exit
        self.stop = False
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop", True))

    def write(self, event: str, **fields: Any) -> None:
        self.f.write(json.dumps({"e": event, "t": time.time(), **fields}) + "\n")
        self.f.flush()

    def tps(self, event: str, parts: Any) -> None:
        self.write(event, tps=sorted(tp.partition if hasattr(tp, "partition") else tp for tp in parts))


def run_minikafka(args: argparse.Namespace, ev: Events) -> None:
    from client import Consumer, ConsumerRebalanceListener, KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned: Any) -> None:
            ev.tps("assigned", assigned)

        def on_partitions_revoked(self, revoked: Any) -> None:
            ev.tps("revoked", revoked)

        def on_partitions_lost(self, lost: Any) -> None:
            ev.tps("lost", lost)

    consumer = Consumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id="minikafka-member",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=args.assignor,
    )
    consumer.subscribe([args.topic], listener=Listener())
    while not ev.stop:
        records = consumer.poll(0.2)
        if records:
            ev.write("records", recs=[[r.partition, r.offset] for r in records])
            try:
                consumer.commit()
            except KafkaError as exc:
                ev.write("commit_failed", error=str(exc))
    consumer.close()
    ev.write("closed")


def run_kafka_python(args: argparse.Namespace, ev: Events) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            ev.tps("revoked", revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            ev.tps("assigned", assigned)

    assignor = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[args.assignor]
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id="kafka-python-member",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        partition_assignment_strategy=[assignor],
    )
    consumer.subscribe([args.topic], listener=Listener())
    while not ev.stop:
        try:
            batches = consumer.poll(timeout_ms=200)
        except KafkaError as exc:
            ev.write("poll_failed", error=repr(exc))
            continue
        recs = [[tp.partition, r.offset] for tp, rs in batches.items() for r in rs]
        if recs:
            ev.write("records", recs=recs)
            try:
                consumer.commit()
            except KafkaError as exc:
                ev.write("commit_failed", error=repr(exc))
    consumer.close()
    ev.write("closed")


def run_confluent(args: argparse.Namespace, ev: Events) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "client.id": "confluent-member",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": args.session_ms,
            "heartbeat.interval.ms": args.heartbeat_ms,
            "partition.assignment.strategy": args.assignor,
            "isolation.level": "read_uncommitted",
        }
    )
    consumer.subscribe(
        [args.topic],
        on_assign=lambda c, parts: ev.tps("assigned", parts),
        on_revoke=lambda c, parts: ev.tps("revoked", parts),
        on_lost=lambda c, parts: ev.tps("lost", parts),
    )
    while not ev.stop:
        msgs = [m for m in consumer.consume(num_messages=500, timeout=0.2) if m.error() is None]
        if msgs:
            ev.write("records", recs=[[m.partition(), m.offset()] for m in msgs])
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as exc:
                ev.write("commit_failed", error=repr(exc))
    consumer.close()
    ev.write("closed")


RUNNERS = {"minikafka": run_minikafka, "kafka-python": run_kafka_python, "confluent-kafka": run_confluent}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=sorted(RUNNERS), required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--assignor", default="range")
    p.add_argument("--out", required=True)
    p.add_argument("--session-ms", type=int, default=3000)
    p.add_argument("--heartbeat-ms", type=int, default=300)
    args = p.parse_args()
    ev = Events(args.out)
    ev.write("started", client=args.client)
    RUNNERS[args.client](args, ev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
