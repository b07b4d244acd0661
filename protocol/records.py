"""RecordBatch v2 (magic 2): the one record format minikafka speaks; wire form = disk form.

Batch layout (all integers big-endian; offsets relative to the batch start)::

    off size field
      0   8  baseOffset            broker-assigned; outside the CRC
      8   4  batchLength           bytes after this field = total size - 12 (LOG_OVERHEAD)
     12   4  partitionLeaderEpoch  broker-stamped; outside the CRC; clients send -1
     16   1  magic                 always 2
     17   4  crc                   CRC-32C (Castagnoli) of bytes [21, end)
     21   2  attributes            bits 0-2 codec, 3 timestampType (1 = LogAppendTime),
                                   4 transactional, 5 control, 6 hasDeleteHorizonMs
     23   4  lastOffsetDelta
     27   8  baseTimestamp
     35   8  maxTimestamp
     43   8  producerId            -1 when not idempotent
     51   2  producerEpoch
     53   4  baseSequence
     57   4  recordCount
     61   ..  records              one compressed stream when codec != 0

Record layout (varints are zigzag, see `protocol.varint`)::

    length varint (bytes after this field), attributes int8 (unused, 0),
    timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, then per header:
        keyLength varint, key (UTF-8), valueLength varint (-1 = null), value

Because baseOffset and partitionLeaderEpoch sit outside the CRC, the produce path
validates with one C CRC call per batch (`validate_batches`) and assigns offsets
by patching 12 bytes (`patch_base_offset`); records are never decoded there.

Errors: `validate_batches` raises `CorruptRecordError` (maps to CORRUPT_MESSAGE);
the decoders (`read_header`, `decode_batch`) raise `ProtocolError`;
`scan_valid_prefix` never raises on bad data. Builders raise `ValueError` for
arguments that cannot be encoded.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import crc32c as _crc32c

from protocol import codecs
from protocol.errors import CorruptRecordError, ProtocolError
from protocol.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

BytesLike = bytes | bytearray | memoryview

MAGIC = 2
RECORD_BATCH_OVERHEAD = 61
LOG_OVERHEAD = 12
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Default bound on a batch's decompressed records (decompression bomb guard).
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35
_INT32_MAX = (1 << 31) - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == RECORD_BATCH_OVERHEAD
# baseOffset (skipped), batchLength, partitionLeaderEpoch (skipped), magic: the fields whose
# offsets are the same in every message format, so a bad magic is reported as such.
_PREFIX = struct.Struct(">8xi4xb")
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")

# length(1) + attributes(1) + timestampDelta(1) + offsetDelta(1) + keyLength(1) + valueLength(1)
# + headerCount(1): no record takes fewer bytes, which bounds a claimed record count.
_MIN_RECORD_SIZE = 7


def crc32c(data: BytesLike) -> int:
    """CRC-32C (Castagnoli) of ``data``, computed in C; crc32c(b"123456789") == 0xE3069283."""
    return _crc32c.crc32c(data)


@dataclass(slots=True, frozen=True)
class BatchHeader:
    """The 61-byte header of one batch, plus ``position``: its byte offset in the buffer read."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def end(self) -> int:
        """Position just past this batch."""
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def last_sequence(self) -> int:
        """``base_sequence + last_offset_delta``, wrapping past INT32_MAX to 0 as Kafka does.

        -1 (no sequence) stays -1.
        """
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        if self.base_sequence > _INT32_MAX - self.last_offset_delta:
            return self.last_offset_delta - (_INT32_MAX - self.base_sequence) - 1
        return self.base_sequence + self.last_offset_delta

    def offset_of(self, record: Record) -> int:
        """Absolute offset of a record of this batch."""
        return self.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        """Timestamp a consumer sees: maxTimestamp under LogAppendTime, else base + delta."""
        if self.attributes & TIMESTAMP_TYPE_BIT:
            return self.max_timestamp
        return self.base_timestamp + record.timestamp_delta


@dataclass(slots=True)
class Record:
    """One record of a batch, offsets and timestamps relative to the batch header.

    Use `BatchHeader.offset_of` / `BatchHeader.timestamp_of` for absolute values.
    ``attributes`` is the unused record attribute byte (0..255).
    """

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


