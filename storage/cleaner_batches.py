"""Batches the cleaner writes in place of a source batch (Kafka's MemoryRecords.filterTo output).

- `splice_batch`: the batch with only some of its records, their bytes as they are
  (deltas stay valid: same base offset and base timestamp), recompressed.
- `rebuild_batch`: the batch re-encoded from decoded records, optionally with a
  delete horizon (attribute bit 6 set, baseTimestamp = the horizon, record
  timestamp deltas rebased so record timestamps do not change).
- `empty_batch`: a header-only batch (recordCount 0) standing for a batch whose
  records all went, kept so a producer's last sequence survives (RETAIN_EMPTY).
- `delete_horizon`: a batch's delete horizon, None if it has none.

Every output keeps the source's base offset, lastOffsetDelta, producer id,
epoch, base sequence, partition leader epoch and transactional/control bits.
"""

from __future__ import annotations

import struct

from protocol import codecs
from protocol.records import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    Record,
    build_batch,
    crc32c,
)
from storage.record_scan import Scanned

_HEADER = struct.Struct(">qiibIhiqqqhii")
_UINT32 = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")


def splice_batch(h: BatchHeader, data: bytes, payload: bytes, kept: list[Scanned]) -> tuple[bytes, int]:
    """``h`` with only the ``kept`` records: their bytes as they are, recompressed; returns (bytes, max ts)."""
    body = b"".join(payload[r[4] : r[5]] for r in kept)
    if h.codec != codecs.NONE:
        body = codecs.compress(h.codec, body)
    out = bytearray(data[:RECORD_BATCH_OVERHEAD])
    out += body
    if h.timestamp_type == LOG_APPEND_TIME:
        max_ts = h.max_timestamp
    else:
        max_ts = h.base_timestamp + max(r[1] for r in kept)
    _INT32.pack_into(out, 8, len(out) - LOG_OVERHEAD)
    _INT64.pack_into(out, 35, max_ts)
    _INT32.pack_into(out, 57, len(kept))
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out), max_ts


def empty_batch(h: BatchHeader) -> bytes:
    """A header-only batch standing for ``h`` (Kafka's writeEmptyHeader): same offsets, producer
    metadata and flags, no codec, both timestamps = its max timestamp, recordCount 0."""
    attributes = h.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    out = bytearray(RECORD_BATCH_OVERHEAD)
    _HEADER.pack_into(
        out,
        0,
        h.base_offset,
        RECORD_BATCH_OVERHEAD - LOG_OVERHEAD,
        h.partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        h.last_offset_delta,
        h.max_timestamp,
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        0,
    )
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def rebuild_batch(h: BatchHeader, kept: list[Record], horizon: int | None) -> tuple[bytes, int]:
    """Re-encode ``kept`` (records of the batch ``h``) as one batch; returns (bytes, max timestamp).

    Record timestamps are preserved; with ``horizon`` the base timestamp becomes the
    horizon and attribute bit 6 is set.
    """
    stamps = [h.base_timestamp + r.timestamp_delta for r in kept]
    base_ts = horizon if horizon is not None else stamps[0]
    records = [
        Record(r.offset_delta, ts - base_ts, r.key, r.value, r.headers, r.attributes)
        for r, ts in zip(kept, stamps, strict=True)
    ]
    out = bytearray(
        build_batch(
            records,
            base_offset=h.base_offset,
            base_timestamp=base_ts,
            codec=h.codec,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            partition_leader_epoch=h.partition_leader_epoch,
            is_transactional=h.is_transactional,
            is_control=h.is_control,
            timestamp_type=h.timestamp_type,
        )
    )
    max_ts = h.max_timestamp if h.timestamp_type == LOG_APPEND_TIME else max(stamps)
    if horizon is not None:
        (attributes,) = _INT16.unpack_from(out, 21)
        _INT16.pack_into(out, 21, attributes | DELETE_HORIZON_BIT)
    _INT32.pack_into(out, 23, h.last_offset_delta)  # keep the last offset (and so the last sequence)
    _INT64.pack_into(out, 35, max_ts)
    _UINT32.pack_into(out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out), max_ts


def delete_horizon(h: BatchHeader) -> int | None:
    """The batch's delete horizon (its base timestamp when attribute bit 6 is set), else None."""
    return h.base_timestamp if h.attributes & DELETE_HORIZON_BIT else None
