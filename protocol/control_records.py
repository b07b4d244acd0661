"""Control batches: the transaction markers (COMMIT / ABORT) a partition leader writes.

A control batch is a RecordBatch v2 (`protocol.records`) with attribute bits
4 (transactional) and 5 (control) set, the producer's id and epoch, baseSequence
-1 and one record (offset delta 0, timestamp delta 0, no headers) whose key and
value are (big-endian, Kafka's ControlRecordType / EndTransactionMarker)::

    key   (4 bytes)  INT16 version (0)  INT16 type (ABORT = 0, COMMIT = 1; Kafka's KRaft
                                         types 2..6 never appear in topic partitions)
    value (6 bytes)  INT16 version (0)  INT32 coordinatorEpoch

so a marker batch is 61 + 17 = 78 bytes, uncompressed, CreateTime. Readers
accept a key or value version above 0 and read the fields above (Kafka does
the same); a negative version or a short key/value is malformed.

Errors: `parse_control_key` / `parse_end_txn_value` raise `ProtocolError`;
`marker_type` never raises on bad data (it answers None).
"""

from __future__ import annotations

import struct

from protocol import codecs
from protocol.errors import ProtocolError
from protocol.records import (
    NO_PARTITION_LEADER_EPOCH,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    Record,
    build_batch,
)
from protocol.varint import decode_varint, decode_varlong

BytesLike = bytes | bytearray | memoryview

ABORT = 0
COMMIT = 1
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
"""Kafka's ControlRecordType names by type id (any other id is Kafka's UNKNOWN)."""

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
CONTROL_KEY_SIZE = 4
END_TXN_MARKER_VALUE_SIZE = 6

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def control_key(control_type: int) -> bytes:
    """The 4-byte key of a control record of ``control_type``."""
    return _KEY.pack(CONTROL_KEY_VERSION, control_type)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """The 6-byte value of an end-transaction marker record."""
    return _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_control_key(key: BytesLike | None) -> int:
    """The control type in a control record's key; `ProtocolError` if it is not a valid key."""
    if key is None or len(key) < CONTROL_KEY_SIZE:
        raise ProtocolError(f"control record key of {0 if key is None else len(key)} bytes, need 4")
    version, control_type = _KEY.unpack_from(key, 0)
    if version < 0:
        raise ProtocolError(f"control record key version {version}")
    return control_type


def parse_end_txn_value(value: BytesLike | None) -> int:
    """The coordinator epoch in an end-transaction marker's value; `ProtocolError` if malformed."""
    if value is None or len(value) < END_TXN_MARKER_VALUE_SIZE:
        raise ProtocolError(
            f"end transaction marker value of {0 if value is None else len(value)} bytes, need 6"
        )
    version, coordinator_epoch = _VALUE.unpack_from(value, 0)
    if version < 0:
        raise ProtocolError(f"end transaction marker version {version}")
    return coordinator_epoch


def build_marker_batch(
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """One COMMIT or ABORT marker batch of ``producer_id``, base offset 0 (the log assigns it).

    baseTimestamp = maxTimestamp = ``timestamp_ms``; the CRC is valid. Raises
    `ValueError` for values that do not fit their fields.
    """
    try:
        record = Record(
            offset_delta=0,
            timestamp_delta=0,
            key=control_key(COMMIT if commit else ABORT),
            value=end_txn_marker_value(coordinator_epoch),
        )
        return bytearray(
            build_batch(
                [record],
                base_offset=0,
                base_timestamp=timestamp_ms,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=NO_SEQUENCE,
                partition_leader_epoch=partition_leader_epoch,
                is_transactional=True,
                is_control=True,
            )
        )
    except struct.error as exc:  # the key or value field did not fit
        raise ValueError(f"marker field out of range: {exc}") from exc


def _first_record(payload: BytesLike, pos: int, end: int) -> tuple[bytes | None, bytes | None]:
    """The key and value of the record at ``pos`` of ``payload`` (records end at ``end``)."""
    length, p = decode_varint(payload, pos)
    record_end = p + length
    if length < 6 or record_end > end:
        raise ProtocolError(f"bad record length {length}")
    _, p = decode_varlong(payload, p + 1)  # attributes byte, then timestamp delta
    _, p = decode_varint(payload, p)  # offset delta
    fields: list[bytes | None] = []
    for what in ("key", "value"):
        size, p = decode_varint(payload, p)
        if size < 0:
            fields.append(None)
            continue
        if p + size > record_end:
            raise ProtocolError(f"bad {what} length {size}")
        fields.append(bytes(payload[p : p + size]))
        p += size
    return fields[0], fields[1]


def _control_record(data: BytesLike, h: BatchHeader) -> tuple[bytes | None, bytes | None]:
    """The first record of the control batch ``h`` (at ``h.position`` in ``data``); ProtocolError if
    there is none or it is unreadable. No CRC check; a compressed control batch (Kafka never writes
    one) is decompressed first."""
    start = h.position + RECORD_BATCH_OVERHEAD
    end = h.position + h.size
    if h.record_count < 1 or end > len(data):
        raise ProtocolError("no whole control record")
    if h.codec == codecs.NONE:
        with memoryview(data) as mv:
            return _first_record(mv, start, end)
    with memoryview(data) as mv:
        payload = codecs.decompress(h.codec, mv[start:end], 1024 * 1024)
    return _first_record(payload, 0, len(payload))


def marker_type(data: BytesLike, h: BatchHeader) -> int | None:
    """The control type of the control batch ``h`` (at ``h.position`` in ``data``), None if unreadable.

    Reads the first record's key (ABORT 0, COMMIT 1, other types as stored); the batch must lie
    whole inside ``data``.
    """
    try:
        return parse_control_key(_control_record(data, h)[0])
    except ProtocolError:
        return None


def read_marker(data: BytesLike, h: BatchHeader) -> tuple[int | None, int]:
    """(control type, coordinator epoch) of the COMMIT/ABORT marker ``h`` (at ``h.position`` in
    ``data``), from one read of its record: the type None and the epoch -1 where unreadable; the
    batch must lie whole inside ``data``."""
    try:
        key, value = _control_record(data, h)
    except ProtocolError:
        return None, -1
    try:
        kind: int | None = parse_control_key(key)
    except ProtocolError:
        kind = None
    try:
        epoch = parse_end_txn_value(value)
    except ProtocolError:
        epoch = -1
    return kind, epoch
