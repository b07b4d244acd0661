"""Per-log configuration with Kafka's topic-level names and defaults.

`LogConfig` attributes are the topic-level config names with '.' -> '_' (the
exceptions: ``flush.messages`` / ``flush.ms`` are `flush_interval_messages` /
`flush_interval_ms`, after their broker-level names). Broker-level defaults
(``log.segment.bytes`` ...) map onto the same fields via `from_broker_configs`;
per-topic overrides (``segment.bytes`` ...) via `from_topic_configs`.

Kafka topic configs that minikafka accepts but does not act on (e.g.
``compression.type``, ``preallocate``) are validated loosely and kept in
`LogConfig.extra`, so tools that set them on CreateTopics keep working; an
unknown name is a `ValueError`.

Tiered storage (KIP-405) has typed fields: ``remote.storage.enable``,
``local.retention.ms`` / ``local.retention.bytes`` (-2: the same as
``retention.*``, see `effective_local_retention_ms` / `_bytes`),
``remote.log.copy.disable`` and ``remote.log.delete.on.disable``. Whether a
partition is tiered at all is `LogConfig.remote_log_enabled`; Kafka's rules on
how these keys combine are in storage/remote_config.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

INT64_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
USE_RETENTION = -2  # local.retention.ms/bytes: the same as retention.ms/bytes

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
# Topics that are never tiered whatever their configs say (Kafka's UnifiedLog.isRemoteLogEnabled:
# the internal topics of Topic.isInternal, the remote log metadata topic, KRaft's metadata log).
NEVER_TIERED = frozenset(
    {
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
        REMOTE_LOG_METADATA_TOPIC,
        "__cluster_metadata",
    }
)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one partition log (defaults are Kafka's)."""

    segment_bytes: int = 1 << 30  # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1048588  # max.message.bytes
    message_timestamp_type: str = CREATE_TIME  # message.timestamp.type
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms (-1: unlimited)
    retention_bytes: int = -1  # retention.bytes (-1: unlimited)
    cleanup_policy: str = CLEANUP_DELETE  # cleanup.policy: "delete", "compact" or "compact,delete"
    flush_interval_messages: int = INT64_MAX  # flush.messages
    flush_interval_ms: int = INT64_MAX  # flush.ms
    delete_retention_ms: int = 24 * 3600 * 1000  # delete.retention.ms: how long tombstones survive cleaning
    file_delete_delay_ms: int = 60_000  # file.delete.delay.ms: `.deleted` files are removed this much later
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms: younger segments are not cleaned
    min_insync_replicas: int = 1  # min.insync.replicas: acks=all needs this many in-sync replicas
    remote_storage_enable: bool = False  # remote.storage.enable: tier this topic (no broker default)
    local_retention_ms: int = USE_RETENTION  # local.retention.ms: age kept on local disk when tiered
    local_retention_bytes: int = USE_RETENTION  # local.retention.bytes: size kept on local disk when tiered
    remote_log_copy_disable: bool = False  # remote.log.copy.disable: tiered data read-only, no uploads
    remote_log_delete_on_disable: bool = False  # remote.log.delete.on.disable: needed to turn tiering off
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def compact(self) -> bool:
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        """Time/size retention applies (``cleanup.policy`` includes ``delete``)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @property
    def effective_local_retention_ms(self) -> int:
        """``local.retention.ms`` with -2 resolved to ``retention.ms`` (Kafka's localRetentionMs();
        -1: unlimited)."""
        return self.retention_ms if self.local_retention_ms == USE_RETENTION else self.local_retention_ms

    @property
    def effective_local_retention_bytes(self) -> int:
        """``local.retention.bytes`` with -2 resolved to ``retention.bytes`` (Kafka's
        localRetentionBytes(); -1: unlimited)."""
        if self.local_retention_bytes == USE_RETENTION:
            return self.retention_bytes
        return self.local_retention_bytes

    def remote_log_enabled(self, system_enabled: bool, topic: str) -> bool:
        """Whether ``topic``'s partitions are tiered (Kafka's UnifiedLog.isRemoteLogEnabled).

        True only if the broker's ``remote.log.storage.system.enable``
        (``system_enabled``) and this config's ``remote.storage.enable`` are
        both on, the topic is not compacted (``cleanup.policy`` without
        ``compact``) and it is none of `NEVER_TIERED` (``__consumer_offsets``,
        ``__transaction_state``, ``__remote_log_metadata`` ...). Validation
        (storage/remote_config.py) refuses to set up the other combinations, but
        configs written before it, or a broker whose switch is off, still meet
        them: this is the one test of whether to tier.
        """
        return (
            system_enabled and self.remote_storage_enable and not self.compact and topic not in NEVER_TIERED
        )

    @classmethod
    def from_topic_configs(
        cls, configs: Mapping[str, str | None], defaults: LogConfig | None = None
    ) -> LogConfig:
        """``defaults`` overridden by topic-level configs (``{"segment.bytes": "1048576"}``).

        A None value keeps the default. Raises `ValueError` naming the key for an
        unknown name or an invalid value.
        """
        return _apply(defaults or cls(), configs, TOPIC_CONFIGS)

    @classmethod
    def from_broker_configs(
        cls, configs: Mapping[str, str | None], defaults: LogConfig | None = None
    ) -> LogConfig:
        """Broker-level defaults (``log.segment.bytes`` ...); names this class does not know are ignored."""
        renamed: dict[str, str | None] = {}
        # BROKER_CONFIG_NAMES lists coarse units first, so log.retention.ms beats .hours as in Kafka.
        for key, (topic_key, scale) in BROKER_CONFIG_NAMES.items():
            value = configs.get(key)
            if value is None:
                continue
            if scale != 1:
                n = _parse_int(key, value)
                value = str(n * scale if n >= 0 else -1)
            renamed[topic_key] = value
        return _apply(defaults or cls(), renamed, TOPIC_CONFIGS)

    def to_topic_configs(self) -> dict[str, str]:
        """Every topic-level name with its value as a string (for DescribeConfigs; booleans as
        ``true`` / ``false``)."""
        out = {name: _text(getattr(self, spec.attr)) for name, spec in TOPIC_CONFIGS.items() if spec.attr}
        out.update(self.extra)
        return out


@dataclass(frozen=True, slots=True)
class _Spec:
    attr: str | None  # LogConfig field, or None for accepted-but-unmodelled configs (kept in `extra`)
    parse: Callable[[str, str], object]


def _parse_int(key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"invalid value {value!r} for config {key!r}: not an integer") from None


def _int_at_least(minimum: int, maximum: int = INT64_MAX) -> Callable[[str, str], object]:
    def parse(key: str, value: str) -> int:
        n = _parse_int(key, value)
        if not minimum <= n <= maximum:
            raise ValueError(f"invalid value {value!r} for config {key!r}: must be in [{minimum}, {maximum}]")
        return n

    return parse


def _double(key: str, value: str) -> float:
    try:
        return float(value.strip())
    except ValueError:
        raise ValueError(f"invalid value {value!r} for config {key!r}: not a number") from None


def _ratio(key: str, value: str) -> float:
    n = _double(key, value)
    if not 0.0 <= n <= 1.0:
        raise ValueError(f"invalid value {value!r} for config {key!r}: must be in [0, 1]")
    return n


def _boolean(key: str, value: str) -> str:
    if value.strip().lower() not in ("true", "false"):
        raise ValueError(f"invalid value {value!r} for config {key!r}: must be true or false")
    return value.strip().lower()


def _bool(key: str, value: str) -> bool:
    return _boolean(key, value) == "true"


def _text(value: object) -> str:
    """A field's value as Kafka prints it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _one_of(*choices: str) -> Callable[[str, str], object]:
    def parse(key: str, value: str) -> str:
        if value.strip() not in choices:
            raise ValueError(
                f"invalid value {value!r} for config {key!r}: must be one of {', '.join(choices)}"
            )
        return value.strip()

    return parse


