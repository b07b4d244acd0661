"""The broker process on the wire: version table, framing, errors, produce/fetch semantics.

Raw sockets with our own encoder; the real clients are in tests/compat.
"""

from __future__ import annotations

import itertools
import struct
import threading
import time
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.headers import encode_request_header
from protocol.messages import encode_request
from protocol.records import Record, build_batch, decode_batch, read_header, validate_batches
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

# Kafka 4.1's ranges (its JSON at the 4.1.0 tag), except that older versions Kafka 4.0 removed
# (KIP-896) are still served here for old clients (ACLs and DescribeConfigs v0, DescribeLogDirs
# v0); not WriteTxnMarkers v0, which only brokers send.
EXPECTED_VERSIONS = {
    0: (0, 13),
    1: (4, 18),
    2: (1, 10),
    3: (0, 13),
    8: (2, 9),
    9: (1, 9),
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    17: (0, 1),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),
    21: (0, 2),
    22: (0, 5),
    23: (2, 4),
    24: (0, 5),
    25: (0, 4),
    26: (0, 5),
    27: (1, 1),
    28: (0, 5),
    29: (0, 3),
    30: (0, 3),
    31: (0, 3),
    32: (0, 4),
    33: (0, 2),
    35: (0, 4),
    36: (0, 2),
    37: (0, 3),
    42: (0, 2),
    43: (0, 2),
    44: (0, 1),
    45: (0, 1),
    46: (0, 0),
    47: (0, 0),
    48: (0, 1),
    49: (0, 1),
    50: (0, 0),
    51: (0, 0),
    60: (0, 2),
    61: (0, 0),
    65: (0, 0),
    66: (0, 2),
    68: (0, 1),
    69: (0, 1),
}


def batch(*values: bytes, **kw: Any) -> bytes:
    return build_batch([Record(i, i, b"k%d" % i, v) for i, v in enumerate(values)], **kw)


def create(
    c: RawClient,
    name: str,
    partitions: int = 1,
    rf: int = 1,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
) -> Any:
    return c.request(
        19,
        4,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": 5000,
            "validate_only": validate_only,
        },
    ).topics[0]


def produce(
    c: RawClient, topic: str, records: bytes, partition: int = 0, acks: int = 1, version: int = 7
) -> Any:
    resp = c.request(
        0,
        version,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
        },
    )
    return resp.responses[0].partition_responses[0]


def fetch_request(
    topic: str,
    offset: int,
    partitions: tuple[int, ...] = (0,),
    max_wait: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                    for p in partitions
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch(c: RawClient, topic: str, offset: int, **kw: Any) -> Any:
    return c.request(1, 11, fetch_request(topic, offset, **kw)).responses[0].partitions[0]


def list_offset(c: RawClient, topic: str, ts: int) -> Any:
    return (
        c.request(
            2,
            3,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": ts}]}],
            },
        )
        .topics[0]
        .partitions[0]
    )


def still_serves(port: int) -> None:
    """A normal client on another connection still produces and consumes."""
    with RawClient(port) as c:
        assert c.request(18, 2, {}).error_code == 0
        c.request(3, 1, {"topics": [{"name": "alive"}]})  # auto-created on first use
        sent = produce(c, "alive", batch(b"still here"))
        assert sent.error_code == 0
        part = fetch(c, "alive", sent.base_offset)
        assert decode_batch(part.records)[1][0].value == b"still here"


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_table(broker: BrokerProcess, version: int) -> None:
    with RawClient(broker.port) as c:
        body = {"client_software_name": "raw", "client_software_version": "1", "tagged_fields": {}}
        resp = c.request(18, version, body if version >= 3 else {})
    assert resp.error_code == 0
    table = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert table == EXPECTED_VERSIONS


