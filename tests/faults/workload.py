"""Workloads of the nemesis run, each a process in the client namespace writing its history.

``python -m tests.faults.workload KIND ARGS``; events go to the history file as JSON lines (the
format `tests.faults.history` reads). SIGTERM asks a workload to finish: producers stop sending
and flush, consumers close.

produce BOOTSTRAP TOPIC NAME RATE HISTORY
    an idempotent acks=all confluent-kafka producer sending keys ``NAME:0``, ``NAME:1``, ... at
    RATE records/s over the topic's partitions (the default partitioner)
consume BOOTSTRAP TOPIC GROUP PROTOCOL NAME HISTORY
    a group member (PROTOCOL ``classic`` or ``consumer``, KIP-848) reading from the committed
    offsets and committing by hand twice a second
pipeline BOOTSTRAP SOURCE OUTPUT GROUP TXN_ID HISTORY
    consume-transform-produce: reads SOURCE (read_committed), writes each record's key to OUTPUT
    in a transaction with the consumed offsets (sendOffsetsToTransaction); a worker process that
    exits on any error (or after STUCK_S s without progress: a ``stuck`` event) and is started
    again, resuming from the committed offsets (its transactional id fences the worker before it)

One-shot commands print one JSON document:

dump BOOTSTRAP TOPIC ISOLATION     {partition: [[offset, key], ...]} up to each partition's end
committed BOOTSTRAP GROUP TOPIC    {partition: committed offset} (-1: none)
lag BOOTSTRAP GROUP TOPIC          records between the group's committed offsets and the log ends
whois BOOTSTRAP TOPIC GROUP        {"controller": id, "leaders": {partition: [leader, isr]},
                                    "coordinator": id}
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.cluster.helpers import records_to_end
from tests.cluster_process import QUIET

STOP = False
STUCK_S = 90  # a pipeline worker making no progress this long is restarted


def _stop(*_: object) -> None:
    global STOP
    STOP = True


class History:
    """Appends events to a file, flushed at least every 0.2 s (a killed workload loses at most that)."""

    def __init__(self, path: str) -> None:
        self.out: TextIO = open(path, "a")  # noqa: SIM115  # closed by close()
        self.flushed = time.monotonic()

    def add(self, **event: Any) -> None:
        self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        if time.monotonic() - self.flushed > 0.2:
            self.flush()

    def flush(self) -> None:
        self.out.flush()
        self.flushed = time.monotonic()

    def close(self) -> None:
        self.out.close()


def _debug() -> dict[str, Any]:
    """librdkafka's debug contexts from ``FAULT_CLIENT_DEBUG`` (e.g. ``eos,protocol``), logged to stderr."""
    contexts = os.environ.get("FAULT_CLIENT_DEBUG")
    if not contexts:
        return {}
    logger = logging.getLogger("librdkafka")
    logger.addHandler(logging.StreamHandler())
    logger.setLevel(logging.DEBUG)
    return {"debug": contexts, "logger": logger}


def produce(bootstrap: str, topic: str, name: str, rate: str, path: str) -> None:
    history = History(path)
    fatal: list[str] = []

    def report(err: KafkaError | None, msg: Any) -> None:
        n = int(msg.key().decode().rpartition(":")[2])
        if err is None:
            history.add(k="ack", w=name, n=n, p=msg.partition(), o=msg.offset(), t=time.time())
        else:
            history.add(k="err", w=name, n=n, e=str(err))

    def error(err: KafkaError) -> None:
        if err.fatal():
            fatal.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            "error_cb": error,
            **_debug(),
        }
    )
    interval = 1 / float(rate)
    due = time.monotonic()
    n = 0
    while not STOP and not fatal:
        try:
            producer.produce(topic, key=f"{name}:{n}".encode(), value=b"x" * 100, on_delivery=report)
            n += 1
        except BufferError:
            pass
        due += interval
        producer.poll(max(0.0, due - time.monotonic()))
    producer.flush(90)
    for text in fatal:
        history.add(k="fatal", w=name, e=text)
    history.close()


def consume(bootstrap: str, topic: str, group: str, protocol: str, name: str, path: str) -> None:
    history = History(path)
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "logger": QUIET,
        "group.id": group,
        "group.protocol": protocol,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "classic":
        settings["session.timeout.ms"] = 10000
    consumer = Consumer(settings)
    consumer.subscribe([topic])
    committed_at = time.monotonic()
    while not STOP:
        for msg in consumer.consume(500, 0.5):
            if msg.error() is None:
                history.add(
                    k="read", w=name, topic=topic, key=msg.key().decode(), p=msg.partition(), o=msg.offset()
                )
        if time.monotonic() - committed_at > 0.5:
            committed_at = time.monotonic()
            try:
                done = consumer.commit(asynchronous=False)
            except KafkaException:
                continue  # nothing to commit, or not acknowledged: either way no promise was made
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    history.add(k="commit", w=name, g=group, p=tp.partition, o=tp.offset, t=time.time())
    consumer.close()
    history.close()


