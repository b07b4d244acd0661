"""Produce v3-13 and Fetch v4-18 against a broker process: every version, topic IDs, diverging epochs."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch, decode_batch, validate_batches
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

E = ErrorCode
ZERO = uuid.UUID(int=0)


def batch(*values: bytes, keys: bool = True) -> bytes:
    return build_batch([Record(i, i, b"k%d" % i if keys else None, v) for i, v in enumerate(values)])


def create(c: RawClient, name: str, partitions: int = 1, **configs: str) -> uuid.UUID:
    topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": []}
    topic["configs"] = [{"name": k, "value": v} for k, v in configs.items()]
    made = c.request(19, 7, {"topics": [topic], "timeout_ms": 5000}).topics[0]
    assert made.error_code == 0
    return made.topic_id


def produce(
    c: RawClient, version: int, topic: str, records: bytes, partition: int = 0, topic_id: uuid.UUID = ZERO
) -> Any:
    """The partition's answer; v13 names the topic by ``topic_id`` and must be answered under it."""
    named = {"topic_id": topic_id} if version >= 13 else {"name": topic}
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{**named, "partition_data": [{"index": partition, "records": records}]}],
    }
    (answer,) = c.request(0, version, body).responses
    assert (answer.topic_id if version >= 13 else answer.name) == (topic_id if version >= 13 else topic)
    return answer.partition_responses[0]


def fetch_body(version: int, topic: str, topic_id: uuid.UUID, offset: int, **kw: Any) -> dict[str, Any]:
    partition = {
        "partition": kw.pop("partition", 0),
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "last_fetched_epoch": kw.pop("last_fetched_epoch", -1),
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    named = {"topic_id": topic_id} if version >= 13 else {"topic": topic}
    return {
        "replica_id": -1,
        "max_wait_ms": kw.pop("max_wait_ms", 0),
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [{**named, "partitions": [partition]}],
        "forgotten_topics_data": [],
        **kw,
    }


def fetch(c: RawClient, version: int, topic: str, topic_id: uuid.UUID, offset: int, **kw: Any) -> Any:
    return c.request(1, version, fetch_body(version, topic, topic_id, offset, **kw))


def values(records: bytes | None) -> list[bytes | None]:
    """The values of every record in a fetched record set, batch by batch."""
    data = bytes(records or b"")
    out: list[bytes | None] = []
    for h in validate_batches(data):
        out += [r.value for r in decode_batch(data[h.position : h.position + h.size])[1]]
    return out


def test_every_produce_and_fetch_version(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        topic_id = create(c, "t")
        for version in range(3, 14):
            r = produce(c, version, "t", batch(b"v%d" % version), topic_id=topic_id)
            assert (r.error_code, r.base_offset) == (0, version - 3)
        expected = [b"v%d" % v for v in range(3, 14)]
        for version in range(4, 19):
            resp = fetch(c, version, "t", topic_id, 0)
            (topic,) = resp.responses
            assert (topic.topic_id if version >= 13 else topic.topic) == (topic_id if version >= 13 else "t")
            (p,) = topic.partitions
            assert (p.error_code, p.high_watermark) == (0, 11)
            assert values(p.records) == expected


def test_fetch_by_topic_id(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        old = create(c, "t")
        produce(c, 11, "t", batch(b"old"))
        unknown = uuid.uuid4()
        p = fetch(c, 13, "t", unknown, 0).responses[0].partitions[0]
        assert (p.error_code, bytes(p.records)) == (E.UNKNOWN_TOPIC_ID, b"")
        c.request(20, 6, {"topics": [{"name": "t", "topic_id": ZERO}], "timeout_ms": 5000})
        new = create(c, "t")
        produce(c, 11, "t", batch(b"new"))
        assert fetch(c, 17, "t", old, 0).responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_ID
        assert values(fetch(c, 17, "t", new, 0).responses[0].partitions[0].records) == [b"new"]
        # Produce v13 names topics by id too: the deleted topic's id, and one no topic ever had, are
        # UNKNOWN_TOPIC_ID (v12 and older say UNKNOWN_TOPIC_OR_PARTITION for an unknown name)
        for gone in (old, unknown, ZERO):
            assert produce(c, 13, "t", batch(b"lost"), topic_id=gone).error_code == E.UNKNOWN_TOPIC_ID
        assert produce(c, 13, "t", batch(b"by id"), topic_id=new).base_offset == 1
        assert values(fetch(c, 18, "t", new, 0).responses[0].partitions[0].records) == [b"new", b"by id"]


def test_long_poll_by_topic_id_wakes_on_append(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c, RawClient(broker.port) as writer:
        topic_id = create(c, "t")
        timer = threading.Timer(0.3, lambda: produce(writer, 11, "t", batch(b"late")))
        timer.start()
        started = time.monotonic()
        resp = fetch(c, 16, "t", topic_id, 0, max_wait_ms=10_000)
        timer.join()
        assert time.monotonic() - started < 5
        assert values(resp.responses[0].partitions[0].records) == [b"late"]


def test_diverging_epoch(broker: BrokerProcess) -> None:
    """One broker leads in epoch 0: a fetcher at an offset past the end of epoch 0 has diverged, and
    is told where epoch 0 ends instead of getting records; one claiming an epoch this log has never
    had gets OFFSET_OUT_OF_RANGE, as from Kafka (there is no end offset to give for it)."""
    with RawClient(broker.port) as c:
        topic_id = create(c, "t")
        produce(c, 11, "t", batch(b"a", b"b", b"c"))
        agree = fetch(c, 12, "t", topic_id, 1, last_fetched_epoch=0).responses[0].partitions[0]
        assert values(agree.records) == [b"a", b"b", b"c"]  # the whole batch holding offset 1
        assert "diverging_epoch" not in agree or agree.diverging_epoch.epoch == -1
        p = fetch(c, 13, "t", topic_id, 5, last_fetched_epoch=0).responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, bytes(p.records)) == (0, 3, b"")
        assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 3)
        newer = fetch(c, 13, "t", topic_id, 2, last_fetched_epoch=3).responses[0].partitions[0]
        assert (newer.error_code, bytes(newer.records)) == (E.OFFSET_OUT_OF_RANGE, b"")


def test_produce_errors_carry_their_message_from_v8(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "compacted", **{"cleanup.policy": "compact"})
        keyless = batch(b"x", keys=False)
        assert produce(c, 7, "compacted", keyless).error_code == E.INVALID_RECORD
        for version in (8, 9, 11):
            r = produce(c, version, "compacted", keyless)
            assert r.error_code == E.INVALID_RECORD and r.error_message
            assert produce(c, version, "nope", batch(b"x")).error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_tagged_fields_in_requests_are_read(broker: BrokerProcess) -> None:
    """Tagged fields take the schema's path, not the fast decoder's: the answer is the same."""
    with RawClient(broker.port) as c:
        topic_id = create(c, "t")
        produce(c, 11, "t", batch(b"x"))
        tagged = fetch(c, 17, "t", topic_id, 0, cluster_id="someone", replica_state={"replica_id": -1})
        assert values(tagged.responses[0].partitions[0].records) == [b"x"]
        body = fetch_body(18, "t", topic_id, 0)
        body["topics"][0]["partitions"][0]["high_watermark"] = 0  # KIP-1166's tag: read, and ignored
        assert values(c.request(1, 18, body).responses[0].partitions[0].records) == [b"x"]
