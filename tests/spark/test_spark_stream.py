"""The PySpark data source, streaming read: real local[2] Spark, real broker, real checkpoints."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from client.admin import AdminClient
from client.spark.stream import ADMISSION_CONTROL
from client.types import TopicPartition
from tests.broker_process import BrokerProcess
from tests.compat.clients import Message, produce_confluent
from tests.spark.conftest import create_topics, running_broker

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

Row = tuple[str, int, int, bytes]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory, "spark-stream") as proc:
        yield proc


def _fill(bootstrap: str, topic: str, partition: int, first: int, count: int) -> None:
    msgs = [Message(b"k", b"%s-%d-%d" % (topic.encode(), partition, i)) for i in range(first, first + count)]
    produce_confluent(bootstrap, topic, partition, msgs, "zstd" if partition % 2 else None)


def _run(spark: SparkSession, broker: BrokerProcess, checkpoint: Path, **options: str) -> list[list[Row]]:
    """One availableNow run of the query; the rows of each non-empty micro-batch, in batch order."""
    batches: list[list[Row]] = []
    lock = threading.Lock()

    def collect(df: DataFrame, _batch_id: int) -> None:
        rows = sorted((r.topic, r.partition, r.offset, r.value) for r in df.collect())
        if rows:
            with lock:
                batches.append(rows)

    reader = spark.readStream.format("minikafka").option("kafka.bootstrap.servers", broker.bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "availableNow query did not finish"
    assert query.exception() is None, query.exception()
    return batches


def _expected(topic: str, partition: int, first: int, count: int) -> list[Row]:
    return [
        (topic, partition, i, b"%s-%d-%d" % (topic.encode(), partition, i))
        for i in range(first, first + count)
    ]


def test_available_now_rate_limit_restart_and_new_partitions(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topics(broker.bootstrap, **{"stream-a": 4})
    for p in range(4):
        _fill(broker.bootstrap, "stream-a", p, 0, 50)
    options = {
        "subscribePattern": "stream-.*",
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "40",
        "kafka.group.id": "spark-stream-lag",
    }
    first = _run(spark, broker, tmp_path / "ckpt", **options)
    rows = [r for b in first for r in b]
    assert sorted(rows) == sorted(r for p in range(4) for r in _expected("stream-a", p, 0, 50))
    if ADMISSION_CONTROL:
        # 40 per micro-batch, shared by lag: 10 from each partition each time
        assert [len(b) for b in first] == [40] * 5
        assert all(sorted({r[1] for r in b}) == [0, 1, 2, 3] for b in first)
    else:
        assert len(first) == 1  # pyspark < 4.2: maxOffsetsPerTrigger is ignored

    # The group reflects what the query has processed: Spark commits a micro-batch's end offsets
    # to the source when it starts the next one, so the group trails by the last micro-batch.
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        committed = admin.list_consumer_group_offsets("spark-stream-lag")
    if ADMISSION_CONTROL:
        assert {tp: om.offset for tp, om in committed.items()} == {
            TopicPartition("stream-a", p): 40 for p in range(4)
        }

    # More records and a new topic matching the pattern, then a restart from the checkpoint.
    _fill(broker.bootstrap, "stream-a", 2, 50, 30)
    create_topics(broker.bootstrap, **{"stream-b": 2})
    _fill(broker.bootstrap, "stream-b", 0, 0, 5)
    _fill(broker.bootstrap, "stream-b", 1, 0, 3)
    second = _run(spark, broker, tmp_path / "ckpt", **options)
    rows = sorted(r for b in second for r in b)
    assert rows == sorted(
        _expected("stream-a", 2, 50, 30) + _expected("stream-b", 0, 0, 5) + _expected("stream-b", 1, 0, 3)
    )
    # Nothing new: a third run reads nothing.
    assert _run(spark, broker, tmp_path / "ckpt", **options) == []


def test_starting_latest_reads_only_new_records(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topics(broker.bootstrap, **{"late": 1})
    _fill(broker.bootstrap, "late", 0, 0, 10)
    # The first run only fixes the starting point (latest = 10) in the checkpoint.
    assert _run(spark, broker, tmp_path / "ckpt", subscribe="late") == []
    _fill(broker.bootstrap, "late", 0, 10, 7)
    batches = _run(spark, broker, tmp_path / "ckpt", subscribe="late")
    assert [r for b in batches for r in b] == _expected("late", 0, 10, 7)


def test_streaming_bad_options(spark: SparkSession, broker: BrokerProcess) -> None:
    reader = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "late")
        .option("endingOffsets", "latest")
    )
    with pytest.raises(Exception, match="apply to batch queries only"):
        query = reader.load().writeStream.format("noop").trigger(availableNow=True).start()
        try:
            query.awaitTermination(60)
        finally:
            query.stop()
