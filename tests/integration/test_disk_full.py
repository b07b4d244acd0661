"""A full data disk: a real broker on a small tmpfs, a real acks=all producer until writes fail.

Every acknowledged record must be readable at its offset, the broker must say
what happened (one WARNING naming the partition, its path and ENOSPC) and count
it (``minikafka_storage_errors_total``), and writes must succeed again, with a
line saying so, once space is freed. Needs root (to mount the tmpfs).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.broker_process import BrokerProcess, free_port
from tests.integration.test_metrics import scrape, value

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs as the data disk")

TOPIC = "full"
VALUE_SIZE = 32 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _produce_until_full(bootstrap: str, first: int, limit: int) -> tuple[dict[int, int], int]:
    """Send values ``first..`` one at a time (acks=all) until one fails; {value number: offset}, failures."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "linger.ms": 0,
            "message.timeout.ms": 10000,
        }
    )
    acked: dict[int, int] = {}
    failures = 0

    def report(err: KafkaError | None, msg: object) -> None:
        nonlocal failures
        if err is None:
            acked[int(msg.key())] = msg.offset()  # type: ignore[attr-defined]
        else:
            assert err.code() == KafkaError.KAFKA_STORAGE_ERROR, err
            failures += 1

    for n in range(first, first + limit):  # the first record auto-creates the topic
        producer.produce(
            TOPIC, key=str(n).encode(), value=bytes([n % 251]) * VALUE_SIZE, partition=0, on_delivery=report
        )
        producer.flush(15)
        if failures >= 3:
            break
    return acked, failures


def _read_all(bootstrap: str, end: int) -> dict[int, tuple[int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: dict[int, tuple[int, bytes]] = {}
    deadline = time.monotonic() + 30
    while len(got) < end and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        got[msg.offset()] = (int(msg.key()), msg.value())
    consumer.close()
    return got


def test_disk_full_answers_storage_error_logs_counts_and_recovers(small_disk: Path, tmp_path: Path) -> None:
    filler = small_disk / "filler"
    mport = free_port()
    broker = BrokerProcess(
        small_disk,
        env={
            "MINIKAFKA_METRICS_PORT": str(mport),
            "MINIKAFKA_LOG_INDEX_SIZE_MAX_BYTES": "65536",
            "MINIKAFKA_LOG_SEGMENT_BYTES": "1048576",
        },
    )
    assert broker.log_path.parent == tmp_path  # the broker's own log is not on the small disk
    filler.write_bytes(b"\1" * (4 * 1024 * 1024))  # freed later, so writes can succeed again
    broker.start()
    try:
        acked, failures = _produce_until_full(broker.bootstrap, 0, 2000)
        assert failures >= 3 and len(acked) > 100, (len(acked), failures)

        log = broker.log()
        warnings = [line for line in log.splitlines() if "storage error on full-0" in line]
        assert len(warnings) == 1, log[-3000:]
        assert (
            "WARNING" in warnings[0]
            and "[ENOSPC]" in warnings[0]
            and str(small_disk / "full-0") in warnings[0]
        )
        samples = scrape(mport)
        assert value(samples, "minikafka_storage_errors_total", topic=TOPIC, partition="0", op="append") >= 3

        filler.unlink()
        more, more_failures = _produce_until_full(broker.bootstrap, 100_000, 20)
        assert len(more) == 20 and more_failures == 0
        assert "storage on full-0 works again: append succeeded" in broker.log()

        everything = {**acked, **more}
        got = _read_all(broker.bootstrap, max(everything.values()) + 1)
        for n, offset in everything.items():
            assert got.get(offset) == (n, bytes([n % 251]) * VALUE_SIZE), f"record {n} at offset {offset}"
        assert sorted(got) == list(range(len(got)))  # no gaps, no duplicates
    finally:
        broker.stop()