def _cleanup_policy(key: str, value: str) -> str:
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or any(p not in (CLEANUP_DELETE, CLEANUP_COMPACT) for p in parts):
        raise ValueError(
            f"invalid value {value!r} for config {key!r}: must be a list of 'delete' and 'compact'"
        )
    return ",".join(parts)  # in the order given: Kafka describes a list as it was set


def _any_string(key: str, value: str) -> str:
    return value


_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(key: str, value: str) -> str:
    """Kafka's ThrottledReplicaListValidator: ``*``, or ``partition:broker`` entries, comma-separated."""
    if value.strip() != "*" and not all(_THROTTLED_REPLICA.fullmatch(e.strip()) for e in value.split(",")):
        raise ValueError(
            f"Invalid value {value} for configuration {key}: {key} must be the literal '*' or a list of "
            "replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
    return value


TOPIC_CONFIGS: dict[str, _Spec] = {
    "segment.bytes": _Spec("segment_bytes", _int_at_least(14, INT32_MAX)),
    "segment.ms": _Spec("segment_ms", _int_at_least(1)),
    "segment.index.bytes": _Spec("segment_index_bytes", _int_at_least(4, INT32_MAX)),
    "index.interval.bytes": _Spec("index_interval_bytes", _int_at_least(0, INT32_MAX)),
    "max.message.bytes": _Spec("max_message_bytes", _int_at_least(0, INT32_MAX)),
    "message.timestamp.type": _Spec("message_timestamp_type", _one_of(CREATE_TIME, LOG_APPEND_TIME)),
    "retention.ms": _Spec("retention_ms", _int_at_least(-1)),
    "retention.bytes": _Spec("retention_bytes", _int_at_least(-1)),
    "cleanup.policy": _Spec("cleanup_policy", _cleanup_policy),
    "flush.messages": _Spec("flush_interval_messages", _int_at_least(1)),
    "flush.ms": _Spec("flush_interval_ms", _int_at_least(0)),
    "delete.retention.ms": _Spec("delete_retention_ms", _int_at_least(0)),
    "file.delete.delay.ms": _Spec("file_delete_delay_ms", _int_at_least(0)),
    "min.cleanable.dirty.ratio": _Spec("min_cleanable_dirty_ratio", _ratio),
    "min.compaction.lag.ms": _Spec("min_compaction_lag_ms", _int_at_least(0)),
    "min.insync.replicas": _Spec("min_insync_replicas", _int_at_least(1, INT32_MAX)),
    "remote.storage.enable": _Spec("remote_storage_enable", _bool),
    "local.retention.ms": _Spec("local_retention_ms", _int_at_least(USE_RETENTION)),
    "local.retention.bytes": _Spec("local_retention_bytes", _int_at_least(USE_RETENTION)),
    "remote.log.copy.disable": _Spec("remote_log_copy_disable", _bool),
    "remote.log.delete.on.disable": _Spec("remote_log_delete_on_disable", _bool),
    # Accepted (Kafka topic configs that clients and tools set) but not acted upon.
    "compression.type": _Spec(None, _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")),
    "compression.gzip.level": _Spec(None, _int_at_least(-1, 9)),
    "compression.lz4.level": _Spec(None, _int_at_least(1, 17)),
    "compression.zstd.level": _Spec(None, _int_at_least(-131072, 22)),
    "follower.replication.throttled.replicas": _Spec(None, _throttled_replicas),
    "leader.replication.throttled.replicas": _Spec(None, _throttled_replicas),
    "max.compaction.lag.ms": _Spec(None, _int_at_least(1)),
    "message.downconversion.enable": _Spec(None, _boolean),
    "message.format.version": _Spec(None, _any_string),
    "message.timestamp.after.max.ms": _Spec(None, _int_at_least(0)),
    "message.timestamp.before.max.ms": _Spec(None, _int_at_least(0)),
    "message.timestamp.difference.max.ms": _Spec(None, _int_at_least(0)),
    "preallocate": _Spec(None, _boolean),
    "segment.jitter.ms": _Spec(None, _int_at_least(0)),
    "unclean.leader.election.enable": _Spec(None, _boolean),
}

# Broker-level name -> (topic-level name, multiplier to the topic-level unit); coarse units first.
BROKER_CONFIG_NAMES: dict[str, tuple[str, int]] = {
    "log.segment.bytes": ("segment.bytes", 1),
    "log.roll.hours": ("segment.ms", 3600 * 1000),
    "log.roll.ms": ("segment.ms", 1),
    "log.index.size.max.bytes": ("segment.index.bytes", 1),
    "log.index.interval.bytes": ("index.interval.bytes", 1),
    "message.max.bytes": ("max.message.bytes", 1),
    "log.message.timestamp.type": ("message.timestamp.type", 1),
    "log.retention.hours": ("retention.ms", 3600 * 1000),
    "log.retention.minutes": ("retention.ms", 60 * 1000),
    "log.retention.ms": ("retention.ms", 1),
    "log.retention.bytes": ("retention.bytes", 1),
    "log.cleanup.policy": ("cleanup.policy", 1),
    "log.flush.interval.messages": ("flush.messages", 1),
    "log.flush.interval.ms": ("flush.ms", 1),
    "log.cleaner.delete.retention.ms": ("delete.retention.ms", 1),
    "log.segment.delete.delay.ms": ("file.delete.delay.ms", 1),
    "log.cleaner.min.cleanable.ratio": ("min.cleanable.dirty.ratio", 1),
    "log.cleaner.min.compaction.lag.ms": ("min.compaction.lag.ms", 1),
    "min.insync.replicas": ("min.insync.replicas", 1),
    "log.local.retention.ms": ("local.retention.ms", 1),
    "log.local.retention.bytes": ("local.retention.bytes", 1),
}


def _apply(base: LogConfig, configs: Mapping[str, str | None], specs: Mapping[str, _Spec]) -> LogConfig:
    changes: dict[str, Any] = {}
    extra = dict(base.extra)
    for key, value in configs.items():
        spec = specs.get(key)
        if spec is None:
            close = difflib.get_close_matches(key, sorted(specs), n=1, cutoff=0.75)
            raise ValueError(
                f"unknown topic config {key!r}" + (f"; did you mean {close[0]}?" if close else "")
            )
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"invalid value {value!r} for config {key!r}: not a string")
        parsed = spec.parse(key, value)
        if spec.attr is None:
            extra[key] = str(parsed)
        else:
            changes[spec.attr] = parsed
    return dataclasses.replace(base, extra=extra, **changes)
