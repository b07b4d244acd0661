"""A PySpark data source for minikafka (Spark's Python Data Source API, pyspark 4.x): batch read.

Usage::

    from client.spark import MiniKafkaDataSource

    spark.dataSource.register(MiniKafkaDataSource)
    df = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "events")
        .load()
    )

The schema and option names are those of Spark's built-in Kafka source. Planning
(metadata and ListOffsets) happens on the driver; each input partition is one
offset range of one topic partition, fetched inside its executor task directly
from the broker with the bundled consumer and yielded as Arrow record batches.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["MiniKafkaDataSource", "MiniKafkaInputPartition", "MiniKafkaReader", "kafka_schema"]

EARLIEST = -2
LATEST = -1

# Options this reader understands (lower-cased); kafka.* options go to the consumer.
_STRATEGIES = ("assign", "subscribe", "subscribepattern")
_OPTIONS = {
    "assign": "JSON {topic: [partitions]}",
    "subscribe": "comma-separated topic names",
    "subscribepattern": "Java/Python regex of topic names",
    "startingoffsets": "earliest (default) or JSON {topic: {partition: offset}}, -2 = earliest",
    "endingoffsets": "latest (default) or JSON {topic: {partition: offset}}, -1 = latest",
    "minpartitions": "minimum number of Spark partitions (large offset ranges are split)",
    "includeheaders": "true/false (default false)",
    "failondataloss": "true (default)/false",
    "kafkaconsumer.polltimeoutms": "ms an executor waits for records before failing (default 120000)",
    "kafka.bootstrap.servers": "host:port[,host:port...] (required)",
}
# Spark's spelling of each option, for messages.
_SPELLING = {
    "assign": "assign",
    "subscribe": "subscribe",
    "subscribepattern": "subscribePattern",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "minpartitions": "minPartitions",
    "includeheaders": "includeHeaders",
    "failondataloss": "failOnDataLoss",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    "kafka.bootstrap.servers": "kafka.bootstrap.servers",
}
# Spark-Kafka options not supported (yet) by this reader: named in the error rather than "unknown".
_UNSUPPORTED = {
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "maxrecordsperpartition",
    "maxoffsetspertrigger",
    "groupidprefix",
}
# Consumer settings the reader owns: a kafka.* option may not override them (as Spark's Kafka source).
_RESERVED_KAFKA = {
    "group.id",
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
    "interceptor.classes",
}


class MiniKafkaOptionError(ValueError):
    """An unknown, missing, malformed or contradictory option."""


def kafka_schema(include_headers: bool = False) -> StructType:
    """The schema of Spark's Kafka source."""
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        header = StructType(
            [StructField("key", StringType(), True), StructField("value", BinaryType(), True)]
        )
        fields.append(StructField("headers", ArrayType(header, True), True))
    return StructType(fields)


def _valid_list() -> str:
    return ", ".join(sorted(_SPELLING.values())) + ", kafka.<consumer setting>"


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise MiniKafkaOptionError(f"option {_SPELLING[name]} must be true or false, got {raw!r}")
    return value == "true"


def _json(opts: Mapping[str, str], name: str) -> Any:
    try:
        return json.loads(opts[name])
    except ValueError as e:
        raise MiniKafkaOptionError(
            f"option {_SPELLING[name]} is not valid JSON: {opts[name]!r} ({e})"
        ) from None


def _offsets_spec(opts: Mapping[str, str], name: str, default: str) -> str | dict[tuple[str, int], int]:
    """'earliest', 'latest' or {(topic, partition): offset} for startingOffsets/endingOffsets."""
    raw = str(opts.get(name, default)).strip()
    if raw.lower() in ("earliest", "latest"):
        return raw.lower()
    spec = _json(opts, name) if name in opts else None
    if not isinstance(spec, dict):
        raise MiniKafkaOptionError(
            f"option {_SPELLING[name]} must be earliest, latest or JSON like "
            f'{{"topic":{{"0":23,"1":-2}}}}, got {raw!r}'
        )
    out: dict[tuple[str, int], int] = {}
    for topic, parts in spec.items():
        if not isinstance(parts, dict):
            raise MiniKafkaOptionError(f"option {_SPELLING[name]}: {topic!r} must map partitions to offsets")
        for p, off in parts.items():
            try:
                pi = int(p)
            except ValueError:
                raise MiniKafkaOptionError(
                    f"option {_SPELLING[name]}: bad partition {p!r} of {topic!r}"
                ) from None
            if not isinstance(off, int) or isinstance(off, bool) or off < -2:
                raise MiniKafkaOptionError(
                    f"option {_SPELLING[name]}: bad offset {off!r} for {topic}-{pi} (use >= 0, -2 or -1)"
                )
            out[(topic, pi)] = off
    return out


