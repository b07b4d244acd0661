"""The values of ``__remote_log_metadata`` records, byte-compatible with Kafka's RemoteLogMetadataSerde.

Kafka's topic-based remote log metadata manager (KIP-405) publishes one record
per segment state change, with a null key, to the partition
`metadata_partition` picks. A value is a frame around one flexible message:

    UNSIGNED_VARINT frame version   always 1 (Kafka rejects 0, the KRaft 2.8 preview, and others)
    UNSIGNED_VARINT apiKey          0, 1 or 2 below (3 exists, see the end)
    UNSIGNED_VARINT version         always 0 (the only version of each message)
    body                            the message in the flexible encoding, nothing after it

In the flexible encoding (KIP-482) a string is UNSIGNED_VARINT (length + 1) and
UTF-8, nullable bytes the same with 0 for null, an array UNSIGNED_VARINT
(count + 1), a uuid its 16 bytes (most significant first), integers
big-endian; **every** struct, nested ones included, ends with a tagged-field
section (UNSIGNED_VARINT count, then tag/size/bytes; we write none and skip
unknown ones on reading, as Kafka does). Field order is the JSON's
(Kafka's storage/src/main/resources/message/*.json):

- apiKey 0 RemoteLogSegmentMetadataRecord -> `SegmentMetadata`:
  RemoteLogSegmentId {TopicIdPartition {Name string, Id uuid, Partition int32, tags},
  Id uuid, tags}, StartOffset int64, EndOffset int64, BrokerId int32,
  MaxTimestampMs int64, EventTimestampMs int64,
  SegmentLeaderEpochs [] {LeaderEpoch int32, Offset int64, tags},
  SegmentSizeInBytes int32, CustomMetadata nullable bytes, RemoteLogSegmentState int8, tags.
- apiKey 1 RemoteLogSegmentMetadataUpdateRecord -> `SegmentMetadataUpdate`:
  RemoteLogSegmentId (as above), BrokerId int32, EventTimestampMs int64,
  CustomMetadata nullable bytes, RemoteLogSegmentState int8, tags.
- apiKey 2 RemotePartitionDeleteMetadataRecord -> `PartitionDeleteMetadata`:
  TopicIdPartition (as above), BrokerId int32, EventTimestampMs int64,
  RemotePartitionDeleteState int8, tags.

apiKey 3 (RemoteLogSegmentMetadataSnapshotRecord) only appears in Kafka's
local snapshot files, never on the topic, and names no partition: it is
rejected like an unknown apiKey.

`decode_metadata` raises `ProtocolError` on anything malformed (frame,
apiKey or version unknown, truncation, trailing bytes, a state id Kafka does
not define, invalid UTF-8, a segment Kafka's constructors would refuse).
The leader epochs of a decoded segment are sorted by epoch (Kafka keeps them
in a TreeMap; a repeated epoch keeps its last offset).
"""

from __future__ import annotations

import dataclasses
import enum
import io
import uuid
from dataclasses import dataclass
from typing import Any

from construct import ConstructError

from protocol.errors import ProtocolError
from protocol.murmur2 import murmur2, to_positive
from protocol.schema import Arr, F, Message, Obj, message_versions
from protocol.varint import decode_uvarint, encode_uvarint
from storage.topic_ids import to_text as kafka_uuid_str  # Kafka's Uuid.toString, re-exported

__all__ = [
    "MetadataRecord",
    "PartitionDeleteMetadata",
    "PartitionDeleteState",
    "SegmentMetadata",
    "SegmentMetadataUpdate",
    "SegmentState",
    "TopicIdPartition",
    "decode_metadata",
    "encode_metadata",
    "kafka_uuid_str",
    "metadata_partition",
]

FRAME_VERSION = 1
SEGMENT_METADATA = 0
SEGMENT_METADATA_UPDATE = 1
PARTITION_DELETE_METADATA = 2
SEGMENT_METADATA_SNAPSHOT = 3


