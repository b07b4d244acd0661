"""Writes: ``df.write.format("minikafka")`` and ``df.writeStream.format("minikafka")``.

The DataFrame's columns are those of Spark's Kafka sink:

- ``value`` (binary or string, required; null writes a null value);
- ``key`` (binary or string, optional);
- ``topic`` (string; required unless the ``topic`` option is set, which wins);
- ``partition`` (int, optional: else the key's murmur2 hash, or sticky for null keys);
- ``headers`` (array<struct<key:string,value:binary>>, optional).

Other columns are ignored. The schema is checked on the driver before any
task runs. Each task sends its rows through the bundled `Producer` (acks=all
and idempotence by default; ``kafka.<setting>`` options override), flushes,
and fails if any record was not acknowledged, so Spark's task retry gives
at-least-once delivery.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from client.spark.options import MiniKafkaOptionError, WriteOptions

_TEXT = (BinaryType, StringType)


@dataclass
class WriteResult(WriterCommitMessage):
    """What one write task sent."""

    records: int


def _is_headers(dtype: Any) -> bool:
    if not isinstance(dtype, ArrayType) or not isinstance(dtype.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in dtype.elementType.fields}
    return (
        set(fields) == {"key", "value"}
        and isinstance(fields["key"], StringType)
        and isinstance(fields["value"], _TEXT)
    )


def check_schema(schema: StructType, wo: WriteOptions) -> None:
    """Fail with a clear message when the DataFrame cannot be written (Spark's Kafka sink rules)."""
    columns = {f.name: f.dataType for f in schema.fields}
    if "value" not in columns:
        raise MiniKafkaOptionError(
            f"the DataFrame needs a value column (binary or string) to write to minikafka; it has: "
            f"{', '.join(columns) or 'no columns'}"
        )
    problems = []
    if not isinstance(columns["value"], _TEXT):
        problems.append(f"value must be binary or string, not {columns['value'].simpleString()}")
    if "key" in columns and not isinstance(columns["key"], _TEXT):
        problems.append(f"key must be binary or string, not {columns['key'].simpleString()}")
    if "partition" in columns and not isinstance(columns["partition"], IntegerType):
        problems.append(f"partition must be int, not {columns['partition'].simpleString()}")
    if "headers" in columns and not _is_headers(columns["headers"]):
        problems.append(
            f"headers must be array<struct<key:string,value:binary>>, not {columns['headers'].simpleString()}"
        )
    if wo.topic is None:
        if "topic" not in columns:
            raise MiniKafkaOptionError(
                "no topic to write to: set the topic option or give the DataFrame a topic column"
            )
        if not isinstance(columns["topic"], StringType):
            problems.append(f"topic must be string, not {columns['topic'].simpleString()}")
    if problems:
        raise MiniKafkaOptionError("cannot write this DataFrame to minikafka: " + "; ".join(problems))


def _bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def send_all(wo: WriteOptions, rows: Iterable[dict[str, Any]]) -> WriteResult:
    """Send ``rows`` (dicts keyed by column) with one producer; raise unless every record was acked."""
    from client.errors import KafkaError
    from client.producer import Producer

    producer = Producer(
        {
            "client.id": "minikafka-spark-writer",
            "acks": "all",
            "linger.ms": 5,
            **wo.producer,
            "bootstrap.servers": wo.bootstrap,
        }
    )
    failures: list[BaseException] = []

    def delivered(err: BaseException | None, _meta: Any) -> None:
        if err is not None:
            failures.append(err)

    sent = 0
    known: set[str] = set()
    try:
        for row in rows:
            topic = wo.topic or row.get("topic")
            if not topic:
                raise MiniKafkaOptionError(f"row {sent} has a null topic and no topic option is set")
            if topic not in known:
                try:
                    producer.partitions_for(topic, fail_unknown=True)
                except KafkaError as exc:
                    raise RuntimeError(
                        f"cannot write to topic {topic!r} on {wo.bootstrap}: {exc} (create the topic "
                        "first, or enable auto.create.topics.enable on the broker)"
                    ) from None
                known.add(topic)
            headers = row.get("headers")
            try:
                producer.send(
                    topic,
                    value=_bytes(row["value"]),
                    key=_bytes(row.get("key")),
                    partition=row.get("partition"),
                    headers=[(h["key"], _bytes(h["value"])) for h in headers] if headers else None,
                    on_delivery=delivered,
                )
            except KafkaError as exc:
                raise RuntimeError(f"cannot write to topic {topic!r} on {wo.bootstrap}: {exc}") from None
            sent += 1
            if failures:
                break
        producer.flush()
    finally:
        producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} record(s) were not written to minikafka: {failures[0]}")
    return WriteResult(sent)


def _arrow_rows(batches: Iterator[Any]) -> Iterator[dict[str, Any]]:
    for batch in batches:
        yield from batch.to_pylist()


class MiniKafkaWriter(DataSourceArrowWriter):
    """Batch writes: one producer per task over the task's Arrow batches."""

    def __init__(self, wo: WriteOptions) -> None:
        self.wo = wo

    def write(self, iterator: Iterator[Any]) -> WriteResult:
        return send_all(self.wo, _arrow_rows(iterator))


class MiniKafkaStreamWriter(DataSourceStreamWriter):
    """Streaming writes: every micro-batch's rows, at least once."""

    def __init__(self, wo: WriteOptions) -> None:
        self.wo = wo

    def write(self, iterator: Iterator[Any]) -> WriteResult:
        return send_all(self.wo, (row.asDict(recursive=True) for row in iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to do: every record was acknowledged before its task ended."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: Kafka has no way to take records back (at-least-once)."""
