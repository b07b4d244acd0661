"""A tiered topic on one broker with a real SeaweedFS: closed segments go to S3, local disk stays
bounded, and consumers (confluent-kafka, Spark) read everything back from offset 0 (issue 44's
first proof).

``MINIKAFKA_TIERED_MB`` sets how much is produced (default 1024, the issue's 1 GB).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import REPO, BrokerProcess
from tests.support.seaweed import SeaweedFS
from tests.tiered.helpers import bucket_keys, list_offset, value_of

pytestmark = pytest.mark.tiered

TOTAL_MB = int(os.environ.get("MINIKAFKA_TIERED_MB", "1024"))
# a steady rate the uploads keep up with on a 2-core machine shared with SeaweedFS (bench/tiered.py
# measures how fast they go)
PRODUCE_MB_S = 25
VALUE_BYTES = 10_000
SEGMENT_BYTES = 8 << 20
LOCAL_RETENTION = 2 * SEGMENT_BYTES


def broker_properties(seaweed: SeaweedFS) -> dict[str, str]:
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
        **seaweed.rsm_properties(),
    }


def start_broker(tmp_path: Path, props: dict[str, str]) -> BrokerProcess:
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return BrokerProcess(tmp_path / "data", extra=["--config", str(config)]).start()


def local_log_bytes(data_dir: Path, topic: str) -> int:
    total = 0
    for f in (data_dir / f"{topic}-0").glob("*.log"):
        with contextlib.suppress(FileNotFoundError):  # retention renamed it meanwhile
            total += f.stat().st_size
    return total


def spark_count(bootstrap: str, topic: str) -> int:
    """``count()`` of the topic read by the PySpark data source in a local[2] session."""
    pytest.importorskip("pyspark")
    from client.spark.session import local_session

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    session = local_session("minikafka-tiered-test", shuffle_partitions=2)
    try:
        reader = session.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
        return int(reader.option("subscribe", topic).load().count())
    finally:
        session.stop()


def test_consumer_reads_every_record_back_from_remote(seaweed: SeaweedFS, tmp_path: Path) -> None:
    broker = start_broker(tmp_path, broker_properties(seaweed))
    topic = "tiered"
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        configs = {
            "remote.storage.enable": "true",
            "segment.bytes": str(SEGMENT_BYTES),
            "local.retention.bytes": str(LOCAL_RETENTION),
            "retention.ms": "-1",
        }
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)

        count = TOTAL_MB * (1 << 20) // VALUE_BYTES
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap,
                "enable.idempotence": True,
                "linger.ms": 20,
                "batch.size": 1 << 20,
                "queue.buffering.max.kbytes": 256 << 10,
            }
        )
        peak_local = 0
        started = time.monotonic()
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, value_of(i, VALUE_BYTES), partition=0)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 500 == 0:
                producer.poll(0)
                peak_local = max(peak_local, local_log_bytes(broker.data_dir, topic))
                ahead = started + i * VALUE_BYTES / (PRODUCE_MB_S << 20) - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        assert producer.flush(120) == 0
        produced = time.monotonic()

        # every closed segment reaches the store and leaves the disk
        end = list_offset(broker.port, topic, -1)
        assert end == count
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            peak_local = max(peak_local, local_log_bytes(broker.data_dir, topic))
            if list_offset(broker.port, topic, -5) >= end - 2 * (SEGMENT_BYTES // VALUE_BYTES):
                break
            time.sleep(0.5)
        copied = time.monotonic()
        print(
            f"produced {TOTAL_MB} MB in {produced - started:.1f}s, copies done {copied - produced:.1f}s later"
        )
        time.sleep(2)  # one more retention check
        local_start = list_offset(broker.port, topic, -4)
        assert list_offset(broker.port, topic, -2) == 0
        assert local_start > 0
        assert list_offset(broker.port, topic, -4, version=8) == local_start
        on_disk = local_log_bytes(broker.data_dir, topic)
        # local.retention.bytes plus the active segment and one closed segment not yet copied
        assert on_disk <= LOCAL_RETENTION + 2 * SEGMENT_BYTES, on_disk
        # and while the data came in, the disk held local.retention.bytes plus what was being copied
        assert peak_local <= LOCAL_RETENTION + 10 * SEGMENT_BYTES, peak_local

        keys = bucket_keys(seaweed)
        logs = [k for k in keys if k.endswith(".log")]
        assert logs and len(keys) == 3 * len(logs), keys[:10]

        # a consumer from offset 0 reads every record, byte for byte, most of them from S3
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "reader",
                "enable.auto.commit": False,
                "fetch.max.bytes": 8 << 20,
            }
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        expected = 0
        reading = time.monotonic()
        deadline = time.monotonic() + 600
        try:
            while expected < count and time.monotonic() < deadline:
                for msg in consumer.consume(500, timeout=1.0):
                    assert msg.error() is None, msg.error()
                    assert msg.offset() == expected
                    assert msg.value() == value_of(expected, VALUE_BYTES), f"record {expected} differs"
                    expected += 1
        finally:
            consumer.close()
        assert expected == count
        print(f"consumed {TOTAL_MB} MB in {time.monotonic() - reading:.1f}s")

        # and Spark, through the data source, counts them all
        counted = time.monotonic()
        assert spark_count(broker.bootstrap, topic) == count
        print(f"Spark counted {count} records in {time.monotonic() - counted:.1f}s")
    finally:
        broker.stop()


def test_timestamps_and_aborted_transactions_below_the_local_start(
    seaweed: SeaweedFS, tmp_path: Path
) -> None:
    """offsets_for_times and read_committed work on the remote part as on the local one."""
    broker = start_broker(tmp_path, broker_properties(seaweed))
    topic = "tiered-txn"
    segment = 256 << 10
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        configs = {
            "remote.storage.enable": "true",
            "segment.bytes": str(segment),
            "local.retention.bytes": str(2 * segment),
        }
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tiered-txn"})
        producer.init_transactions(30)
        # ahead of the clock: transaction markers carry the time they are written (as in Kafka,
        # a timestamp search may land on a marker), and must not reach these timestamps
        base_ts = int(time.time() * 1000) + 30 * 60 * 1000
        committed: list[bytes] = []
        for txn in range(40):
            producer.begin_transaction()
            for i in range(50):
                value = f"{txn}-{i}".encode() + b"x" * 1000
                producer.produce(topic, value, partition=0, timestamp=base_ts + txn * 1000 + i)
                if txn % 4 != 3:
                    committed.append(value)
            if txn % 4 == 3:
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)
        end = list_offset(broker.port, topic, -1)
        deadline = time.monotonic() + 60
        while list_offset(broker.port, topic, -4) < end // 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        local_start = list_offset(broker.port, topic, -4)
        assert local_start >= end // 2, (local_start, end)

        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "times", "isolation.level": "read_committed"}
        )
        try:
            # transaction 5's records are remote: each one's own timestamp finds it
            (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, base_ts + 5 * 1000 + 7)], 30)
            assert 0 < found.offset < local_start
            consumer.assign([TopicPartition(topic, 0, found.offset)])
            (first,) = consumer.consume(1, timeout=30)
            assert first.value().startswith(b"5-7x"), first.value()[:10]

            consumer.assign([TopicPartition(topic, 0, 0)])
            seen: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(seen) < len(committed) and time.monotonic() < deadline:
                for msg in consumer.consume(500, timeout=1.0):
                    assert msg.error() is None, msg.error()
                    seen.append(msg.value())
            assert seen == committed  # the aborted transactions, remote ones included, are skipped
        finally:
            consumer.close()
    finally:
        broker.stop()
