"""The transactions suite: transactional produce beside idempotent produce, read_committed beside
read_uncommitted, same run, same broker.

- produce: ``RECORDS`` records of 100 B over 8 partitions with confluent-kafka
  (librdkafka: the client is not the limit), acks=all, linger.ms=5, idempotent;
  then the same with a transactional.id, committing every ``TXN_RECORDS``
  records (1,000: each transaction spans all 8 partitions, so it costs
  AddPartitionsToTxn, EndTxn and 8 markers);
- consume: the transactional topic (records, markers and all) read to the end
  by a confluent-kafka consumer with isolation.level read_uncommitted and
  read_committed.

Each figure is the best of ``ROUNDS`` rounds, the two sides alternating
(which goes first alternates too) so the machine's drift hits both.
Goals (issue 18): transactional / idempotent produce >= 0.7; read_committed /
read_uncommitted consume >= 0.9.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess

RECORDS = 200_000
TXN_RECORDS = 1_000
PARTITIONS = 8
ROUNDS = 3
VALUE = b"v" * 100


def _topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)


def produce(bootstrap: str, topic: str, transactional: bool) -> float:
    """Records/s of one producer writing ``RECORDS`` records, committed every ``TXN_RECORDS``."""
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
    if transactional:
        conf["transactional.id"] = f"bench-{topic}"
    p = Producer(conf)
    if transactional:
        p.init_transactions(30)
    start = time.perf_counter()
    for i in range(0, RECORDS, TXN_RECORDS):
        if transactional:
            p.begin_transaction()
        for j in range(i, i + TXN_RECORDS):
            while True:
                try:
                    p.produce(topic, VALUE, partition=j % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
        if transactional:
            p.commit_transaction(30)  # flushes the transaction's records first
    p.flush(60)
    return RECORDS / (time.perf_counter() - start)


def consume(bootstrap: str, topic: str, isolation: str) -> float:
    """Records/s reading the whole topic, from the first record to the last (connecting and
    the first fetch's wait are not the isolation level's cost)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{isolation}-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "fetch.max.bytes": 16 << 20,
            # librdkafka stops fetching for fetch.queue.backoff.ms (1 s) once its queue holds
            # queued.min.messages; that pause, not the broker, decided which side came out slower
            "fetch.queue.backoff.ms": 10,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    start = 0.0
    while got < RECORDS:
        # never ask for more than is left: consume() waits its whole timeout for a count it cannot
        # reach, and that second would be timed as reading
        for msg in c.consume(min(10_000, RECORDS - got), 1.0):
            if msg.error() is None:
                start = start or time.perf_counter()
                got += 1
    rate = (RECORDS - 1) / (time.perf_counter() - start)
    c.close()
    return rate


def run() -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        proc = BrokerProcess(Path(tmp) / "data").start()
        try:
            best = {"idempotent": 0.0, "transactional": 0.0, "read_uncommitted": 0.0, "read_committed": 0.0}
            for r in range(ROUNDS):
                order = (False, True) if r % 2 == 0 else (True, False)
                for transactional in order:
                    topic = f"{'txn' if transactional else 'idem'}-{r}"
                    _topic(proc.bootstrap, topic)
                    key = "transactional" if transactional else "idempotent"
                    best[key] = max(best[key], produce(proc.bootstrap, topic, transactional))
                isolations = ("read_uncommitted", "read_committed")
                for isolation in isolations if r % 2 == 0 else isolations[::-1]:
                    best[isolation] = max(best[isolation], consume(proc.bootstrap, f"txn-{r}", isolation))
        finally:
            proc.stop()
    produce_ratio = best["transactional"] / best["idempotent"]
    consume_ratio = best["read_committed"] / best["read_uncommitted"]
    rows = [
        ("produce idempotent (records/s)", best["idempotent"], ""),
        ("produce transactional, 1,000 per transaction (records/s)", best["transactional"], ""),
        (
            "transactional / idempotent (goal >= 0.7)",
            produce_ratio,
            "met" if produce_ratio >= 0.7 else "NOT met",
        ),
        ("consume read_uncommitted (records/s)", best["read_uncommitted"], ""),
        ("consume read_committed (records/s)", best["read_committed"], ""),
        (
            "read_committed / read_uncommitted (goal >= 0.9)",
            consume_ratio,
            "met" if consume_ratio >= 0.9 else "NOT met",
        ),
    ]
    width = max(len(name) for name, _, _ in rows)
    for name, value, verdict in rows:
        figure = f"{value:,.0f}" if value > 10 else f"{value:.3f}"
        print(f"{name:<{width}}  {figure:>12}  {verdict}", flush=True)
    return rows


if __name__ == "__main__":
    run()
