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
