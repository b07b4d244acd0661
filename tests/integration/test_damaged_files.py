"""Hand-damaged data directories: each recovers exactly, or the broker refuses with one line naming the file and the fix.

A real broker writes records through confluent-kafka (one batch per record, small
segments), is stopped (SIGTERM) or killed (SIGKILL), a file is damaged by hand,
and the broker is started again. What a consumer then reads is compared with
what was acknowledged; a refusal must be one stderr line, never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from storage import naming
from tests.broker_process import REPO, BrokerProcess, free_port

TOPIC = "t"
RECORDS = 60
ENV = {"MINIKAFKA_LOG_SEGMENT_BYTES": "8192", "MINIKAFKA_LOG_INDEX_INTERVAL_BYTES": "1024"}


def _value(n: int) -> bytes:
    return f"record-{n:04d}-".encode() + bytes([n]) * 500


def _produce(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for n in range(count):
        producer.produce(TOPIC, value=_value(n), partition=0)
        assert producer.flush(10) == 0  # one batch per record
    assert len(producer) == 0


def _consume(bootstrap: str, start: int = 0) -> list[tuple[int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.partition.eof": True})
    consumer.assign([TopicPartition(TOPIC, 0, start)])
    out: list[tuple[int, bytes]] = []
    try:
        for _ in range(200):
            msg = consumer.poll(2.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == msg.error()._PARTITION_EOF:
                    return out
                raise AssertionError(msg.error())
            out.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    raise AssertionError("no end of partition")


def _expected(offsets: range) -> list[tuple[int, bytes]]:
    return [(n, _value(n)) for n in offsets]


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A data directory holding RECORDS records of TOPIC in several segments, shut down cleanly."""
    data = tmp_path / "data"
    broker = BrokerProcess(data, env=ENV).start()
    try:
        _produce(broker.bootstrap, RECORDS)
    finally:
        assert broker.stop() == 0
    assert len(list((data / f"{TOPIC}-0").glob("*.log"))) >= 4
    return data


def _segments(data: Path) -> list[Path]:
    return sorted((data / f"{TOPIC}-0").glob("*.log"))


def _restart(data: Path) -> BrokerProcess:
    return BrokerProcess(data, env=ENV).start()


def _refusal(data: Path, *extra: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "broker", "--data-dir", str(data), "--port", str(free_port()), *extra],
        cwd=REPO,
        env={**os.environ, **ENV, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _unclean(data: Path) -> None:
    """Make the next start a recovery, as after a crash."""
    (data / naming.CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)


def _check_one_line(stderr: str, *needles: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    refusal = [line for line in lines if line.startswith("minikafka:")]
    assert len(refusal) == 1, stderr
    for needle in needles:
        assert needle in refusal[0], (needle, refusal[0])


def test_log_cut_inside_the_last_batch_ends_at_the_batch_before(written: Path) -> None:
    last = _segments(written)[-1]
    os.truncate(last, last.stat().st_size - 100)
    _unclean(written)
    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(RECORDS - 1))
        _produce(broker.bootstrap, 1)  # the log takes writes again, at the next offset
        assert _consume(broker.bootstrap, RECORDS - 1) == [(RECORDS - 1, _value(0))]
    finally:
        broker.stop()


def test_zero_filled_tail_is_a_clean_end(written: Path) -> None:
    with open(_segments(written)[-1], "ab") as f:
        f.write(b"\0" * 4096)
    _unclean(written)
    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(RECORDS))
    finally:
        broker.stop()


def test_flipped_byte_in_an_older_batch_truncates_there_and_says_so(written: Path) -> None:
    first = _segments(written)[0]
    data = bytearray(first.read_bytes())
    # the third batch of the first segment: skip two batches by their length fields
    pos = 0
    for _ in range(2):
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    data[pos + 100] ^= 0x01  # inside the records, covered by the CRC
    first.write_bytes(bytes(data))
    _unclean(written)
    (written / naming.RECOVERY_POINT_CHECKPOINT).write_text("garbage\n")
    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(2))
        assert f"{TOPIC}-0" in broker.log() and "truncat" in broker.log().lower()
    finally:
        broker.stop()