class SegmentState(enum.IntEnum):
    """RemoteLogSegmentState ids. Valid moves: STARTED -> FINISHED or DELETE_STARTED,
    FINISHED -> DELETE_STARTED, DELETE_STARTED -> DELETE_FINISHED, and every state to itself."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class PartitionDeleteState(enum.IntEnum):
    """RemotePartitionDeleteState ids: MARKED -> STARTED -> FINISHED, and every state to itself."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """A partition of a topic incarnation (Kafka's TopicIdPartition)."""

    topic: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class SegmentMetadata:
    """One remote segment (Kafka's RemoteLogSegmentMetadata), in the state of its latest record.

    `segment_leader_epochs` holds (epoch, start offset) pairs in ascending epoch
    order, never empty: the epochs of the records in [start_offset, end_offset]
    (end inclusive). As in Kafka's constructor, start_offset >= 0 and
    end_offset >= start_offset; anything else raises ValueError.
    """

    tip: TopicIdPartition
    segment_id: uuid.UUID
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    size_in_bytes: int
    custom_metadata: bytes | None
    state: SegmentState

    def __post_init__(self) -> None:
        if self.start_offset < 0:
            raise ValueError(f"segment start offset {self.start_offset} is negative")
        if self.end_offset < self.start_offset:
            raise ValueError(f"segment end offset {self.end_offset} is below its start {self.start_offset}")
        epochs = self.segment_leader_epochs
        if not epochs:
            raise ValueError("a segment needs at least one leader epoch")
        if any(a[0] >= b[0] for a, b in zip(epochs, epochs[1:], strict=False)):
            raise ValueError(f"segment leader epochs not in ascending order: {epochs}")

    def with_update(self, upd: SegmentMetadataUpdate) -> SegmentMetadata:
        """This segment after `upd` (Kafka's createWithUpdates): broker, event time, custom metadata
        and state come from the update. ValueError if the update is for another segment."""
        if upd.segment_id != self.segment_id or upd.tip != self.tip:
            raise ValueError(f"update for segment {upd.segment_id} applied to segment {self.segment_id}")
        return dataclasses.replace(
            self,
            broker_id=upd.broker_id,
            event_timestamp_ms=upd.event_timestamp_ms,
            custom_metadata=upd.custom_metadata,
            state=upd.state,
        )


@dataclass(frozen=True, slots=True)
class SegmentMetadataUpdate:
    """A state change of a known segment (Kafka's RemoteLogSegmentMetadataUpdate)."""

    tip: TopicIdPartition
    segment_id: uuid.UUID
    broker_id: int
    event_timestamp_ms: int
    custom_metadata: bytes | None
    state: SegmentState


@dataclass(frozen=True, slots=True)
class PartitionDeleteMetadata:
    """A state change of a partition's remote deletion (Kafka's RemotePartitionDeleteMetadata)."""

    tip: TopicIdPartition
    broker_id: int
    event_timestamp_ms: int
    state: PartitionDeleteState


MetadataRecord = SegmentMetadata | SegmentMetadataUpdate | PartitionDeleteMetadata

# -- schemas, in the notation of protocol.schema, transcribed from Kafka's JSON ---------------------

_TOPIC_ID_PARTITION = Obj(F("name", "string"), F("id", "uuid"), F("partition", "int32"))
_SEGMENT_ID = Obj(F("topic_id_partition", _TOPIC_ID_PARTITION), F("id", "uuid"))

_FIELDS: dict[int, list[F]] = {
    SEGMENT_METADATA: [
        F("remote_log_segment_id", _SEGMENT_ID),
        F("start_offset", "int64"),
        F("end_offset", "int64"),
        F("broker_id", "int32"),
        F("max_timestamp_ms", "int64"),
        F("event_timestamp_ms", "int64"),
        F("segment_leader_epochs", Arr(F("leader_epoch", "int32"), F("offset", "int64"))),
        F("segment_size_in_bytes", "int32"),
        F("custom_metadata", "bytes", nullable="0+", default=None),
        F("remote_log_segment_state", "int8"),
    ],
    SEGMENT_METADATA_UPDATE: [
        F("remote_log_segment_id", _SEGMENT_ID),
        F("broker_id", "int32"),
        F("event_timestamp_ms", "int64"),
        F("custom_metadata", "bytes", nullable="0+", default=None),
        F("remote_log_segment_state", "int8"),
    ],
    PARTITION_DELETE_METADATA: [
        F("topic_id_partition", _TOPIC_ID_PARTITION),
        F("broker_id", "int32"),
        F("event_timestamp_ms", "int64"),
        F("remote_partition_delete_state", "int8"),
    ],
}
_SCHEMAS: dict[int, Message] = {key: message_versions(f, 0, 0, "0+")[0] for key, f in _FIELDS.items()}
_NAMES = {
    SEGMENT_METADATA: "RemoteLogSegmentMetadataRecord",
    SEGMENT_METADATA_UPDATE: "RemoteLogSegmentMetadataUpdateRecord",
    PARTITION_DELETE_METADATA: "RemotePartitionDeleteMetadataRecord",
}


def _tip_dict(tip: TopicIdPartition) -> dict[str, object]:
    return {"name": tip.topic, "id": tip.topic_id, "partition": tip.partition}


def _body(rec: MetadataRecord) -> tuple[int, dict[str, object]]:
    if isinstance(rec, SegmentMetadata):
        return SEGMENT_METADATA, {
            "remote_log_segment_id": {"topic_id_partition": _tip_dict(rec.tip), "id": rec.segment_id},
            "start_offset": rec.start_offset,
            "end_offset": rec.end_offset,
            "broker_id": rec.broker_id,
            "max_timestamp_ms": rec.max_timestamp_ms,
            "event_timestamp_ms": rec.event_timestamp_ms,
            "segment_leader_epochs": [{"leader_epoch": e, "offset": o} for e, o in rec.segment_leader_epochs],
            "segment_size_in_bytes": rec.size_in_bytes,
            "custom_metadata": rec.custom_metadata,
            "remote_log_segment_state": int(rec.state),
        }
    if isinstance(rec, SegmentMetadataUpdate):
        return SEGMENT_METADATA_UPDATE, {
            "remote_log_segment_id": {"topic_id_partition": _tip_dict(rec.tip), "id": rec.segment_id},
            "broker_id": rec.broker_id,
            "event_timestamp_ms": rec.event_timestamp_ms,
            "custom_metadata": rec.custom_metadata,
            "remote_log_segment_state": int(rec.state),
        }
    if isinstance(rec, PartitionDeleteMetadata):
        return PARTITION_DELETE_METADATA, {
            "topic_id_partition": _tip_dict(rec.tip),
            "broker_id": rec.broker_id,
            "event_timestamp_ms": rec.event_timestamp_ms,
            "remote_partition_delete_state": int(rec.state),
        }
    raise TypeError(f"not a remote log metadata record: {rec!r}")


def encode_metadata(rec: MetadataRecord) -> bytes:
    """The ``__remote_log_metadata`` value of `rec` (frame and body, see the module docstring).

    ValueError if a number does not fit its wire type (an int32 offset count, say)."""
    api_key, body = _body(rec)
    try:
        encoded = _SCHEMAS[api_key].build(body)
    except ConstructError as exc:
        raise ValueError(f"{_NAMES[api_key]}: {exc}") from None
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key) + encode_uvarint(0) + encoded


