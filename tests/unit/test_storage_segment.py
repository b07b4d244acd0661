"""LogSegment on its own: appends, reads with a position limit, big batches, chunked recovery."""

from __future__ import annotations

import os
import random

import pytest

from protocol.records import patch_base_offset, validate_batches
from storage.config import LogConfig
from storage.errors import CorruptIndexError
from storage.fs import FileSystem
from storage.segment import LOG_RESERVE_BYTES, VIEW_MIN_BYTES, LogSegment
from tests.unit.test_storage_support import make_batch

CONFIG = LogConfig(index_interval_bytes=500)


def _segment(tmp_path, base: int = 1000, config: LogConfig = CONFIG) -> LogSegment:
    return LogSegment.create(FileSystem(), str(tmp_path), base, config, now_ms=0)


def _fill(
    seg: LogSegment, sizes: list[tuple[int, int]], *, timestamp: int = 5_000
) -> list[tuple[int, int, int]]:
    """Append one batch per (records, value_size); returns (base, last, position) per batch."""
    out = []
    offset = seg.next_offset
    for i, (records, value_size) in enumerate(sizes):
        buf = bytearray(make_batch(records, value_size=value_size, timestamp=timestamp + 10 * i))
        (h,) = validate_batches(buf)
        patch_base_offset(buf, 0, offset, 0)
        last = offset + h.last_offset_delta
        pos = seg.append(offset, last, h.max_timestamp, last, buf, batches=[(0, last, h.max_timestamp)])
        out.append((offset, last, pos))
        offset = last + 1
    return out


def test_append_returns_positions_and_tracks_offsets(tmp_path) -> None:
    seg = _segment(tmp_path)
    assert seg.is_empty and seg.next_offset == 1000 and seg.largest_timestamp == -1
    batches = _fill(seg, [(2, 10), (3, 10), (1, 10)])
    assert [b[:2] for b in batches] == [(1000, 1001), (1002, 1004), (1005, 1005)]
    assert batches[0][2] == 0 and batches[1][2] > 0
    assert seg.next_offset == 1006 and seg.largest_timestamp == 5_020
    with pytest.raises(ValueError):
        seg.append(1003, 1003, 0, 1003, make_batch(1))  # offsets must increase
    with pytest.raises(ValueError):
        seg.append(1006 + 2**31, 1006 + 2**31, 0, 0, make_batch(1))  # relative offset must fit int32
    seg.close()


def test_append_without_batch_info_indexes_whole_write(tmp_path) -> None:
    seg = _segment(tmp_path, config=LogConfig(index_interval_bytes=0))
    seg.append(1000, 1000, 10, 1000, make_batch(1))
    seg.append(1001, 1004, 20, 1003, make_batch(1) * 4)
    assert [(int(r), int(p)) for r, p in seg.offset_index.entries()] == [(4, len(make_batch(1)))]
    assert [(int(t), int(r)) for t, r in seg.time_index.entries()] == [(20, 3)]
    seg.close()


def test_read_respects_max_position(tmp_path) -> None:
    seg = _segment(tmp_path)
    batches = _fill(seg, [(1, 100)] * 10)
    size = batches[1][2]
    assert len(seg.read(1000, 10**6)) == 10 * size
    assert len(seg.read(1000, 10**6, max_position=3 * size)) == 3 * size
    assert seg.read(1003, 10**6, max_position=3 * size) == b""
    assert len(seg.read(1002, 0, max_position=3 * size)) == size
    assert seg.read(2000, 10**6) == b""
    assert seg.translate_offset(1004) is not None and seg.translate_offset(1004).position == 4 * size  # type: ignore[union-attr]
    seg.close()


@pytest.mark.parametrize("interval", [4096, 10**8])
def test_read_stops_at_the_last_whole_batch_below_max_bytes(tmp_path, interval: int) -> None:
    """Far from the last indexed position (large batches), boundaries are found header by header;
    with a huge index interval only the first batch is indexed, so the walk crosses several."""
    seg = _segment(tmp_path, config=LogConfig(index_interval_bytes=interval))
    batches = _fill(seg, [(1, 30_000)] * 4 + [(40, 10)] * 3 + [(1, 30_000)] * 3)
    starts = [pos for _, _, pos in batches] + [seg.size]
    for first in (0, 2, 5):
        start = starts[first]
        for cut in range(first + 1, len(starts)):
            for slack in (0, 1, starts[cut + 1] - starts[cut] - 1 if cut + 1 < len(starts) else 0):
                data = seg.read(batches[first][0], starts[cut] - start + slack)
                assert len(data) == starts[cut] - start, (first, cut, slack)
    assert len(seg.read(1000, 10)) == starts[1]  # at least one batch
    assert seg.read(1000, 10, min_one=False) == b""
    seg.close()