def read_header(buf: BytesLike, pos: int = 0) -> BatchHeader:
    """Parse the batch header at ``pos``; `ProtocolError` if under 61 bytes remain or magic != 2.

    Checks nothing else (neither batchLength nor CRC).
    """
    if pos < 0 or len(buf) - pos < RECORD_BATCH_OVERHEAD:
        raise ProtocolError(f"need {RECORD_BATCH_OVERHEAD} bytes for a batch header at position {pos}")
    header = BatchHeader(pos, *_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise ProtocolError(f"unsupported record batch magic {header.magic} at position {pos}")
    return header


def _check_batch(mv: memoryview, pos: int, check_crc: bool) -> BatchHeader | str:
    """The header of the well-formed batch at ``pos``, or why it is not one."""
    n = len(mv)
    if n - pos < _PREFIX.size:
        return f"truncated batch at position {pos}: {n - pos} bytes left"
    batch_length, magic = _PREFIX.unpack_from(mv, pos)
    if magic != MAGIC:
        return f"unsupported record batch magic {magic} at position {pos}"
    if batch_length < MIN_BATCH_LENGTH:
        return f"batch length {batch_length} below {MIN_BATCH_LENGTH} at position {pos}"
    end = pos + LOG_OVERHEAD + batch_length
    if end > n:
        return f"truncated batch at position {pos}: needs {end - pos} bytes, {n - pos} left"
    header = BatchHeader(pos, *_HEADER.unpack_from(mv, pos))
    if header.record_count < 0:
        return f"negative record count {header.record_count} at position {pos}"
    if header.last_offset_delta < 0:
        return f"negative last offset delta {header.last_offset_delta} at position {pos}"
    if check_crc:
        actual = crc32c(mv[pos + _ATTRIBUTES_OFFSET : end])
        if actual != header.crc:
            return f"CRC mismatch at position {pos}: stored {header.crc:#010x}, computed {actual:#010x}"
    return header


def validate_batches(buf: BytesLike, *, check_crc: bool = True) -> list[BatchHeader]:
    """Check a record set (batches back to back, as Produce carries them) without decoding records.

    Raises `CorruptRecordError` for an empty buffer, a trailing partial batch,
    batchLength < 49, magic != 2, a negative recordCount or lastOffsetDelta, or
    (with ``check_crc``) a CRC mismatch. Cost: one struct unpack and one C CRC
    call per batch; the payload is not copied.
    """
    headers: list[BatchHeader] = []
    with memoryview(buf) as mv:
        if not mv:
            raise CorruptRecordError("empty record set")
        pos = 0
        while pos < len(mv):
            result = _check_batch(mv, pos, check_crc)
            if isinstance(result, str):
                raise CorruptRecordError(result)
            headers.append(result)
            pos = result.end
    return headers


def scan_valid_prefix(buf: BytesLike) -> tuple[list[BatchHeader], int]:
    """Crash recovery: headers of the leading run of CRC-valid batches and that run's byte length.

    Stops without raising at the first partial, zero-filled, garbage or
    CRC-failing batch; everything from there on is to be truncated.
    """
    headers: list[BatchHeader] = []
    pos = 0
    with memoryview(buf) as mv:
        while pos < len(mv):
            result = _check_batch(mv, pos, True)
            if isinstance(result, str):
                break
            headers.append(result)
            pos = result.end
    return headers, pos


def _read_whole_header(buf: BytesLike, pos: int) -> BatchHeader:
    """`read_header`, also requiring the whole batch to be inside ``buf``."""
    header = read_header(buf, pos)
    if header.batch_length < MIN_BATCH_LENGTH or header.end > len(buf):
        raise ProtocolError(f"batch at position {pos} has a bad length {header.batch_length}")
    return header


def patch_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Stamp baseOffset (bytes 0-7) and partitionLeaderEpoch (bytes 12-15) of the batch at ``pos``.

    Both fields are outside the CRC, so the batch stays valid.
    """
    struct.pack_into(">q", buf, pos, base_offset)
    struct.pack_into(">i", buf, pos + 12, leader_epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp_ms: int) -> None:
    """Turn the batch at ``pos`` into a LogAppendTime batch stamped ``timestamp_ms``; recompute the CRC.

    As Kafka does: sets attribute bit 3 and maxTimestamp; the records' timestamp
    deltas stay untouched (consumers use maxTimestamp for every record).
    Raises `ProtocolError` if no whole batch starts at ``pos``.
    """
    end = _read_whole_header(buf, pos).end
    (attributes,) = _INT16.unpack_from(buf, pos + _ATTRIBUTES_OFFSET)
    _INT16.pack_into(buf, pos + _ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, timestamp_ms)
    with memoryview(buf) as mv:
        _UINT32.pack_into(buf, pos + _CRC_OFFSET, crc32c(mv[pos + _ATTRIBUTES_OFFSET : end]))


def _read_blob(data: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = decode_varint(data, pos)
    if length == -1:
        return None, pos
    if length < -1 or pos + length > end:
        raise ProtocolError(f"bad {what} length {length}")
    return data[pos : pos + length], pos + length


def _decode_records(data: bytes, count: int) -> list[Record]:
    n = len(data)
    if count > n // _MIN_RECORD_SIZE:
        raise ProtocolError(f"record count {count} does not fit in {n} bytes")
    records: list[Record] = []
    pos = 0
    for _ in range(count):
        length, pos = decode_varint(data, pos)
        end = pos + length
        if length < _MIN_RECORD_SIZE - 1 or end > n:
            raise ProtocolError(f"bad record length {length}")
        attributes = data[pos]
        timestamp_delta, pos = decode_varlong(data, pos + 1)
        offset_delta, pos = decode_varint(data, pos)
        key, pos = _read_blob(data, pos, end, "key")
        value, pos = _read_blob(data, pos, end, "value")
        header_count, pos = decode_varint(data, pos)
        if header_count < 0 or header_count > (end - pos) // 2:
            raise ProtocolError(f"bad header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(header_count):
            key_length, pos = decode_varint(data, pos)
            if key_length < 0 or pos + key_length > end:
                raise ProtocolError(f"bad header key length {key_length}")
            try:
                header_key = data[pos : pos + key_length].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProtocolError(f"header key is not UTF-8: {exc}") from exc
            header_value, pos = _read_blob(data, pos + key_length, end, "header value")
            headers.append((header_key, header_value))
        if pos != end:
            raise ProtocolError(f"record declares {length} bytes but holds {length + pos - end}")
        records.append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    if pos != n:
        raise ProtocolError(f"{n - pos} bytes left after {count} records")
    return records


def decode_batch(
    buf: BytesLike,
    pos: int = 0,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    check_crc: bool = True,
) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``pos``: header plus every record, decompressed.

    Bounded against hostile input: decompressed size is capped at
    ``max_decompressed``, counts and lengths are checked against the bytes that
    remain, and the records must fill the payload exactly. Anything malformed
    (including a CRC mismatch when ``check_crc``, an unknown codec or a header
    key that is not UTF-8) raises `ProtocolError`.
    """
    header = _read_whole_header(buf, pos)
    end = header.end
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise ProtocolError(f"negative record count or last offset delta at position {pos}")
    with memoryview(buf) as mv:
        if check_crc and crc32c(mv[pos + _ATTRIBUTES_OFFSET : end]) != header.crc:
            raise ProtocolError(f"CRC mismatch in batch at position {pos}")
        payload = mv[pos + RECORD_BATCH_OVERHEAD : end]
        try:
            if header.codec == codecs.NONE:
                data = payload.tobytes()
            else:
                data = codecs.decompress(header.codec, payload, max_decompressed)
        finally:
            payload.release()
    return header, _decode_records(data, header.record_count)


def _encode_blob(out: bytearray, blob: bytes | None) -> None:
    if blob is None:
        out += b"\x01"  # varint -1
    else:
        out += encode_varint(len(blob))
        out += blob


def _encode_record(out: bytearray, record: Record) -> None:
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += encode_varlong(record.timestamp_delta)
    body += encode_varint(record.offset_delta)
    _encode_blob(body, record.key)
    _encode_blob(body, record.value)
    body += encode_varint(len(record.headers))
    for header_key, header_value in record.headers:
        _encode_blob(body, header_key.encode("utf-8"))
        _encode_blob(body, header_value)
    out += encode_varint(len(body))
    out += body


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    codec: int = codecs.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: int = CREATE_TIME,
) -> bytes:
    """Encode one batch with a correct CRC.

    Records carry their own ``offset_delta`` (increasing, normally 0, 1, 2, ...)
    and ``timestamp_delta``. ``base_timestamp`` defaults to the current time in
    ms. lastOffsetDelta is the largest offset delta; maxTimestamp is
    ``base_timestamp`` + the largest timestamp delta. The payload is compressed
    with ``codec`` even when that does not make it smaller. Raises `ValueError`
    for an empty record list or a value that does not fit its field.
    """
    if not records:
        raise ValueError("a batch needs at least one record")
    if codec not in codecs.CODEC_NAMES:
        raise ValueError(f"unknown compression codec {codec}")
    if base_timestamp is None:
        base_timestamp = time.time_ns() // 1_000_000
    payload = bytearray()
    for record in records:
        _encode_record(payload, record)
    body = codecs.compress(codec, payload) if codec != codecs.NONE else payload
    attributes = codec
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += body
    try:
        _HEADER.pack_into(
            out,
            0,
            base_offset,
            len(out) - LOG_OVERHEAD,
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            max(r.offset_delta for r in records),
            base_timestamp,
            base_timestamp + max(r.timestamp_delta for r in records),
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from exc
    with memoryview(out) as mv:
        _UINT32.pack_into(out, _CRC_OFFSET, crc32c(mv[_ATTRIBUTES_OFFSET:]))
    return bytes(out)
