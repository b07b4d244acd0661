"""`__remote_log_metadata` values (broker/tiered/metadata_records.py) against Kafka's wire format.

The expected bytes below are written field by field from Kafka's message JSON
(storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json and
siblings, all ``flexibleVersions 0+``) and AbstractApiMessageSerde's frame, so
these tests pin the format rather than echo the encoder. The partitioner vectors
were computed with Java 17 and kafka-clients 3.9.1 (``Utils.murmur2``,
``Utils.toPositive``, ``Uuid.fromString``) and the expression of Kafka's
RemoteLogMetadataTopicPartitioner (``Objects.hash(lsb, msb, partition)`` as 4
big-endian bytes); the program is in the docstring of `test_metadata_partition_matches_java`.
"""

from __future__ import annotations

import base64
import contextlib
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.tiered.metadata_records import (
    PartitionDeleteMetadata,
    PartitionDeleteState,
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
    decode_metadata,
    encode_metadata,
    kafka_uuid_str,
    metadata_partition,
)
from protocol.errors import ProtocolError

TOPIC_ID = uuid.UUID("31627a14-74df-458c-baee-3cf065d7aa49")  # Kafka text MWJ6FHTfRYy67jzwZdeqSQ
SEGMENT_ID = uuid.UUID("b6a8a629-e670-4ad3-843b-04734f72f9a1")  # tqimKeZwStOEOwRzT3L5oQ
TIP = TopicIdPartition("foo", TOPIC_ID, 7)


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


NO_TAGS = b"\x00"  # an empty tagged-field section: UNSIGNED_VARINT count 0
# TopicIdPartitionEntry {Name: compact string (length + 1 = 4), Id: 16 bytes, Partition: int32, tags}
TIP_BYTES = b"\x04" + b"foo" + TOPIC_ID.bytes + i32(7) + NO_TAGS
# RemoteLogSegmentIdEntry {TopicIdPartition, Id, tags}
SEGMENT_ID_BYTES = TIP_BYTES + SEGMENT_ID.bytes + NO_TAGS


def frame(api_key: int) -> bytes:
    """UNSIGNED_VARINT frame version 1, apiKey, version 0."""
    return bytes((1, api_key, 0))


SEGMENT = SegmentMetadata(
    tip=TIP,
    segment_id=SEGMENT_ID,
    start_offset=1234,
    end_offset=2000,
    broker_id=3,
    max_timestamp_ms=1_700_000_000_123,
    event_timestamp_ms=1_700_000_001_000,
    segment_leader_epochs=((4, 1234), (5, 1500)),
    size_in_bytes=1_048_576,
    custom_metadata=None,
    state=SegmentState.COPY_SEGMENT_STARTED,
)
SEGMENT_BYTES = (
    frame(0)
    + SEGMENT_ID_BYTES
    + i64(1234)  # StartOffset
    + i64(2000)  # EndOffset
    + i32(3)  # BrokerId
    + i64(1_700_000_000_123)  # MaxTimestampMs
    + i64(1_700_000_001_000)  # EventTimestampMs
    + b"\x03"  # SegmentLeaderEpochs: compact array, count + 1
    + i32(4)
    + i64(1234)
    + NO_TAGS
    + i32(5)
    + i64(1500)
    + NO_TAGS
    + i32(1_048_576)  # SegmentSizeInBytes
    + b"\x00"  # CustomMetadata: null compact bytes
    + i8(0)  # RemoteLogSegmentState COPY_SEGMENT_STARTED
    + NO_TAGS
)
UPDATE = SegmentMetadataUpdate(
    tip=TIP,
    segment_id=SEGMENT_ID,
    broker_id=3,
    event_timestamp_ms=1_700_000_002_000,
    custom_metadata=b"\x01\x02\x03",
    state=SegmentState.COPY_SEGMENT_FINISHED,
)
UPDATE_BYTES = (
    frame(1)
    + SEGMENT_ID_BYTES
    + i32(3)  # BrokerId
    + i64(1_700_000_002_000)  # EventTimestampMs
    + b"\x04\x01\x02\x03"  # CustomMetadata: compact bytes, length + 1
    + i8(1)  # COPY_SEGMENT_FINISHED
    + NO_TAGS
)
DELETE = PartitionDeleteMetadata(
    tip=TIP, broker_id=-1, event_timestamp_ms=5, state=PartitionDeleteState.DELETE_PARTITION_STARTED
)
DELETE_BYTES = frame(2) + TIP_BYTES + i32(-1) + i64(5) + i8(1) + NO_TAGS


