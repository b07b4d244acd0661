"""PartitionLog and LogSegment: append, offsets, indexes, rolls, reads, timestamps, reopen, faults."""

from __future__ import annotations

import os
import struct
import threading

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_header, validate_batches
from storage import naming
from storage.config import LogConfig
from storage.errors import KafkaStorageError
from storage.fs import FaultyFileSystem, FileSystem
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, batches_in, make_batch, record_set

SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=300)


def _open(tmp_path, config: LogConfig = SMALL, **kw) -> PartitionLog:
    return PartitionLog(str(tmp_path / "t-0"), config, **kw)


def _offsets(data: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in batches_in(data)]


# -- append ----------------------------------------------------------------------------------


def test_append_assigns_offsets_and_stores_bytes_verbatim(tmp_path) -> None:
    log = _open(tmp_path)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (0, 0, 0)
    b1, b2, b3 = make_batch(3), make_batch(1, value_size=50), make_batch(5, codec=1)
    r1 = append(log, b1, b2, epoch=7)
    assert (r1.base_offset, r1.last_offset, r1.log_append_time_ms) == (0, 3, -1)
    r2 = append(log, b3, epoch=7)
    assert (r2.base_offset, r2.last_offset) == (4, 8)
    assert log.log_end_offset == 9
    log.close()
    stored = (tmp_path / "t-0" / naming.log_file("", 0).lstrip("/")).read_bytes()
    original = b1 + b2 + b3
    assert len(stored) == len(original)
    headers = validate_batches(stored)  # CRCs still valid
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 7), (3, 7), (4, 7)]
    for h in headers:
        start = h.position
        # Everything but baseOffset (0-7) and partitionLeaderEpoch (12-15) is the client's bytes.
        assert stored[start + 8 : start + 12] == original[start + 8 : start + 12]
        assert stored[start + 16 : h.end] == original[start + 16 : h.end]


def test_append_patches_caller_buffer_in_place(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(2))
    buf, headers = record_set(make_batch(1), make_batch(1))
    log.append(buf, headers, leader_epoch=0, now_ms=0)
    assert struct.unpack_from(">q", buf, 0)[0] == 2
    assert struct.unpack_from(">q", buf, headers[1].position)[0] == 3
    log.close()


def test_append_rejects_bad_arguments(tmp_path) -> None:
    log = _open(tmp_path)
    buf, headers = record_set(make_batch(1), make_batch(1))
    with pytest.raises(ValueError):
        log.append(buf, [], leader_epoch=0)
    with pytest.raises(ValueError):
        log.append(buf, headers[:1], leader_epoch=0)
    with pytest.raises(ValueError):
        log.append(buf, headers[1:], leader_epoch=0)
    append(log, make_batch(1), epoch=5)
    with pytest.raises(ValueError):
        append(log, make_batch(1), epoch=4)
    assert log.log_end_offset == 1
    log.close()


