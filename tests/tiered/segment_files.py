"""Real segments for the tiered-storage tests: a `PartitionLog` written, rolled, and its files as `SegmentFiles`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from broker.producer_state import PartitionProducers
from broker.tiered.segment_store import SegmentFiles
from protocol.records import Record, build_batch, validate_batches
from storage import naming
from storage.checkpoint import format_checkpoint
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from storage.txn_index import AbortedTxn

CONFIG = LogConfig(segment_bytes=16_000, index_interval_bytes=400)
PRODUCER_ID = 4242


@dataclass
class WrittenLog:
    """A partition log with closed segments (the first has a transaction index) and an active one."""

    log: PartitionLog
    producer_snapshot: bytes

    def files(self, index: int) -> tuple[SegmentFiles, int, int]:
        """``(files, base offset, next segment's base offset)`` of segment ``index``, as the copier gives them."""
        segment = self.log.segments[index]
        base, end = segment.base_offset, segment.next_offset
        directory = self.log.directory
        epochs = [(e, start) for e, start in self.log.leader_epochs.entries if start < end]
        files = SegmentFiles(
            log=Path(naming.segment_file(directory, base, naming.LOG_SUFFIX)),
            offset_index=Path(naming.segment_file(directory, base, naming.INDEX_SUFFIX)),
            time_index=Path(naming.segment_file(directory, base, naming.TIME_INDEX_SUFFIX)),
            txn_index=Path(naming.segment_file(directory, base, naming.TXN_INDEX_SUFFIX)),
            producer_snapshot=self.producer_snapshot,
            leader_epochs=format_checkpoint(epochs),
        )
        return files, base, end


def write_log(directory: Path, batches: int = 120, roll: bool = True) -> WrittenLog:
    """``batches`` idempotent batches of 5 records (~390 bytes each) under leader epochs 0, 1, 2..., one
    aborted transaction recorded in the first segment; rolled at the end unless ``roll`` is False."""
    log = PartitionLog(str(directory / "tiered-topic-0"), CONFIG, now_ms=0)
    producers = PartitionProducers()
    for i in range(batches):
        records = [
            Record(offset_delta=j, timestamp_delta=j, key=b"k%d" % i, value=bytes([65 + i % 26]) * 60)
            for j in range(5)
        ]
        buf = bytearray(
            build_batch(
                records,
                base_timestamp=1_000 + 10 * i,
                producer_id=PRODUCER_ID,
                producer_epoch=0,
                base_sequence=5 * i,
            )
        )
        headers = validate_batches(buf)
        result = log.append(buf, headers, leader_epoch=i // 40, now_ms=10_000)
        log.advance_high_watermark(result.last_offset + 1)
        producers.update(headers[0], result.base_offset)
        if i == 3:
            log.append_aborted_txn(AbortedTxn(PRODUCER_ID, 0, result.last_offset, result.last_offset + 1))
    if roll:
        log.roll()
    return WrittenLog(log, producers.to_snapshot())
