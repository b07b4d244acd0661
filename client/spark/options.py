"""Options of the minikafka Spark source and sink: Spark's Kafka option names, validated up front.

Names are case-insensitive (Spark lower-cases them anyway). Everything wrong
with the options fails at `parse_read_options` / `parse_write_options` with a
`MiniKafkaOptionError` naming the option, and unknown names get the list of
valid ones. ``kafka.<setting>`` options go to the bundled consumer or
producer, except the settings the source manages itself.

Reading (batch and streaming):

- ``kafka.bootstrap.servers`` (required);
- exactly one of ``assign`` (JSON ``{"topic":[0,1]}``), ``subscribe`` (comma
  separated names), ``subscribePattern`` (regex, whole name);
- where to start: at most one of ``startingOffsets`` (``earliest``,
  ``latest`` (streaming only), or JSON ``{"topic":{"0":23}}`` with -2 =
  earliest and -1 = latest), ``startingTimestamp`` (ms, every partition) and
  ``startingOffsetsByTimestamp`` (JSON of ms per partition);
  ``startingOffsetsByTimestampStrategy`` (``error``/``latest``) says what a
  partition with no record at or after the timestamp does;
- where to end (batch only): at most one of ``endingOffsets`` (``latest`` or
  JSON), ``endingTimestamp``, ``endingOffsetsByTimestamp`` (a partition with
  no record at or after the timestamp ends at latest);
- ``minPartitions``, ``maxRecordsPerPartition`` (split offset ranges);
- ``maxOffsetsPerTrigger`` (streaming: records per micro-batch);
- ``failOnDataLoss`` (default true), ``includeHeaders`` (default false),
  ``kafkaConsumer.pollTimeoutMs`` (default 120000);
- ``kafka.group.id`` or ``groupIdPrefix`` (streaming: commit processed
  offsets to that consumer group so its lag is visible);
- ``kafka.isolation.level``: ``read_uncommitted`` (the default, as in Spark)
  reads every record up to the high watermark, including those of open and
  aborted transactions; ``read_committed`` plans and reads only up to the
  last stable offset and leaves out records of aborted transactions (control
  records are never rows).

Writing: ``kafka.bootstrap.servers`` (required), ``topic`` (else a ``topic``
column is required), ``kafka.<producer setting>`` (``acks`` defaults to all;
no ``kafka.transactional.id``: the sink writes at-least-once, outside
transactions, as Spark's Kafka sink does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EARLIEST = -2
LATEST = -1

TopicPartitionKey = tuple[str, int]


class MiniKafkaOptionError(ValueError):
    """An unknown, missing, malformed or contradictory option."""


# Spark's spelling of every reader option, keyed by its lower-case form.
_READ = {
    s.lower(): s
    for s in (
        "assign",
        "subscribe",
        "subscribePattern",
        "startingOffsets",
        "startingTimestamp",
        "startingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "endingOffsets",
        "endingTimestamp",
        "endingOffsetsByTimestamp",
        "minPartitions",
        "maxRecordsPerPartition",
        "maxOffsetsPerTrigger",
        "failOnDataLoss",
        "includeHeaders",
        "kafkaConsumer.pollTimeoutMs",
        "groupIdPrefix",
        "kafka.bootstrap.servers",
    )
}
_BATCH_ONLY = {"endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"}
_STREAM_ONLY = {"maxoffsetspertrigger", "groupidprefix"}
_WRITE = {s.lower(): s for s in ("topic", "kafka.bootstrap.servers")}
_STRATEGIES = ("assign", "subscribe", "subscribepattern")
# Client settings the source and sink manage themselves (as Spark's Kafka source does).
_RESERVED_CONSUMER = {
    "auto.offset.reset",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
    "interceptor.classes",
}
_RESERVED_PRODUCER = {"key.serializer", "value.serializer"}
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


@dataclass(frozen=True)
class Bound:
    """One end of the offsets to read.

    ``kind``: ``earliest``, ``latest``, ``offsets`` (``value``: {(topic,
    partition): offset, -2/-1 allowed}), ``timestamp`` (``value``: ms for every
    partition) or ``timestamps`` (``value``: {(topic, partition): ms}).
    ``option`` is the option it came from, for messages.
    """

    kind: str
    value: Any = None
    option: str = ""


@dataclass(frozen=True)
class ReadOptions:
    bootstrap: str
    strategy: str  # assign / subscribe / subscribepattern
    strategy_value: Any  # [(topic, partition)] / [topic] / compiled regex
    starting: Bound
    ending: Bound
    timestamp_strategy: str  # error / latest: a start timestamp past a partition's last record
    min_partitions: int | None
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    group_id: str | None
    group_id_prefix: str | None
    consumer: dict[str, str] = field(default_factory=dict)

    @property
    def isolation_level(self) -> str:
        """``read_uncommitted`` (Spark's default) or ``read_committed`` (option kafka.isolation.level)."""
        return self.consumer.get("isolation.level", "read_uncommitted")


@dataclass(frozen=True)
class WriteOptions:
    bootstrap: str
    topic: str | None
    producer: dict[str, str] = field(default_factory=dict)


def _valid_list(table: Mapping[str, str], prefix: str) -> str:
    return ", ".join(sorted(table.values())) + f", kafka.<{prefix} setting>"


# Options Spark itself passes along with the user's (a streaming sink's checkpoint, an empty path).
_SPARK_OWN = {"path", "checkpointlocation"}


def _lower(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Options keyed by lower-cased name (without Spark's own), and each name as given."""
    opts = {str(k).lower(): str(v) for k, v in options.items() if str(k).lower() not in _SPARK_OWN}
    return opts, {str(k).lower(): str(k) for k in options}


def _split_kafka(
    opts: dict[str, str], known: Mapping[str, str], reserved: set[str], spelled: dict[str, str], what: str
) -> tuple[dict[str, str], list[str]]:
    client: dict[str, str] = {}
    unknown = []
    for key, value in opts.items():
        if key in known:
            continue
        if key.startswith("kafka."):
            setting = key[len("kafka.") :]
            if setting in reserved:
                raise MiniKafkaOptionError(
                    f"option kafka.{setting} is not supported: the minikafka {what} manages it itself"
                )
            client[setting] = value
        else:
            unknown.append(spelled.get(key, key))
    return client, unknown


def _bootstrap(opts: Mapping[str, str], valid: str) -> str:
    bootstrap = opts.get("kafka.bootstrap.servers", "").strip()
    if not bootstrap:
        raise MiniKafkaOptionError(
            "option kafka.bootstrap.servers is required (host:port of the minikafka broker); "
            f"valid options: {valid}"
        )
    return bootstrap


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise MiniKafkaOptionError(f"option {_READ.get(name, name)} must be true or false, got {raw!r}")
    return value == "true"


def _positive_int(opts: Mapping[str, str], name: str, *, zero_ok: bool = False) -> int | None:
    raw = opts.get(name)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0 or (value == 0 and not zero_ok):
        kind = "a non-negative" if zero_ok else "a positive"
        raise MiniKafkaOptionError(f"option {_READ[name]} must be {kind} integer, got {raw!r}")
    return value


def _json(opts: Mapping[str, str], name: str) -> Any:
    try:
        return json.loads(opts[name])
    except ValueError as e:
        raise MiniKafkaOptionError(f"option {_READ[name]} is not valid JSON: {opts[name]!r} ({e})") from None


def _partition_map(
    opts: Mapping[str, str], name: str, what: str, minimum: int
) -> dict[TopicPartitionKey, int]:
    """A JSON ``{"topic": {"0": n, ...}}`` option as {(topic, partition): n}, each n >= ``minimum``."""
    spec = _json(opts, name)
    if not isinstance(spec, dict) or not spec:
        raise MiniKafkaOptionError(
            f'option {_READ[name]} must be JSON like {{"topic":{{"0":23,"1":-2}}}}, got {opts[name]!r}'
        )
    out: dict[TopicPartitionKey, int] = {}
    for topic, parts in spec.items():
        if not isinstance(parts, dict):
            raise MiniKafkaOptionError(f"option {_READ[name]}: {topic!r} must map partitions to {what}s")
        for p, n in parts.items():
            try:
                pi = int(p)
            except ValueError:
                pi = -1
            if pi < 0:
                raise MiniKafkaOptionError(f"option {_READ[name]}: bad partition {p!r} of {topic!r}")
            if not isinstance(n, int) or isinstance(n, bool) or n < minimum:
                raise MiniKafkaOptionError(
                    f"option {_READ[name]}: bad {what} {n!r} for {topic}-{pi} (must be >= {minimum})"
                )
            out[(topic, pi)] = n
    return out


def _bound(opts: Mapping[str, str], end: str, streaming: bool) -> Bound:
    """startingOffsets/startingTimestamp/startingOffsetsByTimestamp (or the ending ones) as one Bound."""
    names = [f"{end}offsets", f"{end}timestamp", f"{end}offsetsbytimestamp"]
    given = [n for n in names if n in opts]
    if len(given) > 1:
        raise MiniKafkaOptionError(
            f"options {', '.join(_READ[n] for n in given)} contradict each other: give only one of them"
        )
    default = "latest" if end == "ending" or streaming else "earliest"
    if not given:
        return Bound(default, option=_READ[names[0]])
    name = given[0]
    spelled = _READ[name]
    if name == names[1]:
        try:
            ts = int(opts[name].strip())
        except ValueError:
            ts = -1
        if ts < 0:
            raise MiniKafkaOptionError(f"option {spelled} must be a timestamp in ms since the epoch")
        return Bound("timestamp", ts, spelled)
    if name == names[2]:
        return Bound("timestamps", _partition_map(opts, name, "timestamp", 0), spelled)
    raw = opts[name].strip()
    if raw.lower() in ("earliest", "latest"):
        kind = raw.lower()
        if not streaming and end == "starting" and kind == "latest":
            raise MiniKafkaOptionError(
                "startingOffsets=latest is not valid for batch queries (use earliest or JSON)"
            )
        if end == "ending" and kind == "earliest":
            raise MiniKafkaOptionError(
                "endingOffsets=earliest is not valid for batch queries (use latest or JSON)"
            )
        return Bound(kind, option=spelled)
    offsets = _partition_map(opts, name, "offset", -2)
    if not streaming and end == "starting" and LATEST in offsets.values():
        raise MiniKafkaOptionError("startingOffsets for batch queries cannot use -1 (latest)")
    if end == "ending" and EARLIEST in offsets.values():
        raise MiniKafkaOptionError("endingOffsets for batch queries cannot use -2 (earliest)")
    return Bound("offsets", offsets, spelled)


def _strategy(opts: Mapping[str, str], valid: str) -> tuple[str, Any]:
    given = [s for s in _STRATEGIES if s in opts]
    if len(given) != 1:
        what = "none" if not given else ", ".join(_READ[s] for s in given)
        raise MiniKafkaOptionError(
            f"exactly one of assign, subscribe, subscribePattern must be given (got {what}); "
            f"valid options: {valid}"
        )
    strategy = given[0]
    if strategy == "subscribe":
        topics = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
        if not topics:
            raise MiniKafkaOptionError("option subscribe names no topic")
        return strategy, topics
    if strategy == "subscribepattern":
        try:
            return strategy, re.compile(opts["subscribepattern"].strip())
        except re.error as e:
            raise MiniKafkaOptionError(f"option subscribePattern is not a valid regex: {e}") from None
    spec = _json(opts, "assign")
    if not isinstance(spec, dict) or not spec:
        raise MiniKafkaOptionError('option assign must be JSON like {"topicA":[0,1],"topicB":[2,4]}')
    tps = []
    for topic, parts in spec.items():
        if not isinstance(parts, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts
        ):
            raise MiniKafkaOptionError(f"option assign: {topic!r} must map to a list of partition numbers")
        tps.extend((topic, p) for p in parts)
    return strategy, sorted(set(tps))


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Validate the reader's options (names case-insensitive) and return them parsed."""
    opts, spelled = _lower(options)
    valid = _valid_list(_READ, "consumer")
    consumer, unknown = _split_kafka(opts, _READ, _RESERVED_CONSUMER, spelled, "source")
    if unknown:
        raise MiniKafkaOptionError(f"unknown option(s) {', '.join(sorted(unknown))}; valid options: {valid}")
    wrong_mode = sorted(spelled[k] for k in opts if k in (_BATCH_ONLY if streaming else _STREAM_ONLY))
    if wrong_mode:
        mode, other = ("streaming", "batch") if streaming else ("batch", "streaming")
        raise MiniKafkaOptionError(
            f"option(s) {', '.join(wrong_mode)} apply to {other} queries only, not to {mode} ones"
        )
    bootstrap = _bootstrap(opts, valid)
    strategy, value = _strategy(opts, valid)
    group_id = consumer.pop("group.id", None)
    if group_id is not None and "groupidprefix" in opts:
        raise MiniKafkaOptionError("options kafka.group.id and groupIdPrefix contradict each other")
    if group_id is not None and not streaming:
        raise MiniKafkaOptionError("option kafka.group.id applies to streaming queries only")
    ts_strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if ts_strategy not in ("error", "latest"):
        raise MiniKafkaOptionError(
            f"option startingOffsetsByTimestampStrategy must be error or latest, got {ts_strategy!r}"
        )
    poll_timeout = _positive_int(opts, "kafkaconsumer.polltimeoutms")
    if "isolation.level" in consumer:
        level = consumer["isolation.level"].strip().lower()
        if level not in ISOLATION_LEVELS:
            raise MiniKafkaOptionError(
                f"option kafka.isolation.level must be read_uncommitted (the default) or read_committed, "
                f"got {consumer['isolation.level']!r}"
            )
        consumer["isolation.level"] = level
    return ReadOptions(
        bootstrap=bootstrap,
        strategy=strategy,
        strategy_value=value,
        starting=_bound(opts, "starting", streaming),
        ending=Bound("latest") if streaming else _bound(opts, "ending", streaming),
        timestamp_strategy=ts_strategy,
        min_partitions=_positive_int(opts, "minpartitions"),
        max_records_per_partition=_positive_int(opts, "maxrecordsperpartition"),
        max_offsets_per_trigger=_positive_int(opts, "maxoffsetspertrigger"),
        include_headers=_bool(opts, "includeheaders", False),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        poll_timeout_ms=120_000 if poll_timeout is None else poll_timeout,
        group_id=group_id,
        group_id_prefix=opts.get("groupidprefix"),
        consumer=consumer,
    )


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    """Validate the sink's options (names case-insensitive) and return them parsed."""
    opts, spelled = _lower(options)
    valid = _valid_list(_WRITE, "producer")
    producer, unknown = _split_kafka(opts, _WRITE, _RESERVED_PRODUCER, spelled, "sink")
    if unknown:
        raise MiniKafkaOptionError(f"unknown option(s) {', '.join(sorted(unknown))}; valid options: {valid}")
    if "transactional.id" in producer:
        raise MiniKafkaOptionError(
            "option kafka.transactional.id is not supported: the sink writes at-least-once, "
            "outside transactions (as Spark's Kafka sink does)"
        )
    topic = opts.get("topic", "").strip() or None
    return WriteOptions(bootstrap=_bootstrap(opts, valid), topic=topic, producer=producer)