def test_log_append_time_rewrites_max_timestamp_and_crc(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"))
    result = append(log, make_batch(3, timestamp=5), now_ms=777_000)
    assert result.log_append_time_ms == 777_000
    data = log.read(0, 10_000).data
    (h,) = validate_batches(data)
    assert h.max_timestamp == 777_000 and h.timestamp_type == 1
    assert log.offset_for_timestamp(777_000) == (0, 777_000)
    assert log.offset_for_timestamp(777_001) is None
    log.close()


def test_leader_epoch_checkpoint_written_on_new_epoch(tmp_path) -> None:
    log = _open(tmp_path)
    path = tmp_path / "t-0" / "leader-epoch-checkpoint"
    append(log, make_batch(2), epoch=0)
    assert path.read_bytes() == b"0\n1\n0 0\n"
    append(log, make_batch(2), epoch=0)
    append(log, make_batch(1), epoch=3)
    assert path.read_bytes() == b"0\n2\n0 0\n3 4\n"
    assert log.latest_epoch == 3
    log.close()


# -- segments and indexes --------------------------------------------------------------------


def test_sparse_index_entries_follow_kafkas_rule(tmp_path) -> None:
    config = LogConfig(index_interval_bytes=4096)
    log = _open(tmp_path, config)
    sizes = []
    for i in range(60):
        b = make_batch(1 + i % 3, value_size=200 + 37 * (i % 5))
        sizes.append(len(b))
        append(log, b, now_ms=0)
    seg = log.active_segment
    entries = [(seg.base_offset + int(r), int(p)) for r, p in seg.offset_index.entries()]
    # Model: an entry for the batch arriving once more than 4096 bytes were appended since the last entry.
    expected, since, pos, offset = [], 0, 0, 0
    for i, size in enumerate(sizes):
        last = offset + i % 3
        if since > 4096:
            expected.append((last, pos))
            since = 0
        since += size
        pos += size
        offset = last + 1
    assert entries == expected and len(entries) >= 4
    for off, p in entries:  # each entry: last offset of the batch that starts at p
        h = read_header(seg.log_file.pread(61, p))
        assert h.last_offset == off
    log.close()


def test_time_index_entries_only_when_timestamp_grows(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(index_interval_bytes=0))
    for ts in [100, 300, 200, 300, 400, 50]:
        append(log, make_batch(1, timestamp=ts), now_ms=0)
    seg = log.active_segment
    # interval 0: every batch but the first gets an offset-index entry
    assert [int(r) for r, _ in seg.offset_index.entries()] == [1, 2, 3, 4, 5]
    assert [(int(t), int(r)) for t, r in seg.time_index.entries()] == [(300, 1), (400, 4)]
    log.close()
    reopened = _open(tmp_path, LogConfig(index_interval_bytes=0))
    assert reopened.active_segment.largest_timestamp == 400
    reopened.close()


def test_closed_segment_indexes_trimmed_active_preallocated(tmp_path) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=100, segment_index_bytes=800)
    log = _open(tmp_path, config)
    for i in range(70):
        append(log, make_batch(2, timestamp=1000 + i), now_ms=0)
    assert len(log.segments) > 2
    for seg in log.segments[:-1]:
        assert seg.offset_index.file_size == 8 * len(seg.offset_index)
        assert seg.time_index.file_size == 12 * len(seg.time_index)
        assert not seg.active
    active = log.active_segment
    assert active.offset_index.file_size == 800 and active.time_index.file_size == 792
    names = sorted(os.listdir(tmp_path / "t-0"))
    bases = [s.base_offset for s in log.segments]
    for base in bases:
        for suffix in (".log", ".index", ".timeindex"):
            assert naming.offset_filename(base) + suffix in names
    log.close()
    active_base = naming.offset_filename(bases[-1])
    assert os.path.getsize(tmp_path / "t-0" / (active_base + ".index")) % 8 == 0
    assert os.path.getsize(tmp_path / "t-0" / (active_base + ".index")) < 800


def test_roll_on_segment_bytes(tmp_path) -> None:
    batch = make_batch(1, value_size=300)
    config = LogConfig(segment_bytes=3 * len(batch) + 10)
    log = _open(tmp_path, config)
    results = [append(log, batch, now_ms=0) for _ in range(7)]
    assert [r.rolled for r in results] == [False, False, False, True, False, False, True]
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert all(s.size <= config.segment_bytes for s in log.segments)
    log.close()


def test_oversized_batch_goes_into_empty_segment(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(segment_bytes=100))
    append(log, make_batch(1, value_size=500), now_ms=0)
    append(log, make_batch(1, value_size=500), now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 1]
    log.close()


