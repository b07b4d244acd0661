"""`RemoteReader.read` over a real segment in a memory store: the batch holding the offset is found
however large the batches before it, and a batch that does not fit is never skipped."""

from __future__ import annotations

import uuid
from pathlib import Path

from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.metadata_records import SegmentMetadata, SegmentState, TopicIdPartition
from broker.tiered.reader import RemoteReader, segment_ref
from broker.tiered.segment_store import RemoteSegmentStore, SegmentFiles
from protocol.records import validate_batches
from storage import naming
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, make_batch

RECORDS = 200  # per batch, of 1000 bytes: ~200 KB batches, larger than a 64 KiB fetch


async def _uploaded(tmp_path: Path) -> tuple[RemoteReader, SegmentMetadata]:
    log = PartitionLog(str(tmp_path / "t-0"), LogConfig(segment_bytes=50 << 20), now_ms=0)
    for _ in range(6):
        append(log, make_batch(RECORDS, value_size=1000), now_ms=0)
    log.roll(0)
    seg = log.segments[0]
    base, end = seg.base_offset, seg.next_offset
    d = log.directory
    files = SegmentFiles(
        log=Path(naming.segment_file(d, base, naming.LOG_SUFFIX)),
        offset_index=Path(naming.segment_file(d, base, naming.INDEX_SUFFIX)),
        time_index=Path(naming.segment_file(d, base, naming.TIME_INDEX_SUFFIX)),
        txn_index=None,
        producer_snapshot=b"",
        leader_epochs=b"0\n1\n0 0\n",
    )
    md = SegmentMetadata(
        tip=TopicIdPartition("t", uuid.uuid4(), 0),
        segment_id=uuid.uuid4(),
        start_offset=base,
        end_offset=end - 1,
        broker_id=0,
        max_timestamp_ms=seg.largest_timestamp,
        event_timestamp_ms=0,
        segment_leader_epochs=((0, 0),),
        size_in_bytes=seg.size,
        custom_metadata=None,
        state=SegmentState.COPY_SEGMENT_FINISHED,
    )
    segments = RemoteSegmentStore(MemoryObjectStore())
    await segments.copy(segment_ref(md), files)
    log.close()
    return RemoteReader(segments, chunk_bytes=64 << 10), md


async def test_the_batch_holding_the_offset_is_found_behind_large_batches(tmp_path: Path) -> None:
    reader, md = await _uploaded(tmp_path)
    for offset in (0, RECORDS - 1, RECORDS, 3 * RECORDS + 17, 6 * RECORDS - 1):
        data = await reader.read(md, offset, 65536, True)
        assert data is not None
        (header,) = validate_batches(data)  # one whole batch: larger than max_bytes, min_one
        assert header.base_offset <= offset <= header.last_offset


async def test_a_batch_that_does_not_fit_is_not_skipped(tmp_path: Path) -> None:
    reader, md = await _uploaded(tmp_path)
    assert await reader.read(md, 3 * RECORDS + 17, 65536, False) == b""  # nothing this time, not None
    assert await reader.read(md, 6 * RECORDS, 65536, True) is None  # past the segment's last batch
    data = await reader.read(md, RECORDS, 3 * 210_000, True)
    assert [h.base_offset for h in validate_batches(data)][:2] == [RECORDS, 2 * RECORDS]