# The decoders read construct Containers (attribute access, snake_case names).


def _tip(c: Any) -> TopicIdPartition:
    return TopicIdPartition(c.name, c.id, c.partition)


def _segment_metadata(c: Any) -> SegmentMetadata:
    sid = c.remote_log_segment_id
    epochs = {e.leader_epoch: e.offset for e in c.segment_leader_epochs}
    return SegmentMetadata(
        tip=_tip(sid.topic_id_partition),
        segment_id=sid.id,
        start_offset=c.start_offset,
        end_offset=c.end_offset,
        broker_id=c.broker_id,
        max_timestamp_ms=c.max_timestamp_ms,
        event_timestamp_ms=c.event_timestamp_ms,
        segment_leader_epochs=tuple(sorted(epochs.items())),
        size_in_bytes=c.segment_size_in_bytes,
        custom_metadata=c.custom_metadata,
        state=SegmentState(c.remote_log_segment_state),
    )


def _segment_update(c: Any) -> SegmentMetadataUpdate:
    sid = c.remote_log_segment_id
    return SegmentMetadataUpdate(
        tip=_tip(sid.topic_id_partition),
        segment_id=sid.id,
        broker_id=c.broker_id,
        event_timestamp_ms=c.event_timestamp_ms,
        custom_metadata=c.custom_metadata,
        state=SegmentState(c.remote_log_segment_state),
    )


