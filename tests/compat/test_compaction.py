"""Compaction observed through real clients: confluent-kafka (and kafka-python) consumers read a compacted
topic and see exactly the latest value per key plus unexpired tombstones, at their original offsets;
expired tombstones disappear; keyless records are refused with INVALID_RECORD."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.broker_process import BrokerProcess
from tests.integration.test_retention import _produce_confluent, _wait, read_all
from tests.integration.test_wire import create
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cleaning_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    d = tmp_path_factory.mktemp("compaction")
    props = d / "server.properties"
    props.write_text("log.cleaner.backoff.ms=100\nlog.segment.delete.delay.ms=100\n")
    proc = BrokerProcess(d / "data", extra=["--config", str(props)]).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def _compacted_topic(broker: BrokerProcess, name: str, **configs: str) -> None:
    settings = {
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "segment.ms": "1000",
        "min.cleanable.dirty.ratio": "0.01",
        **configs,
    }
    with RawClient(broker.port) as c:
        assert create(c, name, configs=settings).error_code == 0


def _history(keys: int, versions: int, tombstoned: set[int]) -> list[tuple[bytes, bytes | None]]:
    """``versions`` values for each key, interleaved; then tombstones for some keys."""
    items: list[tuple[bytes, bytes | None]] = []
    for v in range(versions):
        for k in range(keys):
            items.append((b"key-%02d" % k, b"key-%02d-version-%d-" % (k, v) + b"p" * 60))
    for k in sorted(tombstoned):
        items.append((b"key-%02d" % k, None))
    return items


def _produce_and_seal(
    broker: BrokerProcess, topic: str, items: list[tuple[bytes, bytes | None]]
) -> list[int]:
    """Produce, then (segment.ms later) one more record so that everything before it is sealed."""
    now = int(time.time() * 1000)
    offsets = _produce_confluent(broker.bootstrap, topic, [(k, v, now) for k, v in items])
    time.sleep(1.1)
    offsets += _produce_confluent(broker.bootstrap, topic, [(b"sentinel", b"s", int(time.time() * 1000))])
    return offsets


def _latest(
    items: list[tuple[bytes, bytes | None]], offsets: list[int]
) -> list[tuple[int, bytes, bytes | None]]:
    last: dict[bytes, tuple[int, bytes | None]] = {}
    for (k, v), o in zip(items, offsets, strict=False):
        last[k] = (o, v)
    return sorted((o, k, v) for k, (o, v) in last.items())


def test_consumer_sees_latest_value_per_key_and_tombstones(cleaning_broker: BrokerProcess) -> None:
    _compacted_topic(cleaning_broker, "compacted")
    items = _history(keys=30, versions=6, tombstoned={3, 7, 11})
    offsets = _produce_and_seal(cleaning_broker, "compacted", items)
    expected = _latest(items + [(b"sentinel", b"s")], offsets)

    def compacted() -> list[tuple[int, bytes | None, bytes | None]] | None:
        got = read_all(cleaning_broker.bootstrap, "compacted")
        return got if got == expected else None

    got = _wait(compacted, timeout=30)
    assert [v for _, k, v in got if k in (b"key-03", b"key-07", b"key-11")] == [None, None, None]
    assert len(got) == 31 and got[-1] == (offsets[-1], b"sentinel", b"s")
    # Offsets are kept, with gaps: kafka-python reads across them too.
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=cleaning_broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    consumer.assign([TopicPartition("compacted", 0)])
    seen = [(m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    assert seen == expected
    # The segment files really shrank and the cleaner checkpoint records how far the log is clean.
    logs = sorted((cleaning_broker.data_dir / "compacted-0").glob("*.log"))
    assert sum(p.stat().st_size for p in logs) < sum(len(v or b"") for _, v in items) / 3
    checkpoint = (cleaning_broker.data_dir / "cleaner-offset-checkpoint").read_text()
    assert f"compacted 0 {offsets[-1]}\n" in checkpoint


def test_tombstones_disappear_after_delete_retention_ms(cleaning_broker: BrokerProcess) -> None:
    _compacted_topic(cleaning_broker, "short-tombstones", **{"delete.retention.ms": "1500"})
    items = _history(keys=10, versions=3, tombstoned={1, 2})
    offsets = _produce_and_seal(cleaning_broker, "short-tombstones", items)
    with_tombstones = _latest(items + [(b"sentinel", b"s")], offsets)
    without = [r for r in with_tombstones if r[2] is not None]

    def states() -> list[tuple[int, bytes | None, bytes | None]] | None:
        got = read_all(cleaning_broker.bootstrap, "short-tombstones")
        return got if got in (with_tombstones, without) else None

    first = _wait(states, timeout=30)
    if first == with_tombstones:  # the cleaning that reached them set their delete horizon
        _wait(lambda: read_all(cleaning_broker.bootstrap, "short-tombstones") == without, timeout=30)


def test_keyless_record_on_compacted_topic_is_invalid_record(cleaning_broker: BrokerProcess) -> None:
    from confluent_kafka import KafkaError, Producer

    _compacted_topic(cleaning_broker, "needs-keys")
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": cleaning_broker.bootstrap, "retries": 0})
    producer.produce(
        "needs-keys", value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err)
    )
    producer.flush(10)  # its own batch: a rejected batch is rejected whole
    producer.produce(
        "needs-keys", key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: errors.append(err)
    )
    producer.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    assert errors[1] is None
    assert [(k, v) for _, k, v in read_all(cleaning_broker.bootstrap, "needs-keys")] == [(b"k", b"keyed")]


def _control_batches(broker: BrokerProcess, topic: str) -> int | None:
    """How many COMMIT/ABORT markers the partition's segment files hold (None while a file moves)."""
    from protocol.records import scan_valid_prefix

    count = 0
    try:
        for path in sorted((broker.data_dir / f"{topic}-0").glob("*.log")):
            headers, _ = scan_valid_prefix(path.read_bytes())
            count += sum(1 for h in headers if h.is_control)
    except FileNotFoundError:
        return None
    return count


