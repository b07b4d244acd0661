"""The `__consumer_offsets` records of consumer-protocol groups (KIP-848), in Kafka's formats.

Keys are not flexible: INT16 key version, then STRING group id (INT16 length +
UTF-8), and for the per-member records STRING member id::

    3 ConsumerGroupMetadataKey                 group
    4 ConsumerGroupPartitionMetadataKey        group
    5 ConsumerGroupMemberMetadataKey           group, member
    6 ConsumerGroupTargetAssignmentMetadataKey group
    7 ConsumerGroupTargetAssignmentMemberKey   group, member
    8 ConsumerGroupCurrentMemberAssignmentKey  group, member

Values are INT16 version 0, then the flexible encoding (compact strings and
arrays, unsigned-varint lengths + 1, a tagged-field section after every struct):

    3 Epoch INT32
    4 Topics [TopicId UUID, TopicName STRING, NumPartitions INT32,
              PartitionMetadata [Partition INT32, Racks [STRING]]]
    5 InstanceId STRING?, RackId STRING?, ClientId STRING, ClientHost STRING,
      SubscribedTopicNames [STRING], SubscribedTopicRegex STRING?,
      RebalanceTimeoutMs INT32, ServerAssignor STRING?, tag 0: ClassicMemberMetadata?
      [SessionTimeoutMs INT32, SupportedProtocols [Name STRING, Metadata BYTES]]
      (null for a member of the consumer protocol)
    6 AssignmentEpoch INT32
    7 TopicPartitions [TopicId UUID, Partitions [INT32]]
    8 MemberEpoch INT32, PreviousMemberEpoch INT32, State INT8,
      AssignedPartitions [TopicId UUID, Partitions [INT32]],
      PartitionsPendingRevocation [TopicId UUID, Partitions [INT32]]

A null value is a tombstone. Decoding raises `ProtocolError` on anything malformed.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from construct import ConstructError

from broker.groups.consumer_model import Assignment, ClassicMetadata, ConsumerGroup, ConsumerMember
from protocol.errors import ProtocolError
from protocol.schema import Arr, F, Obj, message_versions
from protocol.varint import encode_uvarint

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
KEY_VERSIONS = range(GROUP_METADATA, CURRENT_MEMBER_ASSIGNMENT + 1)
_MEMBER_KEYS = {MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT}

RecordKV = tuple[bytes, bytes | None]  # a key and its value (None: a tombstone)

_TOPIC_PARTITIONS = Arr(F("topic_id", "uuid"), F("partitions", Arr("int32")))
_VALUES = {
    GROUP_METADATA: [F("epoch", "int32")],
    PARTITION_METADATA: [
        F(
            "topics",
            Arr(
                F("topic_id", "uuid"),
                F("topic_name", "string"),
                F("num_partitions", "int32"),
                F("partition_metadata", Arr(F("partition", "int32"), F("racks", Arr("string")))),
            ),
        )
    ],
    MEMBER_METADATA: [
        F("instance_id", "string", nullable="0+"),
        F("rack_id", "string", nullable="0+"),
        F("client_id", "string"),
        F("client_host", "string"),
        F("subscribed_topic_names", Arr("string")),
        F("subscribed_topic_regex", "string", nullable="0+", default=None),
        F("rebalance_timeout_ms", "int32", default=-1),
        F("server_assignor", "string", nullable="0+", default=None),
        F(
            "classic_member_metadata",
            Obj(
                F("session_timeout_ms", "int32"),
                F("supported_protocols", Arr(F("name", "string"), F("metadata", "bytes"))),
            ),
            nullable="0+",
            tag=0,
            tagged="0+",
            default=None,
        ),
    ],
    TARGET_ASSIGNMENT_METADATA: [F("assignment_epoch", "int32")],
    TARGET_ASSIGNMENT_MEMBER: [F("topic_partitions", _TOPIC_PARTITIONS)],
    CURRENT_MEMBER_ASSIGNMENT: [
        F("member_epoch", "int32"),
        F("previous_member_epoch", "int32"),
        F("state", "int8"),
        F("assigned_partitions", _TOPIC_PARTITIONS),
        F("partitions_pending_revocation", _TOPIC_PARTITIONS),
    ],
}
_SCHEMAS = {kind: message_versions(fields, 0, 0, "0+")[0] for kind, fields in _VALUES.items()}
_I16 = struct.Struct(">h")
_VALUE_VERSION = _I16.pack(0)
_EPOCHS_STATE = struct.Struct(">iib")  # member_epoch, previous_member_epoch, state
_NO_TAGS = b"\x00"


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    """A key of versions 3-8: which record it is, its group, and the member for 5, 7 and 8."""

    kind: int
    group: str
    member: str | None = None


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def encode_key(key: ConsumerKey) -> bytes:
    out = _I16.pack(key.kind) + _string(key.group)
    if key.kind in _MEMBER_KEYS:
        out += _string(key.member or "")
    return out


def decode_key(version: int, data: bytes, pos: int) -> ConsumerKey:
    """The rest of a key of version 3-8 (``pos`` is just past the version)."""
    group, pos = _read_string(data, pos)
    member = None
    if version in _MEMBER_KEYS:
        member, pos = _read_string(data, pos)
    return ConsumerKey(version, group, member)


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    if pos + 2 > len(data):
        raise ProtocolError("__consumer_offsets key: truncated string length")
    (n,) = _I16.unpack_from(data, pos)
    end = pos + 2 + n
    if n < 0 or end > len(data):
        raise ProtocolError(f"__consumer_offsets key: bad string length {n}")
    try:
        return data[pos + 2 : end].decode(), end
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"__consumer_offsets key: {exc}") from None


def encode_value(kind: int, value: Mapping[str, Any]) -> bytes:
    return _VALUE_VERSION + _SCHEMAS[kind].build(value)


def decode_value(kind: int, data: bytes) -> Any:
    """The fields of a value (a construct Container, snake_case names); version 0 only."""
    if len(data) < 2:
        raise ProtocolError("__consumer_offsets value: truncated version")
    (version,) = _I16.unpack_from(data, 0)
    if version != 0:
        raise ProtocolError(f"unknown value version {version} for key version {kind}")
    try:
        return _SCHEMAS[kind].parse(data[2:])
    except (ConstructError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"__consumer_offsets value of key version {kind}: {exc}") from None


def topic_partitions(assignment: Assignment) -> list[dict[str, Any]]:
    """An assignment as the wire and record arrays have it, in a stable order."""
    return [
        {"topic_id": tid, "partitions": sorted(parts)}
        for tid, parts in sorted(assignment.items(), key=_by_topic_id)
        if parts
    ]


def _by_topic_id(item: tuple[uuid.UUID, frozenset[int]]) -> int:
    """Topic ids in the order of their text form (the same as their integers': fixed-width hex)."""
    return item[0].int


def _topic_partitions_bytes(assignment: Assignment) -> bytes:
    """`topic_partitions(assignment)` as its flexible array, written directly: the records of a
    rebalance carry one or two per member, and construct's build was most of their cost."""
    items = sorted(((tid, parts) for tid, parts in assignment.items() if parts), key=_by_topic_id)
    out = bytearray(encode_uvarint(len(items) + 1))
    for tid, parts in items:
        out += tid.bytes
        out += encode_uvarint(len(parts) + 1)
        out += struct.pack(f">{len(parts)}i", *sorted(parts))
        out += _NO_TAGS
    return bytes(out)


def assignment_of(entries: Any) -> dict[uuid.UUID, frozenset[int]]:
    """The inverse of `topic_partitions` (from a decoded value or request)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for entry in entries or ():
        parts = frozenset(entry.partitions)
        if parts:
            out[entry.topic_id] = out.get(entry.topic_id, frozenset()) | parts
    return out


# -- the records a change writes ----------------------------------------------------------------
def epoch_record(group_id: str, epoch: int) -> RecordKV:
    return encode_key(ConsumerKey(GROUP_METADATA, group_id)), encode_value(GROUP_METADATA, {"epoch": epoch})


def target_epoch_record(group_id: str, epoch: int) -> RecordKV:
    """The epoch the group's target assignment was computed for (value 6)."""
    key = encode_key(ConsumerKey(TARGET_ASSIGNMENT_METADATA, group_id))
    return key, encode_value(TARGET_ASSIGNMENT_METADATA, {"assignment_epoch": epoch})


def partition_metadata_record(group_id: str, metadata: Mapping[str, tuple[uuid.UUID, int]]) -> RecordKV:
    topics = [
        {"topic_id": tid, "topic_name": name, "num_partitions": n, "partition_metadata": []}
        for name, (tid, n) in sorted(metadata.items())
    ]
    return (
        encode_key(ConsumerKey(PARTITION_METADATA, group_id)),
        encode_value(PARTITION_METADATA, {"topics": topics}),
    )


def member_record(group_id: str, m: ConsumerMember) -> RecordKV:
    value: dict[str, Any] = {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
        "classic_member_metadata": None
        if m.classic is None
        else {
            "session_timeout_ms": m.classic.session_timeout_ms,
            "supported_protocols": [{"name": n, "metadata": d} for n, d in m.classic.protocols],
        },
    }
    key = ConsumerKey(MEMBER_METADATA, group_id, m.member_id)
    return encode_key(key), encode_value(MEMBER_METADATA, value)


def classic_metadata_of(value: Any) -> ClassicMetadata | None:
    """The ClassicMetadata of a decoded member value (tag 0), None if it has none."""
    meta = value.classic_member_metadata
    if meta is None:
        return None
    return ClassicMetadata(
        meta.session_timeout_ms, tuple((p.name, bytes(p.metadata)) for p in meta.supported_protocols)
    )


def target_member_record(group_id: str, member_id: str, assignment: Assignment) -> RecordKV:
    """A member's target assignment (value 7), written directly: the bytes of `encode_value` of
    ``{"topic_partitions": topic_partitions(assignment)}``."""
    key = ConsumerKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
    value = _VALUE_VERSION + _topic_partitions_bytes(assignment) + _NO_TAGS
    return encode_key(key), value


def assignment_record(group_id: str, m: ConsumerMember) -> RecordKV:
    """The member's current assignment (value 8), written directly; `encode_value` of
    `assignment_value(m)` gives the same bytes (tests/unit/test_consumer_records.py)."""
    value = (
        _VALUE_VERSION
        + _EPOCHS_STATE.pack(m.member_epoch, m.previous_member_epoch, int(m.state))
        + _topic_partitions_bytes(m.assigned)
        + _topic_partitions_bytes(m.pending_revocation)
        + _NO_TAGS
    )
    key = ConsumerKey(CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id)
    return encode_key(key), value


def assignment_value(m: ConsumerMember) -> dict[str, Any]:
    """The fields of `assignment_record`'s value, as `encode_value` takes them."""
    return {
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "state": int(m.state),
        "assigned_partitions": topic_partitions(m.assigned),
        "partitions_pending_revocation": topic_partitions(m.pending_revocation),
    }


def member_tombstones(group_id: str, member_id: str) -> list[RecordKV]:
    return [
        (encode_key(ConsumerKey(kind, group_id, member_id)), None)
        for kind in (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)
    ]


def group_tombstones(group_id: str, cg: ConsumerGroup) -> list[RecordKV]:
    """Everything a consumer group wrote, as tombstones (Kafka's order: members first)."""
    records: list[RecordKV] = []
    for member_id in sorted(set(cg.members) | set(cg.target)):
        records.extend(member_tombstones(group_id, member_id))
    for kind in (TARGET_ASSIGNMENT_METADATA, PARTITION_METADATA, GROUP_METADATA):
        records.append((encode_key(ConsumerKey(kind, group_id)), None))
    return records
