"""Kafka's ConfigType of each topic config, a one-line description of our own, and Kafka's defaults of
the topic configs minikafka accepts without acting on them (`UNMODELLED_DEFAULTS`).

DescribeConfigs v3+ answers ``config_type`` (Kafka's ids: 0 unknown, 1 boolean,
2 string, 3 int, 4 short, 5 long, 6 double, 7 list, 8 class, 9 password) and,
when asked (include_documentation), ``documentation``. Broker configs are typed
by their parsed Python value.
"""

from __future__ import annotations

from typing import Any

UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)

TOPIC_CONFIG_TYPES: dict[str, tuple[int, str]] = {
    "segment.bytes": (INT, "Size at which the active segment file is rolled."),
    "segment.ms": (LONG, "Age at which the active segment is rolled even if not full."),
    "segment.index.bytes": (INT, "Preallocated size of each segment's offset and time index."),
    "index.interval.bytes": (INT, "Bytes of log between two offset index entries."),
    "max.message.bytes": (INT, "Largest record batch the topic accepts."),
    "message.timestamp.type": (STRING, "CreateTime (the producer's) or LogAppendTime (the broker's)."),
    "retention.ms": (LONG, "Age after which segments are deleted (-1: never)."),
    "retention.bytes": (LONG, "Partition size above which the oldest segments are deleted (-1: no limit)."),
    "cleanup.policy": (LIST, "delete, compact, or both."),
    "flush.messages": (LONG, "Records between two forced fsyncs."),
    "flush.ms": (LONG, "Time between two forced fsyncs."),
    "delete.retention.ms": (LONG, "How long compaction keeps tombstones."),
    "file.delete.delay.ms": (LONG, "Delay before a retired segment file is removed."),
    "min.cleanable.dirty.ratio": (DOUBLE, "Share of uncleaned log that triggers compaction."),
    "min.compaction.lag.ms": (LONG, "Records younger than this are never compacted."),
    "min.insync.replicas": (INT, "In-sync replicas an acks=all write needs."),
    "compression.type": (STRING, "Codec the broker keeps batches in (accepted, batches stay as sent)."),
    "compression.gzip.level": (INT, "gzip level when the broker compresses (accepted, not used)."),
    "compression.lz4.level": (INT, "lz4 level when the broker compresses (accepted, not used)."),
    "compression.zstd.level": (INT, "zstd level when the broker compresses (accepted, not used)."),
    "remote.log.copy.disable": (
        BOOLEAN,
        "Tiered topic: stop uploading, keep what is remote read-only (local.retention.* must then be -2 or equal "
        "retention.*).",
    ),
    "remote.log.delete.on.disable": (
        BOOLEAN,
        "Must be true to turn remote.storage.enable off: the topic's remote data is deleted.",
    ),
    "follower.replication.throttled.replicas": (
        LIST,
        "partition:broker replicas (or *) whose copying as followers follower.replication.throttled.rate limits.",
    ),
    "leader.replication.throttled.replicas": (
        LIST,
        "partition:broker replicas (or *) whose leaders send to out-of-sync followers at most "
        "leader.replication.throttled.rate.",
    ),
    "local.retention.bytes": (
        LONG,
        "Tiered topic: partition size kept on local disk (-2: retention.bytes; at most retention.bytes).",
    ),
    "local.retention.ms": (
        LONG,
        "Tiered topic: age of segments kept on local disk (-2: retention.ms; at most retention.ms).",
    ),
    "max.compaction.lag.ms": (LONG, "Longest a record may stay uncompacted (accepted, not used)."),
    "message.downconversion.enable": (BOOLEAN, "Down-conversion for old consumers (accepted, not used)."),
    "message.format.version": (STRING, "Legacy message format version (accepted, not used)."),
    "message.timestamp.after.max.ms": (LONG, "Timestamp skew allowed ahead (accepted, not used)."),
    "message.timestamp.before.max.ms": (LONG, "Timestamp skew allowed behind (accepted, not used)."),
    "message.timestamp.difference.max.ms": (LONG, "Timestamp skew allowed (accepted, not used)."),
    "preallocate": (BOOLEAN, "Preallocate segment files (accepted, not used)."),
    "remote.storage.enable": (
        BOOLEAN,
        "Tier the topic: closed segments go to remote storage (needs remote.log.storage.system.enable).",
    ),
    "segment.jitter.ms": (LONG, "Random jitter on segment.ms (accepted, not used)."),
    "unclean.leader.election.enable": (
        BOOLEAN,
        "Elect an out-of-sync replica when no in-sync one is alive (loses records).",
    ),
}


# Kafka's defaults of the topic configs accepted here without a LogConfig field of their own, and the
# broker key Kafka names as each one's synonym (None: no broker-level key).
UNMODELLED_DEFAULTS: dict[str, tuple[str, str | None]] = {
    "compression.type": ("producer", "compression.type"),
    "compression.gzip.level": ("-1", "compression.gzip.level"),
    "compression.lz4.level": ("9", "compression.lz4.level"),
    "compression.zstd.level": ("3", "compression.zstd.level"),
    "preallocate": ("false", "log.preallocate"),
    "unclean.leader.election.enable": ("false", "unclean.leader.election.enable"),
    "max.compaction.lag.ms": ("9223372036854775807", "log.cleaner.max.compaction.lag.ms"),
    "segment.jitter.ms": ("0", "log.roll.jitter.ms"),
    "message.timestamp.after.max.ms": ("3600000", "log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": ("9223372036854775807", "log.message.timestamp.before.max.ms"),
    "message.timestamp.difference.max.ms": ("9223372036854775807", "log.message.timestamp.difference.max.ms"),
    "message.downconversion.enable": ("true", "log.message.downconversion.enable"),
    "message.format.version": ("3.0-IV1", "log.message.format.version"),
    "follower.replication.throttled.replicas": ("", "follower.replication.throttled.replicas"),
    "leader.replication.throttled.replicas": ("", "leader.replication.throttled.replicas"),
}


def value_type(value: Any) -> int:
    """The ConfigType of a parsed broker config value."""
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return LONG if not -(1 << 31) <= value < 1 << 31 else INT
    if isinstance(value, float):
        return DOUBLE
    return STRING if isinstance(value, str) else UNKNOWN