def test_roll_on_segment_ms(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(segment_ms=1000), now_ms=0)
    append(log, make_batch(1), now_ms=5_000)  # first batch into the empty segment starts its clock
    assert not append(log, make_batch(1), now_ms=6_000).rolled
    assert append(log, make_batch(1), now_ms=6_001).rolled
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_roll_when_index_full(tmp_path) -> None:
    # 16 bytes: two offset-index entries, one time-index entry; interval 0: an entry per batch after the first.
    log = _open(tmp_path, LogConfig(segment_index_bytes=16, index_interval_bytes=0))
    rolled = [append(log, make_batch(1, timestamp=i), now_ms=0).rolled for i in range(1, 7)]
    assert rolled == [False, False, True, False, True, False]
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    log.close()


def test_roll_before_relative_offset_overflows_int32(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(1), now_ms=0)
    wide = build_batch([Record(0, 0, None, b"a"), Record(2**31 - 1, 0, None, b"b")], base_timestamp=0)
    result = append(log, wide, now_ms=0)
    assert result.rolled and result.base_offset == 1 and result.last_offset == 2**31
    assert [s.base_offset for s in log.segments] == [0, 1]
    append(log, make_batch(1), now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 1, 2**31 + 1]
    assert _offsets(log.read(2**31, 10_000).data) == [(1, 2**31)]
    log.close()


def test_roll_only_when_non_empty(tmp_path) -> None:
    log = _open(tmp_path)
    assert not log.roll(now_ms=0)
    append(log, make_batch(2), now_ms=0)
    assert log.roll(now_ms=0)
    assert not log.roll(now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


# -- reads -----------------------------------------------------------------------------------


def _three_segment_log(tmp_path) -> PartitionLog:
    log = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200))
    for i in range(30):
        append(log, make_batch(3, value_size=40, timestamp=10_000 + 100 * i), now_ms=0)
    assert len(log.segments) >= 3
    return log