def _partition_delete(c: Any) -> PartitionDeleteMetadata:
    return PartitionDeleteMetadata(
        tip=_tip(c.topic_id_partition),
        broker_id=c.broker_id,
        event_timestamp_ms=c.event_timestamp_ms,
        state=PartitionDeleteState(c.remote_partition_delete_state),
    )


_FROM = {
    SEGMENT_METADATA: _segment_metadata,
    SEGMENT_METADATA_UPDATE: _segment_update,
    PARTITION_DELETE_METADATA: _partition_delete,
}


def decode_metadata(value: bytes | memoryview) -> MetadataRecord:
    """The record a ``__remote_log_metadata`` value holds; ProtocolError if it is malformed."""
    buf = bytes(value)
    frame, pos = decode_uvarint(buf, 0)
    if frame != FRAME_VERSION:
        raise ProtocolError(f"remote log metadata: frame version {frame}, only {FRAME_VERSION} is known")
    api_key, pos = decode_uvarint(buf, pos)
    version, pos = decode_uvarint(buf, pos)
    if api_key == SEGMENT_METADATA_SNAPSHOT:
        raise ProtocolError(
            "remote log metadata: apiKey 3 (RemoteLogSegmentMetadataSnapshotRecord) belongs to Kafka's "
            "snapshot files, not to the topic, and is not supported"
        )
    schema = _SCHEMAS.get(api_key)
    if schema is None:
        raise ProtocolError(f"remote log metadata: unknown apiKey {api_key}")
    name = _NAMES[api_key]
    if version != 0:
        raise ProtocolError(f"remote log metadata: {name} version {version}, only 0 is known")
    stream = io.BytesIO(buf)
    stream.seek(pos)
    try:
        c = schema.parse_stream(stream)
    except (ConstructError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"remote log metadata: {name}: {exc}") from None
    left = len(buf) - stream.tell()
    if left:
        raise ProtocolError(f"remote log metadata: {left} byte(s) after the {name}")
    try:
        return _FROM[api_key](c)
    except ValueError as exc:  # a state id Kafka does not define, a segment its constructor refuses
        raise ProtocolError(f"remote log metadata: {name}: {exc}") from None


def metadata_partition(topic_id: uuid.UUID, partition: int, num_partitions: int) -> int:
    """The ``__remote_log_metadata`` partition of a user partition (Kafka's
    RemoteLogMetadataTopicPartitioner.metadataPartition).

    h = Java's ``Objects.hash(lsb, msb, partition)`` of the topic id's two
    halves, i.e. ``((31 + L(lsb)) * 31 + L(msb)) * 31 + partition`` in int32
    arithmetic with ``L(v) = (int) (v ^ (v >>> 32))``; the partition is
    ``toPositive(murmur2(h as 4 big-endian bytes)) % num_partitions``.
    """
    if num_partitions < 1:
        raise ValueError(f"the metadata topic needs at least one partition, not {num_partitions}")
    msb, lsb = topic_id.int >> 64, topic_id.int & 0xFFFFFFFFFFFFFFFF
    h = 1
    for element in (lsb ^ (lsb >> 32), msb ^ (msb >> 32), partition):
        h = (31 * h + element) & 0xFFFFFFFF
    return to_positive(murmur2(h.to_bytes(4, "big"))) % num_partitions
