"""Value types shared by the producer, consumer and admin client.

All are immutable tuples or frozen dataclasses so they can be used as dict keys
and passed between the client's I/O thread and the caller's thread freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from protocol.member_data import TopicPartition

# Timestamp types as Kafka numbers them (RecordBatch attribute bit 3).
CREATE_TIME = 0
LOG_APPEND_TIME = 1

Headers = tuple[tuple[str, bytes | None], ...]


class ConsumerRecord(NamedTuple):
    """One record as the consumer returns it.

    ``timestamp`` is in ms since the epoch; ``timestamp_type`` is 0 (CreateTime)
    or 1 (LogAppendTime). ``key`` and ``value`` are bytes (or None for null), or
    whatever the configured deserializers returned. ``headers`` is a tuple of
    (str, bytes | None) pairs, empty when the record has none.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: object
    value: object
    headers: Headers


class RecordMetadata(NamedTuple):
    """Where a produced record landed: offset -1 when acks=0 (the broker does not answer)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next offset to consume) with its free-form metadata string."""

    offset: int
    metadata: str = ""


class ConsumerGroupMetadata(NamedTuple):
    """A consumer's group identity, for `send_offsets_to_transaction` (``Consumer.group_metadata()``).

    With a generation and member id the group coordinator rejects offsets of a
    member that has since been fenced out of the group (TxnOffsetCommit v3+);
    generation -1 and member id "" commit as a producer outside the group.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


@dataclass(frozen=True)
class PartitionInfo:
    """Metadata of one partition; ``error`` is a Kafka error code (0 = none)."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error: int = 0


@dataclass(frozen=True)
class TopicInfo:
    """Metadata of one topic; ``partitions`` maps partition index to its info."""

    name: str
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    internal: bool = False
    error: int = 0


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


def offsets_by_topic(offsets: dict[TopicPartition, OffsetAndMetadata]) -> dict[str, list[dict[str, Any]]]:
    """OffsetCommit / TxnOffsetCommit partitions grouped by topic: {topic: [{partition_index,
    committed_offset, committed_metadata}]}, partitions in order."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, om in sorted(offsets.items()):
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": om.offset,
                "committed_metadata": om.metadata,
            }
        )
    return by_topic