def test_read_offset_inside_batch_returns_whole_batch(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    for offset in range(0, 90):
        data = log.read(offset, 1).data
        assert _offsets(data) == [(offset - offset % 3, offset - offset % 3 + 2)]
    log.close()


def test_read_at_least_one_batch_and_whole_batches_only(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    size = len(log.read(0, 1).data)
    assert log.read(0, 0).data == log.read(0, 1).data
    assert log.read(0, 0, min_one_batch=False).data == b""
    for max_bytes in (size, size + 1, 2 * size - 1, 2 * size, 5 * size + 7):
        data = log.read(3, max_bytes).data
        assert len(data) == (max_bytes // size) * size
        assert _offsets(data)[0] == (3, 5)
    seg0 = log.segments[0]
    whole = log.read(0, 10**9).data
    assert len(whole) == seg0.size  # one read stays in one segment
    assert _offsets(log.read(seg0.next_offset, 10**9).data)[0][0] == seg0.next_offset
    log.close()


def test_read_stops_at_high_watermark(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(2), now_ms=0)
    append(log, make_batch(2), now_ms=0, hw=False)
    append(log, make_batch(2), now_ms=0, hw=False)
    assert (log.high_watermark, log.log_end_offset) == (2, 6)
    assert _offsets(log.read(0, 10**6).data) == [(0, 1)]
    assert log.read(2, 10**6).data == b""  # offset == HW
    assert log.read(5, 10**6).data == b""  # between HW and LEO
    assert log.read(6, 10**6).data == b""  # at LEO
    assert log.advance_high_watermark(4)
    assert not log.advance_high_watermark(3)  # never backwards
    assert log.high_watermark == 4
    assert _offsets(log.read(0, 10**6).data) == [(0, 1), (2, 3)]
    with pytest.raises(ValueError):
        log.advance_high_watermark(7)
    log.advance_high_watermark(6)
    assert _offsets(log.read(0, 10**6).data) == [(0, 1), (2, 3), (4, 5)]
    log.close()


def test_read_out_of_range(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(5), now_ms=0)
    for offset in (-1, 6, 100):
        with pytest.raises(KafkaError) as info:
            log.read(offset, 100)
        assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    result = log.read(5, 100)
    assert (result.data, result.high_watermark, result.log_end_offset) == (b"", 5, 5)
    log.close()
    later = _open(tmp_path, log_start_offset=3)
    assert later.log_start_offset == 3
    with pytest.raises(KafkaError):
        later.read(2, 100)
    assert _offsets(later.read(3, 100).data) == [(0, 4)]
    later.close()


def test_offset_for_timestamp(tmp_path) -> None:
    log = _three_segment_log(tmp_path)  # batch i: offsets 3i..3i+2, timestamps 10000+100i+(0,1,2)
    assert log.offset_for_timestamp(0) == (0, 10_000)
    assert log.offset_for_timestamp(10_000) == (0, 10_000)
    assert log.offset_for_timestamp(10_001) == (1, 10_001)
    assert log.offset_for_timestamp(10_003) == (3, 10_100)
    for i in range(30):
        assert log.offset_for_timestamp(10_000 + 100 * i + 2) == (3 * i + 2, 10_000 + 100 * i + 2)
        assert log.offset_for_timestamp(10_000 + 100 * i - 50) == (3 * i, 10_000 + 100 * i)
    assert log.offset_for_timestamp(10_000 + 100 * 29 + 3) is None
    log.close()


def test_offset_for_timestamp_non_monotonic_and_compressed(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(index_interval_bytes=0))
    append(log, make_batch(2, timestamp=500), now_ms=0)  # 0-1: 500, 501
    append(log, make_batch(2, timestamp=100, codec=3), now_ms=0)  # 2-3: 100, 101 (lz4)
    append(log, make_batch(3, timestamp=900, timestamp_step=-100, codec=1), now_ms=0)  # 4-6: 900, 800, 700
    append(log, make_batch(1, timestamp=1000), now_ms=0, hw=False)  # 7, above the HW
    assert log.offset_for_timestamp(101) == (0, 500)
    assert log.offset_for_timestamp(600) == (4, 900)
    assert log.offset_for_timestamp(901) is None
    log.advance_high_watermark(8)
    assert log.offset_for_timestamp(901) == (7, 1000)
    log.close()


def test_iter_batch_headers(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    headers = list(log.iter_batch_headers())
    assert [h.base_offset for h in headers] == list(range(0, 90, 3))
    assert [h.base_offset for h in log.iter_batch_headers(start_offset=40, end_offset=50)] == [39, 42, 45, 48]
    log.close()


# -- reopen and recovery ---------------------------------------------------------------------


def _snapshot(log: PartitionLog) -> list[tuple[int, int, list, list]]:
    return [
        (s.base_offset, s.size, s.offset_index.entries().tolist(), s.time_index.entries().tolist())
        for s in log.segments
    ]


def test_reopen_after_clean_close_restores_everything(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    before = log.read(0, 10**9).data, _snapshot(log), log.log_end_offset
    log.close()
    reopened = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200))
    assert reopened.log_end_offset == before[2] == reopened.high_watermark
    assert reopened.read(0, 10**9).data == before[0]
    snap = _snapshot(reopened)
    assert [s[:3] for s in snap] == [s[:3] for s in before[1]]
    assert reopened.offset_for_timestamp(10_000 + 100 * 29 + 2) == (89, 10_000 + 100 * 29 + 2)
    result = append(reopened, make_batch(2), now_ms=0)  # offsets continue
    assert result.base_offset == 90
    reopened.close()


def _crash(log: PartitionLog) -> None:
    log.abandon()


def _active_log_path(tmp_path, log: PartitionLog) -> str:
    return naming.log_file(str(tmp_path / "t-0"), log.segments[-1].base_offset)


def _reference(tmp_path) -> tuple[PartitionLog, list[tuple[int, int]], bytes]:
    log = _three_segment_log(tmp_path)
    return log, [(h.base_offset, h.last_offset) for h in log.iter_batch_headers()], log.read(0, 10**9).data


@pytest.mark.parametrize("junk_size", [1, 11, 60, 61, 500, 1024])
def test_recovery_truncates_junk_tail(tmp_path, junk_size: int) -> None:
    log, batches, _ = _reference(tmp_path)
    leo, snap = log.log_end_offset, _snapshot(log)
    path = _active_log_path(tmp_path, log)
    _crash(log)
    with open(path, "ab") as f:
        f.write(os.urandom(junk_size))
    index_path = path[: -len(".log")] + ".index"
    with open(index_path, "ab") as f:
        f.write(os.urandom(junk_size))
    reopened = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200), recover=True)
    assert reopened.log_end_offset == leo
    assert [(h.base_offset, h.last_offset) for h in reopened.iter_batch_headers()] == batches
    assert [s[:3] for s in _snapshot(reopened)] == [s[:3] for s in snap]
    append(reopened, make_batch(1), now_ms=0)
    assert reopened.log_end_offset == leo + 1
    reopened.close()


def test_recovery_truncates_partial_last_batch(tmp_path) -> None:
    log, batches, _ = _reference(tmp_path)
    path = _active_log_path(tmp_path, log)
    _crash(log)
    size = os.path.getsize(path)
    os.truncate(path, size - 10)
    reopened = _open(tmp_path, recover=True)
    assert reopened.log_end_offset == batches[-1][0]
    assert [(h.base_offset, h.last_offset) for h in reopened.iter_batch_headers()] == batches[:-1]
    reopened.close()


def test_recovery_stops_at_zero_filled_tail(tmp_path) -> None:
    log, batches, _ = _reference(tmp_path)
    path = _active_log_path(tmp_path, log)
    _crash(log)
    with open(path, "ab") as f:
        f.write(b"\x00" * 4096)
    reopened = _open(tmp_path, recover=True)
    assert reopened.log_end_offset == batches[-1][1] + 1
    assert os.path.getsize(path) == reopened.active_segment.size
    reopened.close()


def test_recovery_flipped_bit_drops_batch_and_later_segments(tmp_path) -> None:
    log, batches, _ = _reference(tmp_path)
    bases = [s.base_offset for s in log.segments]
    first_seg_batches = [b for b in batches if b[0] < bases[1]]
    victim = first_seg_batches[4]
    header = next(h for h in log.iter_batch_headers() if h.base_offset == victim[0])
    path = naming.log_file(str(tmp_path / "t-0"), 0)
    _crash(log)
    with open(path, "r+b") as f:
        f.seek(header.position + 70)
        byte = f.read(1)
        f.seek(header.position + 70)
        f.write(bytes([byte[0] ^ 0x10]))
    reopened = _open(tmp_path, recover=True, recovery_point=0)
    assert reopened.log_end_offset == victim[0]
    assert [s.base_offset for s in reopened.segments] == [0]
    assert sorted(os.listdir(tmp_path / "t-0")) == sorted(
        [naming.offset_filename(0) + s for s in (".log", ".index", ".timeindex")]
        + ["leader-epoch-checkpoint"]
    )
    assert [(h.base_offset, h.last_offset) for h in reopened.iter_batch_headers()] == first_seg_batches[:4]
    assert append(reopened, make_batch(1), now_ms=0).base_offset == victim[0]
    reopened.close()


@pytest.mark.parametrize("recover", [False, True])
@pytest.mark.parametrize("damage", ["delete", "garbage", "empty", "zero"])
def test_missing_or_garbage_indexes_are_rebuilt(tmp_path, recover: bool, damage: str) -> None:
    log, batches, data = _reference(tmp_path)
    snap = _snapshot(log)
    log.close()
    directory = tmp_path / "t-0"
    for name in os.listdir(directory):
        if name.endswith((".index", ".timeindex")):
            path = directory / name
            if damage == "delete":
                path.unlink()
            elif damage == "garbage":
                path.write_bytes(os.urandom(8 * 12 + 5))
            elif damage == "empty":
                path.write_bytes(b"")
            else:
                path.write_bytes(b"\x00" * 96)
    reopened = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200), recover=recover)
    assert reopened.read(0, 10**9).data == data
    assert [(h.base_offset, h.last_offset) for h in reopened.iter_batch_headers()] == batches
    after = _snapshot(reopened)
    if damage != "empty":  # an empty index is valid (just slower): it is kept as is
        # Rebuilt entries equal the ones built while appending (sealed segments also get the final time entry).
        assert [s[2] for s in after] == [s[2] for s in snap]
    for i in range(30):
        assert reopened.offset_for_timestamp(10_000 + 100 * i + 1) == (3 * i + 1, 10_000 + 100 * i + 1)
    for offset in range(0, 90, 7):
        assert _offsets(reopened.read(offset, 1).data) == [(offset - offset % 3, offset - offset % 3 + 2)]
    reopened.close()