def test_api_versions_unknown_version_answers_v0_with_error_35(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        cid = c.send(18, 99, b"garbage that is not parsed")
        resp = c.recv(18, 0, cid)
        assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert (18, 0, 4) in [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys]
        assert (
            c.request(
                18, 3, {"client_software_name": "x", "client_software_version": "1", "tagged_fields": {}}
            ).error_code
            == 0
        )


@pytest.mark.parametrize("size", [104_857_601, -1, 0])
def test_bad_frame_size_closes(broker: BrokerProcess, size: int) -> None:
    with RawClient(broker.port) as c:
        c.sock.sendall(struct.pack(">i", size) + b"\x00" * 16)
        assert c.is_closed()
    still_serves(broker.port)


@pytest.mark.parametrize(("key", "version"), [(9999, 0), (0, 2), (0, 99), (3, 14), (27, 0)])
def test_unknown_key_or_version_closes(broker: BrokerProcess, key: int, version: int) -> None:
    with RawClient(broker.port) as c:
        c.send(key, version, b"\x00" * 32)
        assert c.is_closed()
    still_serves(broker.port)


def test_header_cut_short_then_eof(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        c.sock.sendall(struct.pack(">i", 20) + b"\x00\x03\x00")
        c.sock.shutdown(1)
        assert c.is_closed()
    still_serves(broker.port)


def test_malformed_body_closes(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        c.send(3, 1, struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 10)  # array count far beyond the bytes left
        assert c.is_closed()
    still_serves(broker.port)


def test_ten_byte_varint_closes(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        # ApiVersions v3 (flexible): the compact string length is a 10-byte varint
        c.send(18, 3, b"\xff" * 9 + b"\x01" + b"x" * 20)
        assert c.is_closed()
    still_serves(broker.port)


def test_invalid_utf8_client_id_closes(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        c.send_frame(struct.pack(">hhih", 18, 0, 1, 2) + b"\xff\xfe")
        assert c.is_closed()
    still_serves(broker.port)


def test_pipelined_requests_answered_in_order(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "pipe")
        sent = []
        for i in range(30):
            if i % 3 == 0:
                sent.append((c.send(1, 11, fetch_request("pipe", 0, max_wait=200, min_bytes=10_000)), 1, 11))
            elif i % 3 == 1:
                sent.append((c.send(18, 2, {}), 18, 2))
            else:
                sent.append(
                    (
                        c.send(
                            0,
                            7,
                            {
                                "transactional_id": None,
                                "acks": -1,
                                "timeout_ms": 5000,
                                "topic_data": [
                                    {
                                        "name": "pipe",
                                        "partition_data": [{"index": 0, "records": batch(b"v%d" % i)}],
                                    }
                                ],
                            },
                        ),
                        0,
                        7,
                    )
                )
        for cid, key, version in sent:
            c.recv(key, version, cid)


def test_frames_split_at_any_byte_large_and_small(broker: BrokerProcess) -> None:
    """Small frames, large ones (read straight into pooled buffers) and size prefixes cut anywhere.

    The second large Produce is smaller than the first and lands in the same
    reused buffer: none of the first one's bytes may leak into it.
    """

    def frame(api_key: int, version: int, cid: int, body: dict[str, Any]) -> bytes:
        payload = encode_request_header(api_key, version, cid, "split") + encode_request(
            api_key, version, body
        )
        return struct.pack(">i", len(payload)) + payload

    big_values = [bytes([i]) * 90_000 for i in range(4)]
    records = b"".join(batch(v) for v in big_values) + batch(b"tail")
    produce_body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": "split", "partition_data": [{"index": 0, "records": records}]}],
    }
    many_topics = {
        "topics": [{"name": f"missing-topic-{i:06d}"} for i in range(8000)],
        "allow_auto_topic_creation": False,
    }

    def produce_of(records: bytes) -> dict[str, Any]:
        return {
            **produce_body,
            "topic_data": [{"name": "split", "partition_data": [{"index": 0, "records": records}]}],
        }

    again = [b"\xaa" * 70_000, b"\xbb" * 70_000]
    frames = [
        frame(18, 2, 1, {}),
        frame(0, 7, 2, produce_body),  # ~360 KB
        frame(3, 5, 3, many_topics),  # ~190 KB, not a Produce
        frame(0, 7, 4, produce_of(batch(b"small"))),
        frame(0, 7, 5, produce_of(batch(*again))),  # ~140 KB, in a reused buffer
        frame(18, 2, 6, {}),
    ]
    stream = b"".join(frames)
    with RawClient(broker.port) as c:
        create(c, "split")
        # every size prefix cut in two, large frames cut inside, pieces read one by one
        ends = list(itertools.accumulate(len(f) for f in frames))
        cuts = sorted({0, 1000, 70_001, 70_003, 200_000, 500_000, *(e + 2 for e in ends[:-1]), ends[-1]})
        for a, b in itertools.pairwise(cuts):
            c.sock.sendall(stream[a:b])
            time.sleep(0.02)  # let the broker read each piece on its own
        assert c.recv(18, 2, 1).error_code == 0
        assert c.recv(0, 7, 2).responses[0].partition_responses[0].base_offset == 0
        meta = c.recv(3, 5, 3)
        assert len(meta.topics) == 8000 and {t.error_code for t in meta.topics} == {
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }
        assert c.recv(0, 7, 4).responses[0].partition_responses[0].base_offset == 5
        assert c.recv(0, 7, 5).responses[0].partition_responses[0].base_offset == 6
        assert c.recv(18, 2, 6).error_code == 0
        got = []
        offset = 0
        while offset < 8:
            part = fetch(c, "split", offset)
            for h in validate_batches(part.records):
                _, recs = decode_batch(part.records[h.position : h.position + h.size])
                got += [(h.offset_of(r), r.value) for r in recs]
            offset = got[-1][0] + 1
        assert got == [(i, v) for i, v in enumerate([*big_values, b"tail", b"small", *again])]


def test_produce_errors_keep_connection_usable(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        assert create(c, "errs").error_code == 0
        good = batch(b"hello")
        flipped = bytearray(good)
        flipped[70] ^= 0x01
        assert produce(c, "errs", bytes(flipped)).error_code == ErrorCode.CORRUPT_MESSAGE
        big = batch(b"x" * 1_100_000)
        assert produce(c, "errs", big).error_code == ErrorCode.MESSAGE_TOO_LARGE
        assert produce(c, "errs", good, acks=5).error_code == ErrorCode.INVALID_REQUIRED_ACKS
        assert produce(c, "nope", good).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce(c, "__consumer_offsets", good).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert produce(c, "errs", good, partition=3).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce(c, "errs", good[:-3]).error_code == ErrorCode.CORRUPT_MESSAGE
        control = build_batch(
            [Record(0, 0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], is_control=True
        )
        assert produce(c, "errs", control).error_code == ErrorCode.INVALID_RECORD
        ok = produce(c, "errs", good)
        assert (ok.error_code, ok.base_offset) == (0, 0)
        # nothing of the rejected batches reached the log
        assert fetch(c, "errs", 0).high_watermark == 1


def test_produce_fetch_offsets_and_batches(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "pf", partitions=2)
        offsets = [produce(c, "pf", batch(*[b"m%d" % j for j in range(i + 1)])).base_offset for i in range(5)]
        assert offsets == [0, 1, 3, 6, 10]
        assert produce(c, "pf", batch(b"a"), acks=-1).base_offset == 15
        part = fetch(c, "pf", 7)  # inside the fourth batch: that whole batch comes back first
        assert part.error_code == 0 and part.high_watermark == 16 and part.last_stable_offset == 16
        assert part.aborted_transactions == []
        headers = validate_batches(part.records)
        assert [h.base_offset for h in headers] == [6, 10, 15]
        hdr, recs = decode_batch(part.records)
        assert [r.value for r in recs] == [b"m0", b"m1", b"m2", b"m3"]
        assert fetch(c, "pf", 16).records in (b"", None)
        assert fetch(c, "pf", 17).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        # every requested partition is answered, the empty one too
        resp = c.request(1, 4, fetch_request("pf", 0, partitions=(0, 1)))
        assert [p.partition_index for p in resp.responses[0].partitions] == [0, 1]
        # max_bytes smaller than the first batch still returns one whole batch
        one = fetch(c, "pf", 0, max_bytes=10)
        assert [h.base_offset for h in validate_batches(one.records)] == [0]


def test_fetch_long_poll_wakes_on_produce(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c, RawClient(broker.port) as p:
        create(c, "lp")
        started = time.monotonic()
        cid = c.send(1, 11, fetch_request("lp", 0, max_wait=10_000, min_bytes=1))
        threading.Timer(0.3, lambda: produce(p, "lp", batch(b"wake"))).start()
        part = c.recv(1, 11, cid).responses[0].partitions[0]
        assert 0.25 < time.monotonic() - started < 5
        assert decode_batch(part.records)[1][0].value == b"wake"
        # a partition error is answered at once, not after max_wait_ms
        started = time.monotonic()
        assert fetch(c, "lp", 99, max_wait=10_000).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert time.monotonic() - started < 2
        # nothing arrives: answered empty after max_wait_ms
        started = time.monotonic()
        empty = fetch(c, "lp", 1, max_wait=300)
        assert 0.25 < time.monotonic() - started < 5 and not empty.records


def test_list_offsets(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "lo")
        for i in range(3):
            produce(c, "lo", batch(b"a", b"b", base_timestamp=1_000_000 + i * 1000))
        assert list_offset(c, "lo", -2).offset == 0
        assert list_offset(c, "lo", -1).offset == 6
        hit = list_offset(c, "lo", 1_001_000)
        assert (hit.offset, hit.timestamp) == (2, 1_001_000)
        hit = list_offset(c, "lo", 1_001_001)
        assert (hit.offset, hit.timestamp) == (3, 1_001_001)
        assert list_offset(c, "lo", 9_000_000).offset == -1
        resp = c.request(
            2,
            1,
            {
                "replica_id": -1,
                "topics": [{"name": "zz", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
            },
        )
        assert resp.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_idempotent_producer_rules(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "idem")
        init = c.request(22, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
        pid = init.producer_id
        assert init.error_code == 0 and init.producer_epoch == 0
        assert c.request(22, 0, {"transactional_id": None, "transaction_timeout_ms": 1}).producer_id != pid

        def b(seq: int, n: int = 2, epoch: int = 0) -> bytes:
            return batch(*[b"x"] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)

        assert produce(c, "idem", b(0)).base_offset == 0
        assert produce(c, "idem", b(2)).base_offset == 2
        dup = produce(c, "idem", b(0))
        assert (dup.error_code, dup.base_offset) == (0, 0)
        assert produce(c, "idem", b(7)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(c, "idem", b(4)).base_offset == 4
        assert produce(c, "idem", b(0, epoch=1)).base_offset == 6
        assert produce(c, "idem", b(2, epoch=0)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        stale = produce(c, "idem", b(2, epoch=0))
        assert stale.log_start_offset == 0  # an error answer still says where the log starts
        # a producer the partition does not know (its state expired) goes on at any sequence
        other = batch(b"y", producer_id=pid + 100, producer_epoch=0, base_sequence=5)
        assert produce(c, "idem", other).base_offset == 8
        follow = batch(b"z", producer_id=pid + 100, producer_epoch=0, base_sequence=7)
        assert produce(c, "idem", follow).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert fetch(c, "idem", 0).high_watermark == 9


def test_create_topic_validation(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        assert create(c, "ok.topic_1-x", partitions=3).error_code == 0
        assert create(c, "ok.topic_1-x").error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        # the name comes first: an existing topic asked for with an impossible layout still exists
        assert create(c, "ok.topic_1-x", rf=3).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert create(c, "ok.topic_1-x", partitions=0).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        for bad in ("", ".", "..", "a" * 250, "sp ace", "é"):
            assert create(c, bad).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION, bad
        assert create(c, "sp ace", rf=3).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert create(c, "p0", partitions=0).error_code == ErrorCode.INVALID_PARTITIONS
        assert create(c, "rf3", rf=3).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
        assert create(c, "cfg", configs={"segment.bytes": "abc"}).error_code == ErrorCode.INVALID_CONFIG
        assert create(c, "cfg", configs={"no.such": "1"}).error_code == ErrorCode.INVALID_CONFIG
        assert create(c, "cfg", configs={"retention.ms": None}).error_code == ErrorCode.INVALID_CONFIG  # type: ignore[dict-item]
        assert create(c, "vo", validate_only=True).error_code == 0
        meta = c.request(3, 5, {"topics": None, "allow_auto_topic_creation": False})
        # __consumer_offsets is listed too (is_internal), as in Kafka
        topics = [t for t in meta.topics if not t.is_internal]
        assert [t.name for t in topics] == ["ok.topic_1-x"]
        assert [p.partition_index for p in topics[0].partitions] == [0, 1, 2]


def test_metadata_auto_create_and_delete(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        m = c.request(3, 4, {"topics": [{"name": "auto"}], "allow_auto_topic_creation": False})
        assert m.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        m = c.request(3, 1, {"topics": [{"name": "auto"}]})
        assert m.topics[0].error_code == 0 and m.controller_id == 0
        assert (m.brokers[0].node_id, m.brokers[0].host, m.brokers[0].port) == (0, "127.0.0.1", broker.port)
        v0_all = c.request(3, 0, {"topics": []}).topics
        assert sorted(t.name for t in v0_all) == ["__consumer_offsets", "auto"]
        assert c.request(3, 1, {"topics": []}).topics == []
        m = c.request(3, 1, {"topics": [{"name": "bad name"}]})
        assert m.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        m = c.request(3, 4, {"topics": [{"name": "bad name"}], "allow_auto_topic_creation": False})
        assert m.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION  # not "unknown": it never can be
        # an internal topic asked for first by a consumer gets its own layout, not num.partitions
        m = c.request(3, 4, {"topics": [{"name": "__transaction_state"}], "allow_auto_topic_creation": True})
        assert (m.topics[0].error_code, m.topics[0].is_internal, len(m.topics[0].partitions)) == (0, True, 50)
        produce(c, "auto", batch(b"x"))
        resp = c.request(20, 3, {"topic_names": ["auto", "never"], "timeout_ms": 1000})
        assert [r.error_code for r in resp.responses] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert not (broker.data_dir / "auto-0").exists()
        left = c.request(3, 5, {"topics": None, "allow_auto_topic_creation": False}).topics
        assert [t.name for t in left if not t.is_internal] == []
        found = c.request(10, 3, {"key": "txn", "key_type": 1})
        assert found.error_code == 0  # the transaction coordinator works on the topic Metadata created


def test_log_append_time_topic(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "lat", configs={"message.timestamp.type": "LogAppendTime"})
        before = int(time.time() * 1000)
        resp = produce(c, "lat", batch(b"a", b"b", base_timestamp=1000))
        assert resp.log_append_time_ms >= before
        part = fetch(c, "lat", 0)
        (h,) = validate_batches(part.records)  # CRC recomputed
        assert h.timestamp_type == 1 and h.max_timestamp == resp.log_append_time_ms


def test_restart_keeps_data_and_continues_offsets(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "keep", partitions=2)
        pid = c.request(22, 0, {"transactional_id": None, "transaction_timeout_ms": 1}).producer_id
        first = batch(b"a", b"b", producer_id=pid, producer_epoch=0, base_sequence=0)
        produce(c, "keep", first)
        produce(c, "keep", batch(b"c"), partition=1)
    assert broker.stop() == 0
    broker.start()
    with RawClient(broker.port) as c:
        dup = produce(c, "keep", first)  # producer state rebuilt from the log
        assert (dup.error_code, dup.base_offset) == (0, 0)
        assert produce(c, "keep", batch(b"d")).base_offset == 2
        assert produce(c, "keep", batch(b"e"), partition=1).base_offset == 1
        values = [r.value for r in decode_batch(fetch(c, "keep", 0).records)[1]]
        assert values == [b"a", b"b"]
        assert c.request(22, 0, {"transactional_id": None, "transaction_timeout_ms": 1}).producer_id > pid


def test_segment_files_on_disk(broker: BrokerProcess) -> None:
    sent = [batch(*[bytes([65 + i]) * 300] * 5) for i in range(30)]
    with RawClient(broker.port) as c:
        create(c, "disk")
        # leadership starts at creation: epoch 0 from offset 0 is on disk before any produce
        assert (broker.data_dir / "disk-0" / "leader-epoch-checkpoint").read_bytes() == b"0\n1\n0 0\n"
        for b in sent:
            produce(c, "disk", b)
    assert broker.stop() == 0  # clean close trims the indexes
    d = broker.data_dir / "disk-0"
    names = sorted(p.name for p in d.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    assert names == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]
    log = (d / "00000000000000000000.log").read_bytes()
    pos = 0
    for i, b in enumerate(sent):
        h = read_header(log, pos)
        assert h.base_offset == i * 5 and h.partition_leader_epoch == 0
        assert log[pos + 8 : pos + 12] == b[8:12] and log[pos + 16 : pos + len(b)] == b[16:]
        pos += len(b)
    assert pos == len(log)
    index = (d / "00000000000000000000.index").read_bytes()
    timeindex = (d / "00000000000000000000.timeindex").read_bytes()
    assert len(index) % 8 == 0 and len(index) // 8 >= 2
    assert len(timeindex) % 12 == 0
    rel, position = struct.unpack_from(">ii", index, 0)
    assert read_header(log, position).last_offset == rel
    broker.start()


def test_large_fetches_read_whole_batches_across_segments(broker: BrokerProcess) -> None:
    """Reads of 64 KB or more are served from a mapping of the `.log`: every byte must match, in sealed
    segments and in the active one, and the CRC of every batch must hold on the client's side."""
    values = [bytes([i % 251]) * 20_000 + b"%d" % i for i in range(40)]
    with RawClient(broker.port) as c:
        assert create(c, "served", configs={"segment.bytes": "200000"}).error_code == 0
        for v in values:
            assert produce(c, "served", batch(v)).error_code == 0
        got: list[bytes] = []
        sizes = []
        offset = 0
        while offset < len(values):
            part = fetch(c, "served", offset, max_bytes=300_000)
            assert part.error_code == 0
            sizes.append(len(part.records))
            for h in validate_batches(part.records):  # CRC checked
                _, recs = decode_batch(part.records[h.position : h.position + h.size])
                got.extend(r.value for r in recs)
                offset = h.base_offset + h.last_offset_delta + 1
        assert got == values
        assert max(sizes) >= 64 * 1024  # some reads took the mapped path


@pytest.mark.parametrize(
    ("api", "old", "new", "body"),
    [
        (26, 1, 3, lambda pid, epoch: {"producer_id": pid, "producer_epoch": epoch, "committed": True}),
        (25, 1, 3, lambda pid, epoch: {"producer_id": pid, "producer_epoch": epoch, "group_id": "g"}),
        (
            24,
            1,
            3,
            lambda pid, epoch: {
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": "fenced", "partitions": [0]}],
            },
        ),
    ],
    ids=["EndTxn", "AddOffsetsToTxn", "AddPartitionsToTxn"],
)
def test_a_fenced_producer_is_told_in_words_its_version_knows(
    broker: BrokerProcess, api, old, new, body
) -> None:  # type: ignore[no-untyped-def]
    """PRODUCER_FENCED came with v2 of these APIs (KIP-588); v0-1 clients get INVALID_PRODUCER_EPOCH,
    as Kafka answers them."""
    with RawClient(broker.port) as c:
        create(c, "fenced")
        txn = f"fenced-{api}"
        c.await_transaction_coordinator(txn)
        first = c.request(22, 3, {"transactional_id": txn, "transaction_timeout_ms": 60000})
        assert first.error_code == 0
        c.request(22, 3, {"transactional_id": txn, "transaction_timeout_ms": 60000})  # bumps the epoch
        key = "v3_and_below_transactional_id" if api == 24 else "transactional_id"

        def code(version: int) -> int:
            answer = c.request(api, version, {key: txn, **body(first.producer_id, first.producer_epoch)})
            if api == 24:
                return answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            return answer.error_code

        assert (code(old), code(new)) == (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)


def test_transactional_batches_need_their_partition_in_the_transaction(broker: BrokerProcess) -> None:
    """KIP-890: a producer's first transactional batch on a partition is checked with the
    coordinator; one for a partition never added (or added to a transaction that has ended)
    would open a transaction on it that no marker ever closes."""
    with RawClient(broker.port) as c:
        create(c, "verified", partitions=2)
        c.await_transaction_coordinator("v")
        init = c.request(22, 3, {"transactional_id": "v", "transaction_timeout_ms": 60000})
        pid, epoch = init.producer_id, init.producer_epoch

        def send(partition: int, seq: int, txn_id: str | None = "v") -> Any:
            records = build_batch(
                [Record(0, 0, None, b"x")],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                is_transactional=True,
            )
            body = {
                "transactional_id": txn_id,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [
                    {"name": "verified", "partition_data": [{"index": partition, "records": records}]}
                ],
            }
            return c.request(0, 9, body).responses[0].partition_responses[0]

        def add(partition: int) -> int:
            body = {
                "v3_and_below_transactional_id": "v",
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": "verified", "partitions": [partition]}],
            }
            answer = c.request(24, 3, body)
            return answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code

        assert send(0, 0).error_code == ErrorCode.INVALID_TXN_STATE  # not added yet
        assert send(0, 0, None).error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert add(0) == 0
        assert (send(0, 0).error_code, send(0, 1).base_offset) == (0, 1)  # the second needs no check
        assert send(1, 0).error_code == ErrorCode.INVALID_TXN_STATE  # never added
        ended = c.request(
            26, 3, {"transactional_id": "v", "producer_id": pid, "producer_epoch": epoch, "committed": False}
        )
        assert ended.error_code == 0
        # once the ABORT marker is written (the LSO reaches the HW), a late batch of that transaction
        # is refused: it would open another one. (Before the marker it joins the open transaction
        # and is aborted with it, as in Kafka.)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            part = fetch(c, "verified", 0)
            if part.last_stable_offset == part.high_watermark:
                break
            time.sleep(0.05)
        # until the marker is durable the transaction is PrepareAbort: the retriable
        # NOT_ENOUGH_REPLICAS (Kafka's word for CONCURRENT_TRANSACTIONS here), which clients retry
        late = send(0, 2)
        while late.error_code == ErrorCode.NOT_ENOUGH_REPLICAS and time.monotonic() < deadline:
            time.sleep(0.01)
            late = send(0, 2)
        assert late.error_code == ErrorCode.INVALID_TXN_STATE, late
        part = fetch(c, "verified", 0)
        assert part.last_stable_offset == part.high_watermark
