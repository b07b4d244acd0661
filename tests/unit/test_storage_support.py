"""Helpers shared by the storage tests (no tests here)."""

from __future__ import annotations

from protocol.records import BatchHeader, Record, build_batch, validate_batches
from storage.partition_log import AppendResult, PartitionLog


def make_batch(
    records: int = 1,
    *,
    value_size: int = 10,
    timestamp: int = 1_000,
    timestamp_step: int = 1,
    codec: int = 0,
    fill: int = 0x61,
) -> bytes:
    """One valid batch of ``records`` records with values of ``value_size`` bytes."""
    recs = [
        Record(offset_delta=i, timestamp_delta=i * timestamp_step, key=None, value=bytes([fill]) * value_size)
        for i in range(records)
    ]
    return build_batch(recs, base_timestamp=timestamp, codec=codec)


def record_set(*batches: bytes) -> tuple[bytearray, list[BatchHeader]]:
    buf = bytearray(b"".join(batches))
    return buf, validate_batches(buf)


def append(
    log: PartitionLog, *batches: bytes, epoch: int = 0, now_ms: int = 10_000, hw: bool = True
) -> AppendResult:
    """Append ``batches`` as one record set; advance the HW to the new LEO unless ``hw`` is False."""
    buf, headers = record_set(*batches)
    result = log.append(buf, headers, leader_epoch=epoch, now_ms=now_ms)
    if hw:
        log.advance_high_watermark(result.last_offset + 1)
    return result


def batches_in(data: bytes) -> list[BatchHeader]:
    return validate_batches(data) if data else []