def test_crash_with_preallocated_active_index_recovers_same_indexes(tmp_path) -> None:
    log, batches, data = _reference(tmp_path)
    snap = _snapshot(log)
    _crash(log)
    reopened = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200), recover=True)
    assert _snapshot(reopened) == snap
    assert reopened.read(0, 10**9).data == data
    reopened.close()


def test_leader_epochs_rebuilt_from_batches(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(2), epoch=1)
    append(log, make_batch(2), epoch=4)
    append(log, make_batch(2), epoch=4)
    log.close()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()
    reopened = _open(tmp_path)
    assert reopened.leader_epochs.entries == [(1, 0), (4, 2)]
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n1 0\n4 2\n"
    reopened.close()


def test_become_leader_records_the_epoch_at_the_log_end(tmp_path) -> None:
    log = _open(tmp_path)
    checkpoint = tmp_path / "t-0" / "leader-epoch-checkpoint"
    log.become_leader(0)  # a new topic's partition: epoch 0 from offset 0, written before any append
    assert log.leader_epochs.entries == [(0, 0)]
    assert checkpoint.read_bytes() == b"0\n1\n0 0\n"
    append(log, make_batch(3), epoch=0)
    log.become_leader(0)  # the same epoch again: nothing new
    log.become_leader(2)
    assert log.leader_epochs.entries == [(0, 0), (2, 3)]
    append(log, make_batch(1), epoch=2)
    assert log.leader_epochs.entries == [(0, 0), (2, 3)]
    log.close()