def test_deleted_index_is_rebuilt_and_lookups_are_right(written: Path) -> None:
    for index in (written / f"{TOPIC}-0").glob("*.index"):
        index.unlink()
    for index in (written / f"{TOPIC}-0").glob("*.timeindex"):
        index.unlink()
    broker = _restart(written)
    try:
        for start in (0, 7, 31, RECORDS - 1):
            assert _consume(broker.bootstrap, start) == _expected(range(start, RECORDS))
    finally:
        broker.stop()


def test_garbage_recovery_checkpoint_means_a_full_recovery(written: Path) -> None:
    (written / naming.RECOVERY_POINT_CHECKPOINT).write_bytes(b"\xff\xfe not a checkpoint \x00")
    _unclean(written)
    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(RECORDS))
        assert naming.RECOVERY_POINT_CHECKPOINT in broker.log()
    finally:
        broker.stop()


def test_missing_meta_properties_is_written_again_and_nothing_is_lost(written: Path) -> None:
    (written / naming.META_PROPERTIES).unlink()
    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(RECORDS))
        assert f"{naming.META_PROPERTIES} missing" in broker.log()
    finally:
        broker.stop()
    assert "cluster.id=" in (written / naming.META_PROPERTIES).read_text()


def test_garbage_meta_properties_refuses_in_one_line(written: Path) -> None:
    (written / naming.META_PROPERTIES).write_bytes(b"\x00\x01garbage")
    code, _, stderr = _refusal(written)
    assert code == 1
    _check_one_line(stderr, naming.META_PROPERTIES, "move it aside")


@pytest.mark.parametrize("damage", [b"", b'{"version": 1, "topics": {"t": {"partit', b"\x00" * 64])
def test_damaged_registry_refuses_then_rebuild_restores_topics(written: Path, damage: bytes) -> None:
    registry = written / naming.TOPICS_FILE
    registry.write_bytes(damage)
    code, _, stderr = _refusal(written)
    assert code == 1
    _check_one_line(stderr, naming.TOPICS_FILE, "--rebuild-registry")
    assert registry.read_bytes() == damage  # refusing changed nothing

    code, stdout, stderr = _refusal(written, "--rebuild-registry")
    assert code == 0 and "Traceback" not in stderr, stderr
    assert f"{TOPIC}: 1 partitions" in stdout and "not recovered" in stdout and TOPIC in stdout
    kept = list(written.glob(naming.TOPICS_FILE + ".damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == damage

    broker = _restart(written)
    try:
        assert _consume(broker.bootstrap) == _expected(range(RECORDS))
    finally:
        broker.stop()
    offsets_topic = json.loads(registry.read_text())["topics"]["__consumer_offsets"]
    assert offsets_topic["configs"]["cleanup.policy"] == "compact"  # internal configs restored at start


def test_rebuild_keeps_configs_of_entries_that_still_parse(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, env=ENV).start()
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        futures = admin.create_topics(
            [
                NewTopic("kept", 2, 1, config={"retention.ms": "123456"}),
                NewTopic("lost", 1, 1, config={"cleanup.policy": "compact"}),
            ]
        )
        for f in futures.values():
            f.result(10)
    finally:
        broker.stop()
    registry = data / naming.TOPICS_FILE
    assert '"cleanup.policy": "compact"' in registry.read_text()
    registry.write_text(
        '{"version": 1, "topics": {"kept": {"partitions": 2, "configs": {"retention.ms": "123456"}},'
        ' "lost": {"partitions": -1}}}'
    )
    code, _, stderr = _refusal(data)
    assert code == 1
    _check_one_line(stderr, "topic 'lost'", "--rebuild-registry")
    code, stdout, _ = _refusal(data, "--rebuild-registry")
    assert code == 0
    assert "configs kept from the old registry: kept" in stdout
    assert "not recovered" in stdout and "lost" in stdout.split("not recovered")[1]
    assert '"retention.ms": "123456"' in registry.read_text()
