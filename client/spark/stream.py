"""Streaming reads: ``spark.readStream.format("minikafka")``.

Offsets are Spark's Kafka source offsets, ``{"topic": {"0": 23, "1": 40}}``:
per partition, the next offset to read. Spark keeps them in the query's
checkpoint, so a restarted query continues exactly where it stopped.

- `initialOffset`: the startingOffsets / startingTimestamp /
  startingOffsetsByTimestamp option resolved now (default latest).
- `latestOffset(start, limit)`: every partition's end offset; partitions that
  appeared since ``start`` (new topics matching the subscription, partitions
  added) start at their earliest offset. ``ReadMaxRows`` (from
  maxOffsetsPerTrigger, pyspark >= 4.2) caps the micro-batch, shared across
  partitions by lag like Spark's Kafka source. On pyspark < 4.2, which has no
  admission control for Python sources, maxOffsetsPerTrigger is ignored with a
  warning.
- `prepareForTriggerAvailableNow`: records the end offsets at query start;
  later micro-batches never go past them.
- `partitions(start, end)`: one input partition per topic partition with
  records in between (split by minPartitions / maxRecordsPerPartition), read
  on executors by `client.spark.reader.read_range`.
- `commit(end)`: with ``kafka.group.id`` (or ``groupIdPrefix``: a group named
  ``<prefix>-<random>``), commits ``end`` to that consumer group so
  ``minikafka groups lag`` shows how far the query is behind. Spark commits a
  micro-batch's offsets to the source when it starts the next micro-batch, so
  the group trails the query by one micro-batch.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from client.spark.options import ReadOptions
from client.spark.planning import (
    Offsets,
    OffsetTable,
    open_consumer,
    rate_limit,
    resolve,
    split_ranges,
    topic_partitions,
)
from client.spark.reader import EMPTY, MiniKafkaInputPartition, read_range

log = logging.getLogger("client.spark")

try:  # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
except ImportError:  # pragma: no cover - pyspark 4.0 / 4.1
    ADMISSION_CONTROL = False

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: before 4.2 Spark runs Trigger.AvailableNow as one batch up to the latest offsets."""

    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]


# Consumer settings an admin client understands too (connection and timeouts), for the committer.
_ADMIN_SETTINGS = {
    "request.timeout.ms",
    "default.api.timeout.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
}


def to_json(offsets: Offsets) -> dict[str, dict[str, int]]:
    """{(topic, partition): offset} as Spark's Kafka source serialises offsets."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = off
    return out


def from_json(offsets: dict[str, dict[str, int]]) -> Offsets:
    return {(topic, int(p)): int(off) for topic, parts in offsets.items() for p, off in parts.items()}


class MiniKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The driver-side state of one streaming query over minikafka topics."""

    def __init__(self, ro: ReadOptions) -> None:
        self.ro = ro
        self._consumer: Any = None
        self._committer: Any = None
        self._target: Offsets | None = None
        self.group_id = ro.group_id or (
            f"{ro.group_id_prefix}-{uuid.uuid4()}" if ro.group_id_prefix is not None else None
        )
        if ro.max_offsets_per_trigger is not None and not ADMISSION_CONTROL:
            log.warning(
                "maxOffsetsPerTrigger is ignored: pyspark < 4.2 has no admission control for Python "
                "data sources (each micro-batch reads everything available)"
            )

    def __getstate__(self) -> dict[str, Any]:
        # Executors receive a pickled copy for read(); the driver's clients stay on the driver.
        state = dict(self.__dict__)
        state["_consumer"] = state["_committer"] = None
        return state

    def _table(self) -> OffsetTable:
        if self._consumer is None:
            self._consumer = open_consumer(self.ro, "minikafka-spark-stream-driver")
        return OffsetTable(self._consumer, topic_partitions(self.ro, self._consumer), self.ro.bootstrap)

    def initialOffset(self) -> dict[str, dict[str, int]]:
        table = self._table()
        return to_json(
            resolve(self.ro.starting, table, starting=True, timestamp_strategy=self.ro.timestamp_strategy)
        )

    def getDefaultReadLimit(self) -> Any:
        if self.ro.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.ro.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = dict(self._table().latest)

    def latestOffset(
        self, start: dict[str, Any] | None = None, limit: Any = None
    ) -> dict[str, dict[str, int]]:
        table = self._table()
        latest = dict(table.latest)
        if self._target is not None:
            latest = {key: min(off, self._target[key]) for key, off in latest.items() if key in self._target}
        if start is None:
            return to_json(latest)
        begin = from_json(start)
        for key in latest:
            if key not in begin:  # a new partition: from its start
                begin[key] = table.earliest[key]
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        # Never move a partition backwards (a partition whose log was cut stays where it was;
        # read_range reports the loss on the executor).
        return to_json({key: max(off, begin.get(key, off)) for key, off in latest.items()})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        # Offsets deleted since `start` are found, and reported or skipped, by read_range on the executor.
        begin, stop = from_json(start), from_json(end)
        earliest = self._table().earliest if any(key not in begin for key in stop) else {}
        ranges = [
            (topic, part, begin.get((topic, part), earliest.get((topic, part), 0)), end_off)
            for (topic, part), end_off in sorted(stop.items())
        ]
        planned = split_ranges(ranges, self.ro.min_partitions, self.ro.max_records_per_partition)
        return [MiniKafkaInputPartition(*r) for r in planned] or [EMPTY]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, MiniKafkaInputPartition)
        yield from read_range(self.ro, partition)

    def commit(self, end: dict[str, Any]) -> None:
        if self.group_id is None:
            return
        from client.admin import AdminClient
        from client.types import TopicPartition

        if self._committer is None:
            config = {k: v for k, v in self.ro.consumer.items() if k in _ADMIN_SETTINGS}
            self._committer = AdminClient(
                {
                    "client.id": "minikafka-spark-stream-committer",
                    **config,
                    "bootstrap.servers": self.ro.bootstrap,
                }
            )
        offsets = {TopicPartition(t, p): off for (t, p), off in from_json(end).items()}
        try:
            errors = self._committer.alter_consumer_group_offsets(self.group_id, offsets)
            failed = {str(tp): str(err) for tp, err in errors.items() if err is not None}
            if failed:
                log.warning("committing offsets to group %s failed for %s", self.group_id, failed)
        except Exception as exc:  # the query goes on: the group's offsets only report progress
            log.warning("committing offsets to group %s failed: %s", self.group_id, exc)

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close(autocommit=False)
        if self._committer is not None:
            self._committer.close()
        self._consumer = self._committer = None