def test_recovery_truncation_drops_later_leader_epochs(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(2), epoch=1)
    append(log, make_batch(2), epoch=2)
    path = _active_log_path(tmp_path, log)
    _crash(log)
    os.truncate(path, os.path.getsize(path) - 1)
    reopened = _open(tmp_path, recover=True)
    assert reopened.log_end_offset == 2
    assert reopened.leader_epochs.entries == [(1, 0)]
    reopened.close()


def test_truncate_to(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    bases = [s.base_offset for s in log.segments]
    assert log.truncate_to(bases[1] + 4) == bases[1] + 3  # inside a batch: the whole batch goes
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert log.high_watermark == log.log_end_offset == bases[1] + 3
    assert _offsets(log.read(bases[1], 10**9).data) == [(bases[1], bases[1] + 2)]
    assert append(log, make_batch(1), now_ms=0).base_offset == bases[1] + 3
    assert log.truncate_to(bases[1]) == bases[1]
    assert log.active_segment.size == 0 and log.active_segment.active
    assert log.offset_for_timestamp(10**9) is None
    log.close()
    reopened = _open(tmp_path, LogConfig(segment_bytes=1500, index_interval_bytes=200))
    assert reopened.log_end_offset == bases[1]
    reopened.close()


def test_high_watermark_at_a_remembered_append_end_after_truncation(tmp_path) -> None:
    """Where appends ended is remembered for HW moves; truncation must forget it (batch sizes differ after)."""
    log = _open(tmp_path, LogConfig())
    for _ in range(4):
        append(log, make_batch(2, value_size=10), now_ms=0, hw=False)
    log.advance_high_watermark(4)
    assert log.truncate_to(4) == 4
    append(log, make_batch(4, value_size=300), now_ms=0, hw=False)
    log.advance_high_watermark(6)  # an append ended at 6 before the truncation; now 6 is inside a batch
    assert _offsets(log.read(0, 10**9).data) == [(0, 1), (2, 3)]
    log.advance_high_watermark(8)
    assert _offsets(log.read(0, 10**9).data) == [(0, 1), (2, 3), (4, 7)]
    log.close()


def test_truncate_into_sealed_segment_makes_it_active(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    log.truncate_to(5)
    seg = log.active_segment
    assert seg.base_offset == 0 and seg.active and log.log_end_offset == 3
    assert seg.largest_timestamp == 10_002
    for _ in range(3):
        append(log, make_batch(3, timestamp=20_000), now_ms=0)
    assert log.offset_for_timestamp(20_000) == (3, 20_000)
    log.close()


# -- failures and concurrency ----------------------------------------------------------------


def test_failed_write_leaves_log_unchanged(tmp_path) -> None:
    fs = FaultyFileSystem()
    log = _open(tmp_path, fs=fs)
    append(log, make_batch(2), now_ms=0)
    size = log.active_segment.size
    fs.fail_next_write(".log")
    with pytest.raises(KafkaStorageError) as info:
        append(log, make_batch(3, value_size=1000), now_ms=0)
    assert info.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert log.log_end_offset == 2 and log.active_segment.size == size
    assert os.path.getsize(_active_log_path(tmp_path, log)) == size
    assert append(log, make_batch(1), now_ms=0).base_offset == 2  # still usable
    assert _offsets(log.read(0, 10**6).data) == [(0, 1), (2, 2)]
    log.close()
    reopened = _open(tmp_path, recover=True)
    assert reopened.log_end_offset == 3
    reopened.close()


def test_failed_index_write_takes_log_offline_and_recovery_rebuilds(tmp_path) -> None:
    fs = FaultyFileSystem()
    config = LogConfig(index_interval_bytes=100)
    log = _open(tmp_path, config, fs=fs)
    append(log, make_batch(2, value_size=200), now_ms=0)
    fs.fail_next_write(".index")
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(3, value_size=200), now_ms=0)
    assert log.offline  # the log is ahead of its index: nothing more until recovery
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(1), now_ms=0)
    log.close()
    reopened = _open(tmp_path, config, recover=True)
    assert reopened.log_end_offset == 5  # the batch reached the log; recovery indexes it
    assert _offsets(reopened.read(2, 10**6).data) == [(2, 4)]
    reopened.close()