def pipeline(*args: str) -> None:
    """Run `pipeline_once` in a child process, again whenever it exits, until SIGTERM (passed on;
    a child still running 30 s later is killed): a worker that crashes on an error and is started
    again, as a deployment would run it, so no client call that hangs can stop the pipeline."""
    argv = [sys.executable, "-m", "tests.faults.workload", "pipeline-once", *args]
    while not STOP:
        child = subprocess.Popen(argv)
        while child.poll() is None and not STOP:
            time.sleep(0.2)
        if STOP:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        else:
            time.sleep(1)


def pipeline_once(bootstrap: str, source: str, output: str, group: str, txn_id: str, path: str) -> None:
    """One worker: on any client error it records a ``restart`` and exits at once, leaving its
    group membership to expire and its transaction to be fenced by the next worker's
    init_transactions (the same transactional id)."""
    history = History(path)
    progress = [time.monotonic()]

    def watchdog() -> None:
        """librdkafka calls can block past their timeouts (seen: a consumer's assignment() for
        minutes after a coordinator moved): record it, with the stack, and exit to be restarted."""
        while time.monotonic() - progress[0] < STUCK_S:
            time.sleep(1)
        stuck = History(path)
        stuck.add(k="stuck", w=txn_id, t=time.time())
        stuck.close()
        faulthandler.dump_traceback()
        os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 10000,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 30000,
            "message.timeout.ms": 30000,
        }
    )
    try:
        producer.init_transactions(60)
        consumer.subscribe([source])
        while not STOP:
            progress[0] = time.monotonic()
            msgs = [m for m in consumer.consume(500, 0.5) if m.error() is None]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                while True:
                    try:
                        producer.produce(output, key=m.key(), value=b"", partition=m.partition())
                        break
                    except BufferError:
                        producer.poll(0.1)
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(60)
            history.add(k="txn", w=txn_id, records=len(msgs), t=time.time())
    except KafkaException as exc:
        history.add(k="restart", w=txn_id, e=str(exc))
        history.close()
        os._exit(1)
    consumer.close()
    history.close()


def dump(bootstrap: str, topic: str, isolation: str) -> dict[int, list[tuple[int, str]]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "group.id": f"dump-{time.time()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in partitions}
    for msg in records_to_end(consumer, len(partitions), 120):
        out[msg.partition()].append((msg.offset(), msg.key().decode()))
    consumer.close()
    return out


def _committed(consumer: Consumer, topic: str) -> list[TopicPartition]:
    """The committed offset of each of ``topic``'s partitions for ``consumer``'s group."""
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    return consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=30)


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "logger": QUIET, "group.id": group})
    done = _committed(consumer, topic)
    consumer.close()
    return {tp.partition: tp.offset for tp in done}


def lag(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "group.id": group,
            "isolation.level": "read_committed",
        }
    )
    total = 0
    for tp in _committed(consumer, topic):
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=30)
        total += high - max(tp.offset, 0)
    consumer.close()
    return total


def whois(bootstrap: str, topic: str, group: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    md = admin.list_topics(topic, timeout=10)
    leaders = {p.id: [p.leader, list(p.isrs)] for p in md.topics[topic].partitions.values()}
    coordinator = -1
    try:
        groups = admin.describe_consumer_groups([group], request_timeout=10)
        coordinator = groups[group].result(10).coordinator.id
    except KafkaException:
        pass
    return {"controller": md.controller_id, "leaders": leaders, "coordinator": coordinator}


COMMANDS: dict[str, Callable[..., object]] = {
    "produce": produce,
    "consume": consume,
    "pipeline": pipeline,
    "pipeline-once": pipeline_once,
    "dump": dump,
    "committed": committed,
    "lag": lag,
    "whois": whois,
}


def main(argv: list[str]) -> object:
    signal.signal(signal.SIGTERM, _stop)
    cmd, *args = argv
    if cmd not in COMMANDS:
        raise SystemExit(f"unknown command {cmd!r}")
    return COMMANDS[cmd](*args)


if __name__ == "__main__":
    result = main(sys.argv[1:])
    if result is not None:
        print(json.dumps(result))