@dataclass(frozen=True)
class ReadOptions:
    bootstrap: str
    strategy: str  # assign / subscribe / subscribepattern
    strategy_value: Any
    starting: str | dict[tuple[str, int], int]
    ending: str | dict[tuple[str, int], int]
    min_partitions: int | None
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    consumer: dict[str, str]


def parse_options(options: Mapping[str, str]) -> ReadOptions:
    """Validate the reader's options (names case-insensitive) and return them parsed."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if k.lower() != "path" or v}
    spelled = {str(k).lower(): str(k) for k in options}
    unknown = []
    unsupported = []
    consumer: dict[str, str] = {}
    for key, value in opts.items():
        if key in _OPTIONS:
            continue
        if key.startswith("kafka."):
            setting = key[len("kafka.") :]
            if setting in _RESERVED_KAFKA:
                raise MiniKafkaOptionError(
                    f"option kafka.{setting} is not supported: the minikafka source manages it itself"
                )
            consumer[setting] = value
        elif key in _UNSUPPORTED:
            unsupported.append(spelled.get(key, key))
        else:
            unknown.append(spelled.get(key, key))
    if unsupported:
        raise MiniKafkaOptionError(
            f"option(s) {', '.join(sorted(unsupported))} not supported by the minikafka batch reader yet; "
            f"valid options: {_valid_list()}"
        )
    if unknown:
        raise MiniKafkaOptionError(
            f"unknown option(s) {', '.join(sorted(unknown))}; valid options: {_valid_list()}"
        )

    bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise MiniKafkaOptionError(
            "option kafka.bootstrap.servers is required (host:port of the minikafka broker); "
            f"valid options: {_valid_list()}"
        )
    given = [s for s in _STRATEGIES if s in opts]
    if len(given) != 1:
        what = "none" if not given else ", ".join(_SPELLING[s] for s in given)
        raise MiniKafkaOptionError(
            f"exactly one of assign, subscribe, subscribePattern must be given (got {what}); "
            f"valid options: {_valid_list()}"
        )
    strategy = given[0]
    if strategy == "subscribe":
        topics = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
        if not topics:
            raise MiniKafkaOptionError("option subscribe names no topic")
        value: Any = topics
    elif strategy == "subscribepattern":
        try:
            value = re.compile(opts["subscribepattern"].strip())
        except re.error as e:
            raise MiniKafkaOptionError(f"option subscribePattern is not a valid regex: {e}") from None
    else:
        spec = _json(opts, "assign")
        if not isinstance(spec, dict) or not spec:
            raise MiniKafkaOptionError('option assign must be JSON like {"topicA":[0,1],"topicB":[2,4]}')
        tps = []
        for topic, parts in spec.items():
            if not isinstance(parts, list) or not all(isinstance(p, int) and p >= 0 for p in parts):
                raise MiniKafkaOptionError(
                    f"option assign: {topic!r} must map to a list of partition numbers"
                )
            tps.extend((topic, p) for p in parts)
        value = sorted(set(tps))

    starting = _offsets_spec(opts, "startingoffsets", "earliest")
    ending = _offsets_spec(opts, "endingoffsets", "latest")
    if starting == "latest":
        raise MiniKafkaOptionError(
            "startingOffsets=latest is not valid for batch queries (use earliest or JSON)"
        )
    if ending == "earliest":
        raise MiniKafkaOptionError(
            "endingOffsets=earliest is not valid for batch queries (use latest or JSON)"
        )
    if isinstance(starting, dict) and any(o == LATEST for o in starting.values()):
        raise MiniKafkaOptionError("startingOffsets for batch queries cannot use -1 (latest)")
    if isinstance(ending, dict) and any(o == EARLIEST for o in ending.values()):
        raise MiniKafkaOptionError("endingOffsets for batch queries cannot use -2 (earliest)")

    min_partitions = None
    if "minpartitions" in opts:
        try:
            min_partitions = int(opts["minpartitions"])
        except ValueError:
            min_partitions = 0
        if min_partitions <= 0:
            raise MiniKafkaOptionError(
                f"option minPartitions must be a positive integer, got {opts['minpartitions']!r}"
            )
    try:
        poll_timeout_ms = int(opts.get("kafkaconsumer.polltimeoutms", "120000"))
    except ValueError:
        raise MiniKafkaOptionError("option kafkaConsumer.pollTimeoutMs must be an integer") from None
    return ReadOptions(
        bootstrap=bootstrap,
        strategy=strategy,
        strategy_value=value,
        starting=starting,
        ending=ending,
        min_partitions=min_partitions,
        include_headers=_bool(opts, "includeheaders", False),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        poll_timeout_ms=poll_timeout_ms,
        consumer=consumer,
    )


def _consumer(ro: ReadOptions, client_id: str) -> Any:
    from client.consumer import Consumer

    config: dict[str, Any] = {
        "client.id": client_id,
        **ro.consumer,
        "bootstrap.servers": ro.bootstrap,
        "enable.auto.commit": False,
        "auto.offset.reset": "none",
    }
    return Consumer(config)


@dataclass(frozen=True)
class MiniKafkaInputPartition(InputPartition):
    """One offset range [start, end) of one topic partition; start -2 means 'earliest at read time'."""

    topic: str
    partition: int
    start: int
    end: int


def split_ranges(
    ranges: list[tuple[str, int, int, int]], min_partitions: int | None
) -> list[tuple[str, int, int, int]]:
    """Spark's rule: drop empty ranges; below minPartitions, split each range into
    max(round_half_up(size / total * minPartitions), 1) near-equal parts."""
    ranges = [r for r in ranges if r[3] > r[2]]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(end - start for _, _, start, end in ranges)
    out = []
    for topic, part, start, end in ranges:
        size = end - start
        parts = max(int(size * min_partitions / total + 0.5), 1)
        for i in range(parts):
            lo = start + size * i // parts
            hi = start + size * (i + 1) // parts
            if hi > lo:
                out.append((topic, part, lo, hi))
    return out


class MiniKafkaReader(DataSourceReader):
    def __init__(self, ro: ReadOptions, schema: StructType) -> None:
        self.ro = ro
        self.schema = schema

    def _topic_partitions(self, consumer: Any) -> list[tuple[str, int]]:
        ro = self.ro
        if ro.strategy == "assign":
            return list(ro.strategy_value)
        topics = consumer.topics()
        if ro.strategy == "subscribe":
            missing = [t for t in ro.strategy_value if t not in topics]
            if missing:
                raise MiniKafkaOptionError(
                    f"subscribed topic(s) not found on {ro.bootstrap}: {', '.join(missing)}"
                )
            names = ro.strategy_value
        else:
            names = [t for t in topics if ro.strategy_value.fullmatch(t)]
        return sorted((t, p) for t in names for p in range(topics[t]))

    def partitions(self) -> list[InputPartition]:
        from client.types import TopicPartition

        ro = self.ro
        consumer = _consumer(ro, "minikafka-spark-driver")
        try:
            tps = self._topic_partitions(consumer)
            if not tps:
                return [MiniKafkaInputPartition("", -1, 0, 0)]
            keys = [TopicPartition(t, p) for t, p in tps]
            earliest = consumer.beginning_offsets(keys)
            latest = consumer.end_offsets(keys)
        finally:
            consumer.close(autocommit=False)
        for tp in keys:
            if latest.get(tp, -1) < 0:
                raise MiniKafkaOptionError(f"partition {tp} not found on {ro.bootstrap}")

        def resolve(spec: str | dict[tuple[str, int], int], which: str) -> dict[tuple[str, int], int]:
            if isinstance(spec, str):
                table = earliest if spec == "earliest" else latest
                return {(tp.topic, tp.partition): table[tp] for tp in keys}
            if set(spec) != set(tps):
                name = "startingOffsets" if which == "start" else "endingOffsets"
                listed = ", ".join(f"{t}-{p}" for t, p in tps)
                raise MiniKafkaOptionError(
                    f"{name} with specific offsets must name every assigned/subscribed partition "
                    f"(use -2 for earliest, -1 for latest); partitions: {listed}"
                )
            out = {}
            for tp in keys:
                off = spec[(tp.topic, tp.partition)]
                out[(tp.topic, tp.partition)] = (
                    earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off
                )
            return out

        starts = resolve(ro.starting, "start")
        ends = resolve(ro.ending, "end")
        ranges = []
        for tp in keys:
            key = (tp.topic, tp.partition)
            start, end = starts[key], ends[key]
            if end > latest[tp]:
                raise MiniKafkaOptionError(
                    f"endingOffsets {end} for {tp} is beyond its latest offset {latest[tp]}"
                )
            if start < earliest[tp]:
                if ro.fail_on_data_loss:
                    raise RuntimeError(
                        f"data loss: startingOffsets {start} for {tp} is before its earliest available "
                        f"offset {earliest[tp]} (records were deleted); set failOnDataLoss=false to skip them"
                    )
                start = min(earliest[tp], end)
            if start > end:
                raise MiniKafkaOptionError(f"starting offset {start} is after ending offset {end} for {tp}")
            ranges.append((tp.topic, tp.partition, start, end))
        planned = split_ranges(ranges, ro.min_partitions)
        if not planned:
            return [MiniKafkaInputPartition("", -1, 0, 0)]
        return [MiniKafkaInputPartition(*r) for r in planned]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, MiniKafkaInputPartition)
        if partition.end <= partition.start:
            return
        yield from read_range(self.ro, partition, self.schema)


_BATCH_ROWS = 65536


def read_range(ro: ReadOptions, part: MiniKafkaInputPartition, schema: StructType) -> Iterator[Any]:
    """Fetch [start, end) of one partition from the broker and yield pyarrow RecordBatches."""
    from client.types import TopicPartition

    tp = TopicPartition(part.topic, part.partition)
    consumer = _consumer(ro, f"minikafka-spark-{part.topic}-{part.partition}")
    try:
        start = part.start
        earliest = consumer.beginning_offsets([tp])[tp]
        if start < earliest:
            if ro.fail_on_data_loss:
                raise RuntimeError(
                    f"data loss: offsets {start}..{min(earliest, part.end) - 1} of {tp} were deleted "
                    f"before they could be read; set failOnDataLoss=false to skip them"
                )
            start = earliest
        if start >= part.end:
            return
        consumer.assign([tp])
        consumer.seek(tp, start)
        pending: list[Any] = []
        deadline = time.monotonic() + ro.poll_timeout_ms / 1000
        while True:
            records = consumer.poll(timeout=0.5, max_records=_BATCH_ROWS)
            if records:
                deadline = time.monotonic() + ro.poll_timeout_ms / 1000
                for r in records:
                    if r.offset >= part.end:
                        break
                    if r.offset >= start:
                        pending.append(r)
                if len(pending) >= _BATCH_ROWS:
                    yield _to_arrow(pending, ro.include_headers)
                    pending = []
            if consumer.position(tp) >= part.end or (records and records[-1].offset >= part.end - 1):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no records of {tp} at offset {consumer.position(tp)} (reading up to {part.end}) "
                    f"within kafkaConsumer.pollTimeoutMs={ro.poll_timeout_ms}"
                )
        if pending:
            yield _to_arrow(pending, ro.include_headers)
    finally:
        consumer.close(autocommit=False)


def _to_arrow(records: list[Any], include_headers: bool) -> Any:
    import pyarrow as pa

    n = len(records)
    topic, partition = records[0].topic, records[0].partition
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp for r in records], pa.int64())
        .cast(pa.timestamp("ms"))
        .cast(pa.timestamp("us", tz="UTC")),
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if include_headers:
        header = pa.struct([("key", pa.string()), ("value", pa.binary())])
        columns.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in records],
                pa.list_(header),
            )
        )
        names.append("headers")
    return pa.RecordBatch.from_arrays(columns, names=names)


class MiniKafkaDataSource(DataSource):
    """``spark.read.format("minikafka")``: Spark's Kafka source schema and options over minikafka."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.read_options = parse_options(options)

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def schema(self) -> StructType:
        return kafka_schema(self.read_options.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return MiniKafkaReader(self.read_options, schema)