@pytest.mark.parametrize(
    ("record", "expected"),
    [(SEGMENT, SEGMENT_BYTES), (UPDATE, UPDATE_BYTES), (DELETE, DELETE_BYTES)],
    ids=["segment", "update", "partition-delete"],
)
def test_wire_layout(record: object, expected: bytes) -> None:
    assert encode_metadata(record) == expected  # type: ignore[arg-type]
    assert decode_metadata(expected) == record
    assert decode_metadata(memoryview(expected)) == record


def test_segment_with_update_takes_the_updates_fields() -> None:
    finished = SEGMENT.with_update(UPDATE)
    assert finished.state is SegmentState.COPY_SEGMENT_FINISHED
    assert (finished.event_timestamp_ms, finished.custom_metadata) == (1_700_000_002_000, b"\x01\x02\x03")
    assert finished.start_offset == SEGMENT.start_offset and finished.segment_leader_epochs == (
        (4, 1234),
        (5, 1500),
    )
    other = SegmentMetadataUpdate(TIP, uuid.uuid4(), 3, 0, None, SegmentState.COPY_SEGMENT_FINISHED)
    with pytest.raises(ValueError, match="applied to segment"):
        SEGMENT.with_update(other)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"start_offset": -1}, "negative"),
        ({"end_offset": 1233}, "below its start"),
        ({"segment_leader_epochs": ()}, "at least one"),
        ({"segment_leader_epochs": ((5, 1234), (4, 1500))}, "ascending"),
        ({"segment_leader_epochs": ((4, 1234), (4, 1500))}, "ascending"),
    ],
)
def test_segment_metadata_refuses_what_kafka_refuses(changes: dict[str, object], match: str) -> None:
    fields = {f: getattr(SEGMENT, f) for f in SegmentMetadata.__dataclass_fields__}
    with pytest.raises(ValueError, match=match):
        SegmentMetadata(**{**fields, **changes})  # type: ignore[arg-type]


def test_out_of_range_numbers_do_not_encode() -> None:
    too_big = SegmentMetadataUpdate(TIP, SEGMENT_ID, 2**31, 0, None, SegmentState.COPY_SEGMENT_FINISHED)
    with pytest.raises(ValueError):
        encode_metadata(too_big)
    with pytest.raises(TypeError):
        encode_metadata("not a record")  # type: ignore[arg-type]


# -- decoding what Kafka would also accept ----------------------------------------------------------


def test_unknown_tagged_fields_are_skipped_at_every_level() -> None:
    tag = b"\x01\x05\x02ab"  # one tagged field: tag 5, size 2, "ab"
    value = (
        frame(1)
        + b"\x04foo"
        + TOPIC_ID.bytes
        + i32(7)
        + tag  # inside TopicIdPartition
        + SEGMENT_ID.bytes
        + tag  # inside RemoteLogSegmentId
        + UPDATE_BYTES[len(frame(1)) + len(SEGMENT_ID_BYTES) : -1]
        + tag  # the record's own
    )
    assert decode_metadata(value) == UPDATE


def test_leader_epochs_are_sorted_like_kafkas_treemap() -> None:
    epochs = (
        b"\x04" + i32(5) + i64(1500) + NO_TAGS + i32(4) + i64(1234) + NO_TAGS + i32(5) + i64(1600) + NO_TAGS
    )
    head = SEGMENT_BYTES.index(b"\x03" + i32(4))
    tail = head + 1 + 2 * (4 + 8 + 1)
    decoded = decode_metadata(SEGMENT_BYTES[:head] + epochs + SEGMENT_BYTES[tail:])
    assert isinstance(decoded, SegmentMetadata)
    assert decoded.segment_leader_epochs == ((4, 1234), (5, 1600))  # a repeated epoch keeps its last offset


# -- malformed values ---------------------------------------------------------------------------------