def _read_committed(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rc-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[bytes | None, bytes | None]] = []
        idle = 0
        while idle < 3:
            msgs = consumer.consume(500, 0.5)
            idle = 0 if msgs else idle + 1
            for msg in msgs:
                assert msg.error() is None, msg.error()
                out.append((msg.key(), msg.value()))
        return out
    finally:
        consumer.close()


def test_transactional_topic_compacts_and_drops_markers_of_empty_transactions(
    cleaning_broker: BrokerProcess,
) -> None:
    """confluent-kafka transactions on a compacted topic: aborted records and superseded committed
    ones go, read_committed keeps seeing exactly the latest committed values, and the markers of
    transactions left without data disappear after delete.retention.ms (the last one stays: its
    producer is still active)."""
    from confluent_kafka import Producer

    topic = "txn-compacted"
    _compacted_topic(cleaning_broker, topic, **{"delete.retention.ms": "1500"})
    producer = Producer({"bootstrap.servers": cleaning_broker.bootstrap, "transactional.id": "compactor"})
    producer.init_transactions(30)
    for version, commit, keys in ((1, True, range(5)), (2, False, range(10)), (3, True, range(10))):
        producer.begin_transaction()
        for k in keys:
            producer.produce(topic, key=b"k%d" % k, value=b"v%d-" % version + b"x" * 200, partition=0)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # librdkafka would drop records not yet sent instead of writing them
            producer.abort_transaction(30)
    expected = [(b"k%d" % k, b"v3-" + b"x" * 200) for k in range(10)]

    def seal() -> None:
        time.sleep(1.1)  # segment.ms: the next record rolls the segment
        _produce_confluent(cleaning_broker.bootstrap, topic, [(b"sentinel", b"s", int(time.time() * 1000))])

    _wait(lambda: _control_batches(cleaning_broker, topic) == 3, timeout=10)  # markers are written async
    seal()
    # A pass drops the aborted records and the superseded committed ones.
    _wait(lambda: _read_uncommitted_keys(cleaning_broker, topic) == [b"k%d" % k for k in range(10)], 30)
    assert _read_committed(cleaning_broker.bootstrap, topic)[:10] == expected
    # A later pass finds the first two markers alone and gives them a horizon; they go after it.
    seal()
    _wait(lambda: _control_batches(cleaning_broker, topic) == 1, timeout=30)
    assert _read_committed(cleaning_broker.bootstrap, topic) == [
        *expected,
        (b"sentinel", b"s"),
        (b"sentinel", b"s"),
    ]
    assert not any(p.stat().st_size for p in (cleaning_broker.data_dir / f"{topic}-0").glob("*.txnindex"))
    producer.flush(5)


def _read_uncommitted_keys(broker: BrokerProcess, topic: str) -> list[bytes | None]:
    """The keys of the records before the first sentinel, as read_uncommitted reads them."""
    keys = [k for _, k, _ in read_all(broker.bootstrap, topic)]
    return keys[: keys.index(b"sentinel")] if b"sentinel" in keys else keys