def test_failed_fsync_takes_log_offline(tmp_path) -> None:
    fs = FaultyFileSystem()
    log = _open(tmp_path, fs=fs)
    append(log, make_batch(2), now_ms=0)
    fs.fail_next_fsync()
    with pytest.raises(KafkaStorageError):
        log.flush()
    assert log.offline
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(1), now_ms=0)
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    with pytest.raises(KafkaStorageError):
        log.flush()
    log.close()


def test_flush_returns_durable_offset_and_skips_clean_segments(tmp_path) -> None:
    log = _open(tmp_path)
    assert log.flush() == 0
    append(log, make_batch(2), now_ms=0)
    append(log, make_batch(2), now_ms=0, hw=False)
    assert log.recovery_point == 0
    assert log.flush() == 4
    assert log.recovery_point == 4
    assert not log.active_segment.dirty
    log.close()


def test_flush_in_thread_while_appending_rolling_truncating(tmp_path) -> None:
    log = _open(tmp_path, LogConfig(segment_bytes=1000, index_interval_bytes=100))
    stop = threading.Event()
    errors: list[BaseException] = []
    flushed: list[int] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                flushed.append(log.flush())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(300):
            append(log, make_batch(2, value_size=50), now_ms=0)
            if i % 50 == 49:
                log.truncate_to(log.log_end_offset - 30)
    finally:
        stop.set()
        thread.join()
    assert not errors
    assert flushed
    assert log.flush() == log.log_end_offset
    assert all(not s.dirty for s in log.segments)
    log.close()