def test_batches_larger_than_scan_chunk(tmp_path) -> None:
    seg = _segment(tmp_path)
    shapes = [
        (1 + i % 3, 7_000 + 1_000 * i) for i in range(8)
    ]  # batches of 7-40 KB, over the 16 KiB scan chunk
    batches = _fill(seg, shapes)
    for base, last, _ in batches:
        for offset in (base, last):
            data = seg.read(offset, 1)
            assert [(h.base_offset, h.last_offset) for h in validate_batches(data)] == [(base, last)]
    assert [h.base_offset for h in seg.iter_headers()] == [b[0] for b in batches]
    assert seg.find_offset_for_timestamp(5_000 + 10 * 5) == (batches[5][0], 5_000 + 10 * 5)
    seg.close()


@pytest.mark.parametrize("chunk_size", [1, 61, 100, 333, 4096, 1 << 20])
def test_recover_in_chunks_rebuilds_identical_indexes(tmp_path, chunk_size: int) -> None:
    rng = random.Random(chunk_size)
    seg = _segment(tmp_path)
    _fill(seg, [(rng.randint(1, 5), rng.randint(0, 900)) for _ in range(60)])
    expected = (seg.offset_index.entries().tolist(), seg.time_index.entries().tolist(), seg.next_offset)
    size = seg.size
    seen = []
    assert seg.recover(lambda h: seen.append(h.base_offset), chunk_size=chunk_size) == 0
    assert (
        seg.offset_index.entries().tolist(),
        seg.time_index.entries().tolist(),
        seg.next_offset,
    ) == expected
    assert seg.size == size and len(seen) == 60
    seg.close()


@pytest.mark.parametrize("chunk_size", [100, 1000, 1 << 20])
def test_recover_in_chunks_cuts_torn_tail(tmp_path, chunk_size: int) -> None:
    seg = _segment(tmp_path)
    _fill(seg, [(2, 300)] * 20)  # 20 batches of the same size
    size = seg.size
    batch_size = size // 20
    seg.close()
    path = os.path.join(str(tmp_path), "00000000000000001000.log")
    with open(path, "rb") as f:
        original = f.read()
    for cut in (size - 1, 10 * batch_size + 13, 10 * batch_size + 5, 3 * batch_size, 7):
        os.truncate(path, cut)
        junk = bytearray(os.urandom(50))
        if junk[0] == original[cut]:
            junk[0] ^= 0xFF  # else a batch cut by one byte could end whole and valid again
        with open(path, "ab") as f:
            f.write(junk)
        seg = LogSegment.open(FileSystem(), str(tmp_path), 1000, CONFIG, now_ms=0)
        kept = cut // batch_size
        assert seg.recover(chunk_size=chunk_size) == cut + 50 - kept * batch_size
        assert seg.next_offset == 1000 + 2 * kept and seg.size == kept * batch_size
        seg.close()


def test_load_detects_index_entry_not_at_a_batch_start(tmp_path) -> None:
    seg = _segment(tmp_path)
    _fill(seg, [(1, 600)] * 5)
    seg.seal()
    entries = seg.offset_index.entries()
    assert len(entries) >= 2
    seg.close()
    index_path = os.path.join(str(tmp_path), "00000000000000001000.index")
    with open(index_path, "r+b") as f:
        f.seek(8 * (len(entries) - 1) + 4)
        f.write((int(entries[-1]["pos"]) + 1).to_bytes(4, "big"))
    seg = LogSegment.open(FileSystem(), str(tmp_path), 1000, CONFIG, now_ms=0)
    with pytest.raises(CorruptIndexError):
        seg.load()
    assert seg.recover() == 0
    assert seg.offset_index.entries().tolist() == entries.tolist()
    seg.close()


def test_active_segment_reserves_log_blocks_and_seal_gives_them_back(tmp_path) -> None:
    seg = _segment(tmp_path)
    _fill(seg, [(1, 50_000)] * 3)
    path = seg.file_paths()[0]
    assert path.endswith(".log")
    if os.stat(path).st_blocks * 512 < LOG_RESERVE_BYTES:
        pytest.skip("this filesystem did not take the reservation (no fallocate KEEP_SIZE)")
    assert os.path.getsize(path) == seg.size < 200_000
    seg.seal()
    assert os.stat(path).st_blocks * 512 < seg.size + 65536
    seg.close()


def test_read_to_send_serves_large_reads_as_views_of_the_log(tmp_path) -> None:
    seg = _segment(tmp_path)
    batches = _fill(seg, [(1, 100)] * 3 + [(2, 40_000)] * 4)
    small = seg.read(1000, 300, to_send=True)
    assert isinstance(small, bytes) and small == seg.read(1000, 300)
    big = seg.read(1000, 10**6, to_send=True)
    assert isinstance(big, memoryview) and big.readonly
    assert len(big) >= VIEW_MIN_BYTES and bytes(big) == seg.read(1000, 10**6)
    limited = seg.read(1000, 10**6, max_position=batches[5][2], to_send=True)
    assert bytes(limited) == seg.read(1000, 10**6)[: batches[5][2]]
    seg.close()
    seg.delete()
    assert len(validate_batches(big)) == 7  # still readable: the mapping outlives the files
