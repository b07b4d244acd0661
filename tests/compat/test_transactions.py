"""Transactions with real clients: atomic writes across partitions, read_committed, fencing.

Producers are confluent-kafka (librdkafka), kafka-python and aiokafka with a
transactional.id; the broker is a subprocess. What the issue asks: commits and
aborts across 3 topics x 4 partitions, a read_committed consumer of each client
sees exactly the committed records while a read_uncommitted one sees both,
control batches never reach applications, an older producer with the same
transactional.id is fenced and its open transaction aborted, a transaction
left open past its timeout is aborted and the LSO moves on, and offsets sent
with send_offsets_to_transaction become visible only at commit.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.compat.group_harness import create_topic, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(240)

TOPICS = ("txn-a", "txn-b", "txn-c")
PARTITIONS = 4
# aborts of timed-out transactions every 200 ms, so the timeout test is quick
ENV = {"MINIKAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "200"}


@pytest.fixture
def kbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", env=ENV).start()
    try:
        for topic in TOPICS:
            create_topic(proc.bootstrap, topic, PARTITIONS)
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def _values(n: int, tag: str) -> list[tuple[str, int, bytes]]:
    """``n`` records for every partition of every topic, values naming the transaction."""
    return [
        (t, p, f"{tag}-{t}-{p}-{i}".encode()) for t in TOPICS for p in range(PARTITIONS) for i in range(n)
    ]


def read_all(bootstrap: str, isolation: str, expected: int, topics: tuple[str, ...] = TOPICS) -> list[bytes]:
    """Every value a confluent-kafka consumer with ``isolation.level`` gets, waiting for ``expected``."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.subscribe(list(topics))
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    idle_after = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if len(got) >= expected:
                    idle_after = idle_after or time.monotonic()
                    if time.monotonic() - idle_after > 1.0:  # nothing more is coming
                        break
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
            idle_after = None
    finally:
        consumer.close()
    return got