def test_close_is_idempotent_and_blocks_use(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(1), now_ms=0)
    log.close()
    log.close()
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(1), now_ms=0)


def test_delete_removes_directory(tmp_path) -> None:
    log = _three_segment_log(tmp_path)
    log.delete()
    assert os.listdir(tmp_path) == []


def test_stray_files_cleaned_on_open(tmp_path) -> None:
    log = _open(tmp_path)
    append(log, make_batch(1), now_ms=0)
    log.close()
    d = tmp_path / "t-0"
    (d / (naming.offset_filename(500) + ".index")).write_bytes(b"")
    (d / (naming.offset_filename(0) + ".log.deleted")).write_bytes(b"x")
    (d / "leader-epoch-checkpoint.tmp").write_bytes(b"x")
    reopened = _open(tmp_path, fs=FileSystem())
    assert sorted(os.listdir(d)) == sorted(
        [naming.offset_filename(0) + s for s in (".log", ".index", ".timeindex")]
        + ["leader-epoch-checkpoint"]
    )
    reopened.close()


# -- follower appends ------------------------------------------------------------------------


def test_follower_append_keeps_the_leaders_offsets_and_epochs(tmp_path) -> None:
    leader = _open(tmp_path / "leader")
    append(leader, make_batch(2), epoch=0)
    append(leader, make_batch(3), epoch=4)
    data = bytearray(leader.read(0, 10**6).data)
    follower = _open(tmp_path / "follower")
    headers = batches_in(bytes(data))
    result = follower.append_as_follower(data, headers)
    assert (result.base_offset, result.last_offset, follower.log_end_offset) == (0, 4, 5)
    assert follower.read(0, 10**6).data == b""  # the follower's HW is the caller's to move
    follower.advance_high_watermark(5)
    assert bytes(follower.read(0, 10**6).data) == bytes(data)  # byte for byte
    assert follower.leader_epochs.entries == [(0, 0), (4, 2)]
    with pytest.raises(ValueError):
        again = bytearray(data)
        follower.append_as_follower(again, batches_in(bytes(again)))  # not at the follower's LEO
    leader.close()
    follower.close()


def test_truncate_fully_and_start_at_the_leaders_log_start(tmp_path) -> None:
    """A follower below its leader's log start drops everything and continues from there."""
    leader = _open(tmp_path / "leader")
    for epoch in (0, 0, 3, 3, 3, 3, 3, 3):
        append(leader, make_batch(2, value_size=400), epoch=epoch)
    assert len(leader.segments) == 2
    leader.delete_records(12)
    follower = _open(tmp_path / "follower")
    append(follower, make_batch(2, value_size=400), epoch=0, hw=True)  # what it had before going down
    follower.truncate_fully_and_start_at(leader.log_start_offset)
    assert (follower.log_start_offset, follower.high_watermark, follower.log_end_offset) == (12, 12, 12)
    assert follower.leader_epochs.entries == []
    data = bytearray(leader.read(12, 10**6).data)
    follower.append_as_follower(data, batches_in(bytes(data)))
    follower.advance_high_watermark(follower.log_end_offset)
    assert _offsets(follower.read(12, 10**6).data) == _offsets(bytes(data))
    assert follower.leader_epochs.entries == [(3, 12)]
    follower.close()
    reopened = _open(tmp_path / "follower")
    assert (reopened.log_start_offset, reopened.log_end_offset) == (12, follower.log_end_offset)
    assert sorted(os.listdir(tmp_path / "follower" / "t-0"))[0].startswith(naming.offset_filename(12))
    reopened.close()
    leader.close()
