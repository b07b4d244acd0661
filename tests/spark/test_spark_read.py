"""The PySpark data source, batch read: real local[2] Spark against a real broker subprocess."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from client.admin import AdminClient, NewTopic
from client.spark import DataLossError, split_ranges
from client.spark.options import parse_read_options
from client.spark.reader import MiniKafkaInputPartition, read_range
from client.types import TopicPartition
from tests.broker_process import BrokerProcess, free_port
from tests.compat.clients import BASE_TS, Message, produce_confluent
from tests.spark.conftest import create_topics, running_broker

# pyspark 4.0's collect() leaves its local result socket to the garbage collector (fixed in later releases).
pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

TOPIC = "events"
PARTITIONS = 8
PER_PARTITION = 40


def _messages(partition: int) -> list[Message]:
    out = []
    for i in range(PER_PARTITION):
        key = None if i % 5 == 1 else f"k{partition}-{i}".encode()
        value = None if i % 7 == 3 else (b"" if i % 11 == 4 else f"v{partition}-{i}".encode() * (1 + i % 3))
        headers = (("h", f"{partition}-{i}".encode()), ("trace", b"abc")) if i % 3 == 0 else ()
        out.append(Message(key, value, headers, BASE_TS + partition * 1000 + i))
    return out


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory, "spark") as proc:
        create_topics(proc.bootstrap, **{TOPIC: PARTITIONS, "other-a": 2, "other-b": 1})
        for p in range(PARTITIONS):
            produce_confluent(proc.bootstrap, TOPIC, p, _messages(p), "lz4" if p % 2 else None)
        produce_confluent(proc.bootstrap, "other-a", 0, [Message(b"a", b"0")], None)
        produce_confluent(proc.bootstrap, "other-a", 1, [Message(b"a", b"1"), Message(b"a", b"2")], None)
        produce_confluent(proc.bootstrap, "other-b", 0, [Message(b"b", b"0")], None)
        yield proc


def _reader(spark: SparkSession, broker: BrokerProcess, **options: str):
    r = spark.read.format("minikafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).replace(tzinfo=None)


def test_schema_matches_spark_kafka_source(spark: SparkSession, broker: BrokerProcess) -> None:
    df = _reader(spark, broker, subscribe=TOPIC).load()
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>"
    )
    df = _reader(spark, broker, subscribe=TOPIC, includeHeaders="true").load()
    assert df.schema.simpleString().endswith(",headers:array<struct<key:string,value:binary>>>")


def test_full_read_matches_what_was_produced(spark: SparkSession, broker: BrokerProcess) -> None:
    df = _reader(spark, broker, SUBSCRIBE=TOPIC, includeHeaders="true").load()
    assert df.rdd.getNumPartitions() == PARTITIONS
    rows = df.collect()
    assert len(rows) == PARTITIONS * PER_PARTITION
    got = {(r.partition, r.offset): r for r in rows}
    for p in range(PARTITIONS):
        for i, m in enumerate(_messages(p)):
            r = got[(p, i)]
            assert r.topic == TOPIC
            assert r.key == m.key and r.value == m.value, (p, i)
            assert r.timestamp == _ts(m.timestamp), (p, i)
            assert r.timestampType == 0
            if m.headers:
                assert [(h.key, h.value) for h in r.headers] == list(m.headers)
            else:
                assert r.headers is None
    assert df.count() == PARTITIONS * PER_PARTITION
    # Spark-side aggregation over the source works too.
    per_partition = {r.partition: r["count"] for r in df.groupBy("partition").count().collect()}
    assert per_partition == dict.fromkeys(range(PARTITIONS), PER_PARTITION)


def test_offset_bounds_json(spark: SparkSession, broker: BrokerProcess) -> None:
    starting = {TOPIC: {str(p): (-2 if p == 0 else 5) for p in range(PARTITIONS)}}
    ending = {TOPIC: {str(p): (-1 if p == 1 else 10 + p) for p in range(PARTITIONS)}}
    df = _reader(
        spark, broker, subscribe=TOPIC, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending)
    ).load()
    rows = df.select("partition", "offset").collect()
    expected = set()
    for p in range(PARTITIONS):
        lo = 0 if p == 0 else 5
        hi = PER_PARTITION if p == 1 else 10 + p
        expected |= {(p, o) for o in range(lo, hi)}
    assert {(r.partition, r.offset) for r in rows} == expected
    assert len(rows) == len(expected)


def test_assign_and_min_partitions(spark: SparkSession, broker: BrokerProcess) -> None:
    df = _reader(spark, broker, assign=json.dumps({TOPIC: [2, 5]}), minPartitions="5").load()
    assert df.rdd.getNumPartitions() == 6  # 40 records each: round(0.5 * 5) = 3 parts per partition
    rows = df.select("partition", "offset", "value").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [
        (p, o) for p in (2, 5) for o in range(PER_PARTITION)
    ]
    by_offset = {(r.partition, r.offset): r.value for r in rows}
    assert by_offset[(5, 0)] == _messages(5)[0].value


def test_subscribe_pattern(spark: SparkSession, broker: BrokerProcess) -> None:
    df = _reader(spark, broker, subscribePattern="other-.*").load()
    rows = df.select("topic", "partition", "offset", "key", "value").collect()
    assert sorted((r.topic, r.partition, r.offset, r.value) for r in rows) == [
        ("other-a", 0, 0, b"0"),
        ("other-a", 1, 0, b"1"),
        ("other-a", 1, 1, b"2"),
        ("other-b", 0, 0, b"0"),
    ]


def test_split_ranges_like_spark() -> None:
    assert split_ranges([("t", 0, 0, 10), ("t", 1, 5, 5)], None) == [("t", 0, 0, 10)]
    assert split_ranges([("t", 0, 0, 10), ("t", 1, 0, 30)], 4) == [
        ("t", 0, 0, 10),
        ("t", 1, 0, 10),
        ("t", 1, 10, 20),
        ("t", 1, 20, 30),
    ]
    # 1/8 * 4 = 0.5 rounds half up to 1 part; 7/8 * 4 = 3.5 rounds up to 4
    assert len(split_ranges([("t", 0, 0, 1), ("t", 1, 0, 7)], 4)) == 5


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subscribe": TOPIC, "startingOffset": "earliest"},
            "unknown option(s) startingOffset; valid options:",
        ),
        ({"subscribe": TOPIC, "assign": json.dumps({TOPIC: [0]})}, "exactly one of assign, subscribe"),
        ({}, "exactly one of assign, subscribe, subscribePattern"),
        ({"subscribe": TOPIC, "startingOffsets": "latest"}, "startingOffsets=latest is not valid"),
        ({"subscribe": TOPIC, "includeHeaders": "yes"}, "includeHeaders must be true or false"),
        ({"assign": "{not json"}, "assign is not valid JSON"),
    ],
)
def test_bad_options_fail_clearly(
    spark: SparkSession, broker: BrokerProcess, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match="valid|exactly one|must be|not valid") as info:
        _reader(spark, broker, **options).load().collect()
    assert message.lower() in str(info.value).lower()  # Spark lower-cases option names


def test_unknown_topic_and_partial_offsets_fail_clearly(spark: SparkSession, broker: BrokerProcess) -> None:
    with pytest.raises(Exception, match="not found") as info:
        _reader(spark, broker, subscribe="no-such-topic").load().collect()
    assert "no-such-topic" in str(info.value)
    with pytest.raises(Exception, match="must name every assigned/subscribed partition"):
        _reader(
            spark, broker, subscribe=TOPIC, startingOffsets=json.dumps({TOPIC: {"0": 1}})
        ).load().collect()


def test_data_loss(spark: SparkSession, broker: BrokerProcess) -> None:
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert admin.create_topics([NewTopic("trimmed", 1, 1)]) == {"trimmed": None}
        produce_confluent(broker.bootstrap, "trimmed", 0, [Message(None, b"%d" % i) for i in range(10)], None)
        assert admin.delete_records({TopicPartition("trimmed", 0): 4}) == {TopicPartition("trimmed", 0): 4}
    starting = json.dumps({"trimmed": {"0": 0}})
    with pytest.raises(Exception, match="data loss: offsets 0..3 of trimmed-0 were deleted"):
        _reader(spark, broker, subscribe="trimmed", startingOffsets=starting).load().collect()
    df = _reader(spark, broker, subscribe="trimmed", startingOffsets=starting, failOnDataLoss="false").load()
    assert [(r.offset, r.value) for r in df.orderBy("offset").collect()] == [
        (i, b"%d" % i) for i in range(4, 10)
    ]
    # earliest starts after the deleted records without complaint
    assert _reader(spark, broker, subscribe="trimmed").load().count() == 6


def test_unreachable_broker_fails_clearly(spark: SparkSession) -> None:
    reader = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", f"127.0.0.1:{free_port()}")
        .option("kafka.default.api.timeout.ms", "3000")
        .option("subscribe", TOPIC)
    )
    with pytest.raises(Exception, match="cannot connect to 127.0.0.1"):
        reader.load().collect()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_every_codec_reads_back_exactly(spark: SparkSession, broker: BrokerProcess, codec: str) -> None:
    topic = f"codec-{codec}"
    create_topics(broker.bootstrap, **{topic: 2})
    sent = {
        p: [
            Message(b"k%d" % i, b"%s-%d-%d" % (codec.encode(), p, i) * 3, (), BASE_TS + i) for i in range(300)
        ]
        for p in range(2)
    }
    for p, msgs in sent.items():
        produce_confluent(broker.bootstrap, topic, p, msgs, codec)
    rows = _reader(spark, broker, subscribe=topic).load().collect()
    got = {(r.partition, r.offset): (r.key, r.value, r.timestamp) for r in rows}
    assert got == {
        (p, i): (m.key, m.value, _ts(m.timestamp)) for p, msgs in sent.items() for i, m in enumerate(msgs)
    }


def test_timestamp_bounds(spark: SparkSession, broker: BrokerProcess) -> None:
    # partition p holds timestamps BASE_TS + p * 1000 + i for i < 40
    start = BASE_TS + 2020
    with pytest.raises(Exception, match="no record of events-0 has a timestamp at or after"):
        _reader(spark, broker, subscribe=TOPIC, startingTimestamp=str(start)).load().collect()
    df = _reader(
        spark,
        broker,
        subscribe=TOPIC,
        startingTimestamp=str(start),
        startingOffsetsByTimestampStrategy="latest",
        endingTimestamp=str(BASE_TS + 5010),
    ).load()
    got = {(r.partition, r.offset) for r in df.select("partition", "offset").collect()}
    expected = set()
    for p in range(PARTITIONS):
        lo = min(max(start - BASE_TS - p * 1000, 0), PER_PARTITION)
        hi = min(max(BASE_TS + 5010 - BASE_TS - p * 1000, 0), PER_PARTITION)
        expected |= {(p, o) for o in range(lo, max(lo, hi))}
    assert got == expected

    by_ts = {TOPIC: {str(p): BASE_TS + p * 1000 + 30 for p in range(PARTITIONS)}}
    ends = {TOPIC: {str(p): BASE_TS + p * 1000 + 35 for p in range(PARTITIONS)}}
    df = _reader(
        spark,
        broker,
        subscribe=TOPIC,
        startingOffsetsByTimestamp=json.dumps(by_ts),
        endingOffsetsByTimestamp=json.dumps(ends),
    ).load()
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(p, o) for p in range(PARTITIONS) for o in range(30, 35)]


def test_max_records_per_partition(spark: SparkSession, broker: BrokerProcess) -> None:
    df = _reader(spark, broker, assign=json.dumps({TOPIC: [1]}), maxRecordsPerPartition="15").load()
    assert df.rdd.getNumPartitions() == 3  # 40 records: 13 + 13 + 14
    assert sorted(r.offset for r in df.select("offset").collect()) == list(range(PER_PARTITION))
    # then minPartitions splits again: each piece gets round_half_up(13.3 / 40 * 8) = 3 parts
    df = _reader(
        spark, broker, assign=json.dumps({TOPIC: [1]}), maxRecordsPerPartition="15", minPartitions="8"
    ).load()
    assert df.rdd.getNumPartitions() == 9
    assert df.count() == PER_PARTITION


def test_records_deleted_inside_a_planned_range(broker: BrokerProcess) -> None:
    """The executor side: a range planned before DeleteRecords moved the log start into it."""
    create_topics(broker.bootstrap, trimmed2=1)
    produce_confluent(broker.bootstrap, "trimmed2", 0, [Message(None, b"%d" % i) for i in range(10)], None)
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert admin.delete_records({TopicPartition("trimmed2", 0): 4}) == {TopicPartition("trimmed2", 0): 4}
    part = MiniKafkaInputPartition("trimmed2", 0, 0, 8)
    options = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "trimmed2"}
    with pytest.raises(DataLossError, match="offsets 0..3 of trimmed2-0 were deleted"):
        list(read_range(parse_read_options(options, streaming=False), part))
    lenient = parse_read_options({**options, "failOnDataLoss": "false"}, streaming=False)
    batches = list(read_range(lenient, part))
    assert [v for b in batches for v in b.column("value").to_pylist()] == [b"%d" % i for i in range(4, 8)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": TOPIC, "maxOffsetsPerTrigger": "10"}, "apply to streaming queries only"),
        (
            {"subscribe": TOPIC, "startingOffsets": "earliest", "startingTimestamp": "5"},
            "contradict each other",
        ),
        ({"subscribe": TOPIC, "maxRecordsPerPartition": "0"}, "must be a positive integer"),
        ({"subscribe": TOPIC, "kafka.auto.offset.reset": "latest"}, "manages it itself"),
    ],
)
def test_more_bad_options(
    spark: SparkSession, broker: BrokerProcess, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match="only|contradict|positive|manages") as info:
        _reader(spark, broker, **options).load().collect()
    assert message.lower() in str(info.value).lower()


def test_read_and_write_over_sasl_ssl(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``kafka.``-prefixed security options reach the bundled client, as in Spark's Kafka source."""
    from tests.compat.security_broker import secure_broker

    with secure_broker(tmp_path_factory.mktemp("spark-sasl")) as sb:
        create_topics(sb.proc.bootstrap, secured=2)
        conf = {f"kafka.{k}": v for k, v in sb.confluent("scram512").items()}
        rows = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]
        out = spark.createDataFrame(rows, "key binary, value binary").write.format("minikafka")
        for k, v in conf.items():
            out = out.option(k, v)
        out.mode("append").option("topic", "secured").save()
        reader = spark.read.format("minikafka").option("subscribe", "secured")
        for k, v in conf.items():
            reader = reader.option(k, v)
        got = sorted((r.key, r.value) for r in reader.load().collect())
        assert got == sorted(rows)