# -- producers of each client -------------------------------------------------------------------------
def confluent_transactions(bootstrap: str, txn_id: str, batches: list[tuple[bool, list[Any]]]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    for commit, records in batches:
        producer.begin_transaction()
        for topic, p, value in records:
            producer.produce(topic, value, partition=p)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def kafka_python_transactions(bootstrap: str, txn_id: str, batches: list[tuple[bool, list[Any]]]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    try:
        producer.init_transactions()
        for commit, records in batches:
            producer.begin_transaction()
            for topic, p, value in records:
                producer.send(topic, value, partition=p)
            producer.flush(30)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(10)


def aiokafka_transactions(bootstrap: str, txn_id: str, batches: list[tuple[bool, list[Any]]]) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        await producer.start()
        try:
            for commit, records in batches:
                await producer.begin_transaction()
                for topic, p, value in records:
                    await producer.send(topic, value, partition=p)
                await producer.flush()
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(run())


PRODUCERS = {
    "confluent-kafka": confluent_transactions,
    "kafka-python": kafka_python_transactions,
    "aiokafka": aiokafka_transactions,
}


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_commit_and_abort_across_topics(kbroker: BrokerProcess, client: str) -> None:
    committed = _values(3, "commit1") + _values(2, "commit2")
    aborted = _values(2, "abort")
    batches = [(True, _values(3, "commit1")), (False, aborted), (True, _values(2, "commit2"))]
    PRODUCERS[client](kbroker.bootstrap, f"txn-{client}", batches)

    got = read_all(kbroker.bootstrap, "read_committed", len(committed))
    assert sorted(got) == sorted(v for _, _, v in committed)
    everything = read_all(kbroker.bootstrap, "read_uncommitted", len(committed) + len(aborted))
    # control batches are never delivered: exactly the data records, each once
    assert sorted(everything) == sorted(v for _, _, v in committed + aborted)


@pytest.mark.parametrize("reader", ["kafka-python", "aiokafka"])
def test_read_committed_of_other_clients(kbroker: BrokerProcess, reader: str) -> None:
    committed = _values(2, "c")
    confluent_transactions(kbroker.bootstrap, "txn-r", [(False, _values(2, "a")), (True, committed)])
    want = sorted(v for _, _, v in committed)
    if reader == "kafka-python":
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            *TOPICS,
            bootstrap_servers=kbroker.bootstrap,
            group_id="kp-reader",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        got = []
        deadline = time.monotonic() + 30
        while len(got) < len(want) and time.monotonic() < deadline:
            got += [m.value for msgs in consumer.poll(timeout_ms=500).values() for m in msgs]
        got += [m.value for msgs in consumer.poll(timeout_ms=1000).values() for m in msgs]
        consumer.close()
    else:
        from aiokafka import AIOKafkaConsumer

        async def run() -> list[bytes]:
            consumer = AIOKafkaConsumer(
                *TOPICS,
                bootstrap_servers=kbroker.bootstrap,
                group_id="aio-reader",
                auto_offset_reset="earliest",
                isolation_level="read_committed",
            )
            await consumer.start()
            out: list[bytes] = []
            try:
                deadline = time.monotonic() + 30
                while len(out) < len(want) and time.monotonic() < deadline:
                    batch = await consumer.getmany(timeout_ms=500)
                    out += [m.value for msgs in batch.values() for m in msgs]
                await asyncio.sleep(1)
                batch = await consumer.getmany(timeout_ms=500)
                out += [m.value for msgs in batch.values() for m in msgs]
            finally:
                await consumer.stop()
            return out

        got = asyncio.run(run())
    assert sorted(got) == want


def test_zombie_is_fenced_and_its_transaction_aborted(kbroker: BrokerProcess) -> None:
    conf = {"bootstrap.servers": kbroker.bootstrap, "transactional.id": "zombie"}
    old = confluent_kafka.Producer(conf)
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(TOPICS[0], b"from-the-zombie", partition=0)
    old.flush(30)

    new = confluent_kafka.Producer(conf)
    new.init_transactions(30)  # aborts the zombie's open transaction, bumps the epoch
    new.begin_transaction()
    new.produce(TOPICS[0], b"from-the-new-one", partition=0)
    new.commit_transaction(30)

    with pytest.raises(confluent_kafka.KafkaException) as info:
        old.produce(TOPICS[0], b"late", partition=0)
        old.commit_transaction(30)
    assert info.value.args[0].fatal() or info.value.args[0].code() in (
        confluent_kafka.KafkaError._FENCED,
        confluent_kafka.KafkaError.PRODUCER_FENCED,
        confluent_kafka.KafkaError.INVALID_PRODUCER_EPOCH,
    )
    assert read_all(kbroker.bootstrap, "read_committed", 1, (TOPICS[0],)) == [b"from-the-new-one"]


def test_open_transaction_times_out_and_lso_moves_on(kbroker: BrokerProcess) -> None:
    stuck = confluent_kafka.Producer(
        {"bootstrap.servers": kbroker.bootstrap, "transactional.id": "stuck", "transaction.timeout.ms": 2000}
    )
    stuck.init_transactions(30)
    stuck.begin_transaction()
    stuck.produce(TOPICS[1], b"never-committed", partition=1)
    stuck.flush(30)
    # a later committed transaction of another producer on the same partition
    confluent_transactions(kbroker.bootstrap, "later", [(True, [(TOPICS[1], 1, b"committed-later")])])
    # read_committed sees nothing until the coordinator aborts the stuck transaction
    assert read_all(kbroker.bootstrap, "read_committed", 0, (TOPICS[1],)) == []

    got = wait_for(
        lambda: read_all(kbroker.bootstrap, "read_committed", 1, (TOPICS[1],)) or None,
        30,
        "the timed-out transaction to be aborted",
        interval=0.5,
    )
    assert got == [b"committed-later"]
    del stuck


def test_send_offsets_to_transaction(kbroker: BrokerProcess) -> None:
    """Consume-transform-produce: the input offsets commit with the output records, or not at all."""
    confluent_transactions(
        kbroker.bootstrap, "seed", [(True, [(TOPICS[0], 0, f"in-{i}".encode()) for i in range(10)])]
    )
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kbroker.bootstrap,
            "group.id": "eos",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPICS[0], 0)])
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": kbroker.bootstrap, "transactional.id": "eos-app"}
    )
    producer.init_transactions(30)

    def process(n: int, commit: bool) -> None:
        msgs = []
        while len(msgs) < n:
            msg = consumer.poll(5)
            assert msg is not None and msg.error() is None
            msgs.append(msg)
        producer.begin_transaction()
        for m in msgs:
            producer.produce(TOPICS[2], m.value().upper(), partition=0)
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def committed() -> int:
        return consumer.committed([confluent_kafka.TopicPartition(TOPICS[0], 0)], 10)[0].offset

    process(4, True)
    assert committed() == 4
    process(3, False)
    assert committed() == 4  # the aborted transaction's offsets never count
    consumer.close()
    out = read_all(kbroker.bootstrap, "read_committed", 4, (TOPICS[2],))
    assert sorted(out) == sorted(f"IN-{i}".encode() for i in range(4))


def test_list_offsets_by_time_read_committed_stops_at_the_lso(kbroker: BrokerProcess) -> None:
    """A read_committed ListOffsets by timestamp (or -3, the largest one) does not point into an
    open transaction: Kafka looks below the LSO for it, read_uncommitted below the HW."""
    from tests.wire import RawClient

    def lookup(client: RawClient, isolation: int, timestamp: int) -> int:
        body = {
            "replica_id": -1,
            "isolation_level": isolation,
            "topics": [{"name": TOPICS[0], "partitions": [{"partition_index": 0, "timestamp": timestamp}]}],
        }
        return client.request(2, 8, body).topics[0].partitions[0].offset

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": kbroker.bootstrap, "transactional.id": "by-time"}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    later = int(time.time() * 1000) + 3_600_000  # the largest timestamp, the marker's included
    producer.produce(TOPICS[0], b"open", partition=0, timestamp=later)
    producer.flush(30)
    with RawClient(kbroker.port) as client:
        assert [lookup(client, 0, t) for t in (later - 1, -3)] == [0, 0]
        assert [lookup(client, 1, t) for t in (later - 1, -3)] == [-1, -1]
        producer.commit_transaction(30)
        wait_for(lambda: lookup(client, 1, later - 1) == 0, 10, "the committed record")
        assert lookup(client, 1, -3) == 0
