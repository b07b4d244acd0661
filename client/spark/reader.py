"""Batch reads, and the executor-side range reader the streaming reader shares.

A batch query is planned on the driver (`MiniKafkaBatchReader.partitions`):
one `MiniKafkaInputPartition` per offset range, split like Spark's Kafka
source. Each executor task then runs `read_range`: a bundled consumer
assigned to that one partition fetches from the broker directly (prefetching
the next record set while this one is converted), and every fetched record
set becomes one Arrow record batch (`client.spark.arrow.to_arrow`), so rows
never exist as Python objects. Compressed batches are decompressed by the
client's decoder and control batches skipped; with
kafka.isolation.level=read_committed the consumer also drops the records of
aborted transactions (the planned end is then the last stable offset), so a
range may yield fewer rows than its offsets span.

Offsets deleted while the query runs (retention, DeleteRecords) fail the
task with `DataLossError` when failOnDataLoss=true and are skipped
otherwise; gaps left by compaction are normal and never data loss.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from client.errors import NoOffsetForPartitionError
from client.spark.arrow import to_arrow
from client.spark.options import ReadOptions
from client.spark.planning import (
    OffsetTable,
    batch_ranges,
    check_start,
    open_consumer,
    split_ranges,
    topic_partitions,
)
from client.types import TopicPartition

_POLL_SECONDS = 0.5


@dataclass(frozen=True)
class MiniKafkaInputPartition(InputPartition):
    """Offsets [start, end) of one topic partition (topic "" and partition -1: nothing to read)."""

    topic: str
    partition: int
    start: int
    end: int


EMPTY = MiniKafkaInputPartition("", -1, 0, 0)


def read_range(ro: ReadOptions, part: MiniKafkaInputPartition) -> Iterator[Any]:
    """Fetch offsets [start, end) of one partition from the broker; yield pyarrow RecordBatches."""
    if part.end <= part.start:
        return
    tp = TopicPartition(part.topic, part.partition)
    key = (part.topic, part.partition)
    consumer = open_consumer(ro, f"minikafka-spark-{part.topic}-{part.partition}")
    try:
        pos = part.start
        consumer.assign([tp])
        consumer.seek(tp, pos)
        deadline = time.monotonic() + ro.poll_timeout_ms / 1000
        while pos < part.end:
            try:
                fetched = consumer.poll_columns(_POLL_SECONDS)
            except NoOffsetForPartitionError:
                earliest = consumer.beginning_offsets([tp])[tp]
                if pos >= earliest:
                    raise RuntimeError(
                        f"offset {pos} of {tp} is past its end offset {consumer.end_offsets([tp])[tp]}: "
                        "the partition lost records it had (was the topic deleted and re-created?)"
                    ) from None
                pos = check_start(key, pos, earliest, ro.fail_on_data_loss)
                consumer.seek(tp, pos)
                continue
            for _, cols in fetched:
                keep = cols.index_of(part.end)
                if keep:
                    yield to_arrow(cols.select(0, keep), part.topic, part.partition, ro.include_headers)
            moved = consumer.position(tp)
            if fetched or moved > pos:  # progress, even when every record was aborted or a marker
                deadline = time.monotonic() + ro.poll_timeout_ms / 1000
            pos = moved
            if pos < part.end and time.monotonic() > deadline:
                raise TimeoutError(
                    f"no records of {tp} at offset {pos} (reading up to {part.end}) "
                    f"within kafkaConsumer.pollTimeoutMs={ro.poll_timeout_ms}"
                )
    finally:
        consumer.close(autocommit=False)


class MiniKafkaBatchReader(DataSourceReader):
    """``spark.read.format("minikafka")``: plans offset ranges on the driver, reads them in tasks."""

    def __init__(self, ro: ReadOptions) -> None:
        self.ro = ro

    def partitions(self) -> list[InputPartition]:
        ro = self.ro
        consumer = open_consumer(ro, "minikafka-spark-driver")
        try:
            table = OffsetTable(consumer, topic_partitions(ro, consumer), ro.bootstrap)
            ranges = batch_ranges(ro, table)
        finally:
            consumer.close(autocommit=False)
        planned = split_ranges(ranges, ro.min_partitions, ro.max_records_per_partition)
        return [MiniKafkaInputPartition(*r) for r in planned] or [EMPTY]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, MiniKafkaInputPartition)
        yield from read_range(self.ro, partition)