def _with_state(value: bytes, state: int) -> bytes:
    return value[:-2] + i8(state) + NO_TAGS


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (b"", "truncated"),
        (b"\x00" + SEGMENT_BYTES[1:], "frame version 0"),
        (b"\x02" + SEGMENT_BYTES[1:], "frame version 2"),
        (b"\x81\x80\x80\x80\x80\x01", "longer than 5 bytes"),
        (bytes((1, 3, 0)) + b"\x00" * 80, "apiKey 3 .*not supported"),
        (bytes((1, 4, 0)) + DELETE_BYTES[3:], "unknown apiKey 4"),
        (bytes((1, 0x80, 0x01, 0)), "unknown apiKey 128"),
        (bytes((1, 2, 1)) + DELETE_BYTES[3:], "version 1"),
        (SEGMENT_BYTES + b"\x00", "1 byte"),
        (DELETE_BYTES + b"\x00\x00", "2 byte"),
        (_with_state(SEGMENT_BYTES, 4), "4 is not a valid SegmentState"),
        (_with_state(UPDATE_BYTES, -1), "-1 is not a valid SegmentState"),
        (_with_state(DELETE_BYTES, 3), "3 is not a valid PartitionDeleteState"),
        (frame(2) + b"\x03\xff\xfe" + TIP_BYTES[4:] + DELETE_BYTES[len(frame(2) + TIP_BYTES) :], "UTF-8"),
        (frame(2) + b"\x00" + TIP_BYTES[4:] + DELETE_BYTES[len(frame(2) + TIP_BYTES) :], "invalid length -1"),
        (SEGMENT_BYTES.replace(b"\x03" + i32(4), b"\x00" + i32(4)), "invalid length -1"),  # null epochs
        (SEGMENT_BYTES.replace(i64(1234) + i64(2000), i64(-1) + i64(2000), 1), "negative"),
        (SEGMENT_BYTES.replace(i64(1234) + i64(2000), i64(1234) + i64(1233), 1), "below its start"),
    ],
)
def test_malformed_values_raise_protocol_error(value: bytes, match: str) -> None:
    with pytest.raises(ProtocolError, match=match):
        decode_metadata(value)


def test_empty_leader_epochs_are_refused() -> None:
    head = SEGMENT_BYTES.index(b"\x03" + i32(4))
    value = SEGMENT_BYTES[:head] + b"\x01" + SEGMENT_BYTES[head + 1 + 2 * 13 :]
    with pytest.raises(ProtocolError, match="at least one leader epoch"):
        decode_metadata(value)


@pytest.mark.parametrize(
    "value", [SEGMENT_BYTES, UPDATE_BYTES, DELETE_BYTES], ids=["segment", "update", "delete"]
)
def test_every_truncation_raises_protocol_error(value: bytes) -> None:
    for n in range(len(value)):
        with pytest.raises(ProtocolError):
            decode_metadata(value[:n])


# -- round trips --------------------------------------------------------------------------------------

int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
tips = st.builds(TopicIdPartition, st.text(max_size=20), uuids, int32s)
custom = st.none() | st.binary(max_size=40)


@st.composite
def segments(draw: st.DrawFn) -> SegmentMetadata:
    start = draw(st.integers(0, 2**63 - 1))
    epochs = sorted(draw(st.dictionaries(int32s, int64s, min_size=1, max_size=5)).items())
    return SegmentMetadata(
        tip=draw(tips),
        segment_id=draw(uuids),
        start_offset=start,
        end_offset=draw(st.integers(start, 2**63 - 1)),
        broker_id=draw(int32s),
        max_timestamp_ms=draw(int64s),
        event_timestamp_ms=draw(int64s),
        segment_leader_epochs=tuple(epochs),
        size_in_bytes=draw(int32s),
        custom_metadata=draw(custom),
        state=draw(st.sampled_from(SegmentState)),
    )


records = (
    segments()
    | st.builds(SegmentMetadataUpdate, tips, uuids, int32s, int64s, custom, st.sampled_from(SegmentState))
    | st.builds(PartitionDeleteMetadata, tips, int32s, int64s, st.sampled_from(PartitionDeleteState))
)


@settings(max_examples=300, deadline=None)
@given(record=records)
def test_round_trip(record: SegmentMetadata | SegmentMetadataUpdate | PartitionDeleteMetadata) -> None:
    value = encode_metadata(record)
    assert decode_metadata(value) == record
    assert encode_metadata(decode_metadata(value)) == value


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=120))
def test_arbitrary_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    for value in (data, SEGMENT_BYTES[:3] + data, UPDATE_BYTES[:40] + data):
        with contextlib.suppress(ProtocolError):
            decode_metadata(value)


