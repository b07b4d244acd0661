"""Retention observed through real clients: retention.ms, retention.bytes, DeleteRecords (AdminClients
and the raw wire), earliest offsets (ListOffsets -2), `.deleted` files going away."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.integration.test_wire import create, list_offset, produce
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

FAST = (
    "log.retention.check.interval.ms=200\n"
    "log.segment.delete.delay.ms=300\n"
    "log.flush.start.offset.checkpoint.interval.ms=500\n"
    "log.cleaner.backoff.ms=200\n"
)
HOUR = 3600 * 1000


@pytest.fixture(scope="module")
def fast_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    d = tmp_path_factory.mktemp("retention")
    props = d / "server.properties"
    props.write_text(FAST)
    proc = BrokerProcess(d / "data", extra=["--config", str(props)]).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def _wait(cond: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def _produce_confluent(
    bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes | None, int]]
) -> list[int]:
    """Produce (key, value, timestamp) records to partition 0; returns their offsets."""
    from confluent_kafka import Producer

    offsets: list[int] = [-1] * len(items)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "partitioner": "murmur2_random"})

    def report(i: int) -> Callable[[Any, Any], None]:
        def cb(err: Any, msg: Any) -> None:
            assert err is None, err
            offsets[i] = msg.offset()

        return cb

    for i, (key, value, ts) in enumerate(items):
        producer.produce(topic, key=key, value=value, timestamp=ts, partition=0, on_delivery=report(i))
        producer.flush(10)  # one batch per record: segments fill predictably
    return offsets


def read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record of partition 0 from the earliest offset, with confluent-kafka (as a consumer sees it)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 20
        while (not out or out[-1][0] < high - 1) and high > low and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                assert msg.error() is None, msg.error()
                out.append((msg.offset(), msg.key(), msg.value()))
        return out
    finally:
        consumer.close()


def _earliest(port: int, topic: str) -> int:
    with RawClient(port) as c:
        part = list_offset(c, topic, -2)
        assert part.error_code == 0
        return part.offset


def _files(broker: BrokerProcess, topic: str, suffix: str) -> list[str]:
    return sorted(p.name for p in (broker.data_dir / f"{topic}-0").iterdir() if p.name.endswith(suffix))


def test_retention_ms_deletes_expired_segments(fast_broker: BrokerProcess) -> None:
    with RawClient(fast_broker.port) as c:
        assert create(c, "aged", configs={"segment.bytes": "1500", "retention.ms": str(HOUR)}).error_code == 0
    now = int(time.time() * 1000)
    old = [(b"k%d" % i, b"old-%d-" % i + b"x" * 300, now - 2 * HOUR) for i in range(12)]
    new = [(b"k%d" % i, b"new-%d" % i, now) for i in range(5)]
    offsets = _produce_confluent(fast_broker.bootstrap, "aged", old + new)
    first_new = offsets[len(old)]
    earliest = _wait(lambda: (e := _earliest(fast_broker.port, "aged")) > 0 and e)
    assert 0 < earliest <= first_new
    got = read_all(fast_broker.bootstrap, "aged")
    assert [o for o, _, _ in got] == list(range(earliest, offsets[-1] + 1))
    assert [v for _, _, v in got][-5:] == [b"new-%d" % i for i in range(5)]
    assert all(
        v is not None and v.startswith(b"old") for _, _, v in got[:-5]
    )  # only the newest segment's old ones
    # The `.deleted` files go away after log.segment.delete.delay.ms.
    _wait(lambda: not _files(fast_broker, "aged", ".deleted"))
    logs = _files(fast_broker, "aged", ".log")
    assert logs[0] == f"{earliest:020d}.log"


def test_retention_bytes_caps_the_partition(fast_broker: BrokerProcess) -> None:
    with RawClient(fast_broker.port) as c:
        assert (
            create(c, "capped", configs={"segment.bytes": "1000", "retention.bytes": "3000"}).error_code == 0
        )
    now = int(time.time() * 1000)
    offsets = _produce_confluent(
        fast_broker.bootstrap, "capped", [(None, b"%d-" % i + b"y" * 200, now) for i in range(40)]
    )
    _wait(lambda: _earliest(fast_broker.port, "capped") > 0)

    def small_enough() -> bool:
        d = fast_broker.data_dir / "capped-0"
        return sum(p.stat().st_size for p in d.glob("*.log")) <= 3000 + 1000

    _wait(small_enough)
    got = read_all(fast_broker.bootstrap, "capped")
    assert got[-1][0] == offsets[-1] and got[0][0] == _earliest(fast_broker.port, "capped")


def test_delete_records_with_admin_clients(fast_broker: BrokerProcess) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition as KTopicPartition

    with RawClient(fast_broker.port) as c:
        assert create(c, "trim", configs={"segment.bytes": "1000"}).error_code == 0
        assert create(c, "trim-compacted", configs={"cleanup.policy": "compact"}).error_code == 0
    now = int(time.time() * 1000)
    _produce_confluent(
        fast_broker.bootstrap, "trim", [(b"k", b"%d-" % i + b"z" * 100, now) for i in range(30)]
    )
    _produce_confluent(fast_broker.bootstrap, "trim-compacted", [(b"k", b"v", now)])

    admin = AdminClient({"bootstrap.servers": fast_broker.bootstrap})
    futures = admin.delete_records([TopicPartition("trim", 0, 12)])
    (result,) = [f.result(10) for f in futures.values()]
    assert result.low_watermark == 12
    assert _earliest(fast_broker.port, "trim") == 12
    got = read_all(fast_broker.bootstrap, "trim")
    assert [o for o, _, _ in got] == list(range(12, 30))
    futures = admin.delete_records([TopicPartition("trim-compacted", 0, 1)])
    with pytest.raises(Exception, match="POLICY_VIOLATION|policy"):
        [f.result(10) for f in futures.values()]

    kadmin = KafkaAdminClient(bootstrap_servers=fast_broker.bootstrap)
    try:
        answer = kadmin.delete_records({KTopicPartition("trim", 0): 20})
        assert answer[KTopicPartition("trim", 0)]["low_watermark"] == 20
    finally:
        kadmin.close()
    assert _earliest(fast_broker.port, "trim") == 20
    # Whole segments below the new start are deleted (their files renamed, then removed).
    _wait(lambda: not _files(fast_broker, "trim", ".deleted"))
    first = int(_files(fast_broker, "trim", ".log")[0][:20])
    assert 0 < first <= 20


def test_delete_records_on_the_wire_and_after_kill(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(proc.port) as c:
            assert create(c, "dr", configs={"segment.bytes": "500"}).error_code == 0
            for i in range(20):
                batch = build_batch([Record(0, 0, b"k", b"v%d" % i * 30)])
                assert produce(c, "dr", batch).error_code == 0

            def delete(topic: str, offset: int, version: int = 1) -> Any:
                resp = c.request(
                    21,
                    version,
                    {
                        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
                        "timeout_ms": 1000,
                    },
                )
                return resp.topics[0].partitions[0]

            assert delete("dr", 21).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert delete("dr", -7).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
            assert delete("nope", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            part = delete("dr", 7, version=0)
            assert (part.error_code, part.low_watermark) == (0, 7)
            assert delete("dr", 3).low_watermark == 7  # never backwards
            assert list_offset(c, "dr", -2).offset == 7
            fetched = c.request(1, 11, _fetch_at("dr", 6)).responses[0].partitions[0]
            assert fetched.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        proc.kill()  # the answer came after the log start offset checkpoint was written
        proc.start()
        with RawClient(proc.port) as c:
            assert list_offset(c, "dr", -2).offset == 7
            part = (
                c.request(
                    21,
                    1,
                    {
                        "topics": [{"name": "dr", "partitions": [{"partition_index": 0, "offset": -1}]}],
                        "timeout_ms": 1,
                    },
                )
                .topics[0]
                .partitions[0]
            )
            assert (part.error_code, part.low_watermark) == (0, 20)  # -1: up to the high watermark
            assert list_offset(c, "dr", -2).offset == 20 == list_offset(c, "dr", -1).offset
    finally:
        proc.stop()


def _fetch_at(topic: str, offset: int) -> dict[str, Any]:
    from tests.integration.test_wire import fetch_request

    return fetch_request(topic, offset)
