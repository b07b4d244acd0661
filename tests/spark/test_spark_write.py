"""The PySpark data source, writes: DataFrames to topics, read back with confluent-kafka."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.broker_process import BrokerProcess
from tests.compat.clients import Message, consume_confluent
from tests.spark.conftest import create_topics, running_broker

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

SCHEMA = "key binary, value binary, partition int, headers array<struct<key:string,value:binary>>"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(
        tmp_path_factory, "spark-write", {"MINIKAFKA_AUTO_CREATE_TOPICS_ENABLE": "false"}
    ) as proc:
        yield proc


def _rows(n: int) -> list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes]] | None]]:
    return [
        (
            None if i % 4 == 0 else b"k%d" % i,
            None if i % 9 == 5 else b"value-%d" % i,
            i % 3,
            [("n", b"%d" % i), ("x", b"")] if i % 5 == 0 else None,
        )
        for i in range(n)
    ]


def _stored(bootstrap: str, topic: str, partitions: int, per_partition: dict[int, int]) -> set[Message]:
    out = set()
    for p in range(partitions):
        for m in consume_confluent(bootstrap, topic, p, per_partition.get(p, 0)):
            out.add(Message(m.key, m.value, m.headers, None))
    return out


def test_batch_write_reads_back_with_confluent(spark: SparkSession, broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, written=3)
    rows = _rows(300)
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    (
        df.write.format("minikafka")
        .mode("append")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", "written")
        .save()
    )
    counts = {p: sum(1 for r in rows if r[2] == p) for p in range(3)}
    got = {}
    for p in range(3):
        msgs = consume_confluent(broker.bootstrap, "written", p, counts[p])
        assert len(msgs) == counts[p]
        got[p] = {(m.key, m.value, m.headers) for m in msgs}
    for p in range(3):
        assert got[p] == {(k, v, tuple(h or ())) for k, v, part, h in rows if part == p}


def test_topic_column_and_string_values(spark: SparkSession, broker: BrokerProcess) -> None:
    create_topics(broker.bootstrap, **{"by-col-a": 1, "by-col-b": 1})
    df = spark.createDataFrame(
        [("by-col-a" if i % 2 else "by-col-b", f"k{i}", f"v{i}") for i in range(40)],
        "topic string, key string, value string",
    )
    df.write.format("minikafka").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()
    a = consume_confluent(broker.bootstrap, "by-col-a", 0, 20)
    b = consume_confluent(broker.bootstrap, "by-col-b", 0, 20)
    assert sorted(m.value for m in a) == sorted(b"v%d" % i for i in range(1, 40, 2))
    assert sorted(m.value for m in b) == sorted(b"v%d" % i for i in range(0, 40, 2))


def test_stream_copy_between_topics(spark: SparkSession, broker: BrokerProcess, tmp_path: Path) -> None:
    create_topics(broker.bootstrap, source=3, copied=3)
    rows = _rows(90)
    spark.createDataFrame(rows, SCHEMA).write.format("minikafka").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", "source").save()
    stream = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "source")
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .select("key", "value", "partition", "headers")
    )
    query = (
        stream.writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", "copied")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    per_partition = {p: sum(1 for r in rows if r[2] == p) for p in range(3)}
    assert _stored(broker.bootstrap, "copied", 3, per_partition) == _stored(
        broker.bootstrap, "source", 3, per_partition
    )


def test_write_errors_are_clear(spark: SparkSession, broker: BrokerProcess) -> None:
    writer = spark.createDataFrame([(b"k",)], "key binary").write.format("minikafka").mode("append")
    with pytest.raises(Exception, match="needs a value column"):
        writer.option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "written").save()
    df = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="no topic to write to"):
        df.write.format("minikafka").mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()
    with pytest.raises(Exception, match="cannot write to topic 'no-such-topic'"):
        df.write.format("minikafka").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap
        ).option("topic", "no-such-topic").save()
    with pytest.raises(Exception, match="unknown option"):
        df.write.format("minikafka").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap
        ).option("topic", "written").option("subscribe", "x").save()