# -- the metadata topic's partitioner and Kafka's Uuid text -----------------------------------------

# topic id (Uuid.toString), partition, Objects.hash(lsb, msb, partition), partition of 1, 3 and 50
JAVA_VECTORS = [
    ("AAAAAAAAAAAAAAAAAAAAAQ", 0, 30752, 0, 1, 35),
    ("AAAAAAAAAAAAAAAAAAAAAQ", 2147483647, -2147452897, 0, 1, 45),
    ("MWJ6FHTfRYy67jzwZdeqSQ", 0, 1763308608, 0, 1, 42),
    ("MWJ6FHTfRYy67jzwZdeqSQ", 1, 1763308609, 0, 2, 45),
    ("MWJ6FHTfRYy67jzwZdeqSQ", 7, 1763308615, 0, 0, 26),
    ("MWJ6FHTfRYy67jzwZdeqSQ", 49, 1763308657, 0, 2, 8),
    ("tqimKeZwStOEOwRzT3L5oQ", 0, -351864841, 0, 2, 15),
    ("tqimKeZwStOEOwRzT3L5oQ", 7, -351864834, 0, 0, 30),
    ("tqimKeZwStOEOwRzT3L5oQ", 2147483647, 1795618806, 0, 1, 17),
    ("_____________________w", 1, 29792, 0, 1, 30),
    ("_____________________w", 49, 29840, 0, 2, 8),
    ("gAAAAAAAAAAAAAAAAAAAAA", 1, -2147453856, 0, 0, 48),
    ("gAAAAAAAAAAAAAAAAAAAAA", 2147483647, 29790, 0, 0, 20),
]


def _java_objects_hash(topic_id: uuid.UUID, partition: int) -> int:
    """Objects.hash(lsb, msb, partition) again, written out step by step for the vectors' middle column."""

    def signed64(v: int) -> int:
        return v - (1 << 64) if v >= 1 << 63 else v

    def long_hash(v: int) -> int:  # Long.hashCode: (int) (v ^ (v >>> 32))
        return (v ^ ((v & (2**64 - 1)) >> 32)) & 0xFFFFFFFF

    msb, lsb = signed64(topic_id.int >> 64), signed64(topic_id.int & (2**64 - 1))
    h = (((31 + long_hash(lsb)) * 31 + long_hash(msb)) * 31 + partition) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize(("text", "partition", "objects_hash", "p1", "p3", "p50"), JAVA_VECTORS)
def test_metadata_partition_matches_java(
    text: str, partition: int, objects_hash: int, p1: int, p3: int, p50: int
) -> None:
    """Vectors from this program (javac/java -cp kafka-clients.jar:slf4j-api.jar)::

    int hash = Objects.hash(id.getLeastSignificantBits(), id.getMostSignificantBits(), partition);
    byte[] b = {(byte) (hash >> 24), (byte) (hash >> 16), (byte) (hash >> 8), (byte) hash};
    return Utils.toPositive(Utils.murmur2(b)) % n;   // id = Uuid.fromString(text)
    """
    topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    assert kafka_uuid_str(topic_id) == text
    assert _java_objects_hash(topic_id, partition) == objects_hash
    assert [metadata_partition(topic_id, partition, n) for n in (1, 3, 50)] == [p1, p3, p50]


def test_kafka_uuid_text_and_halves() -> None:
    # Java: Uuid.fromString("MWJ6FHTfRYy67jzwZdeqSQ") has msb 3558540883854837132, lsb -4976973534999369143
    assert TOPIC_ID.int >> 64 == 3558540883854837132
    assert TOPIC_ID.int & (2**64 - 1) == -4976973534999369143 + 2**64
    assert kafka_uuid_str(TOPIC_ID) == "MWJ6FHTfRYy67jzwZdeqSQ"
    assert kafka_uuid_str(SEGMENT_ID) == "tqimKeZwStOEOwRzT3L5oQ"


def test_metadata_partition_needs_partitions() -> None:
    with pytest.raises(ValueError):
        metadata_partition(TOPIC_ID, 0, 0)
