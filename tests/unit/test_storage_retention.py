"""Retention: retention.ms, retention.bytes, the log start offset (DeleteRecords), `.deleted` files."""

from __future__ import annotations

import os

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, validate_batches
from storage import naming
from storage.config import LogConfig
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, make_batch

DAY = 24 * 3600 * 1000
NOW = 100 * DAY


def _log(tmp_path, **kw) -> PartitionLog:
    config = LogConfig(segment_bytes=1000, index_interval_bytes=100, file_delete_delay_ms=5000, **kw)
    return PartitionLog(str(tmp_path / "t-0"), config, now_ms=0)


def _fill(log: PartitionLog, stamps: list[int]) -> None:
    for ts in stamps:
        append(log, make_batch(2, value_size=150, timestamp=ts), now_ms=0)


def _deleted_files(log: PartitionLog) -> list[str]:
    return sorted(n for n in os.listdir(log.directory) if n.endswith(naming.DELETED_SUFFIX))


def test_retention_ms_deletes_expired_prefix_by_largest_timestamp(tmp_path) -> None:
    log = _log(tmp_path, retention_ms=DAY)
    _fill(log, [NOW - 3 * DAY] * 9 + [NOW - DAY // 2] * 9)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 5
    old_segments = [s for s in log.segments[:-1] if s.largest_timestamp < NOW - DAY]
    assert log.delete_old_segments(NOW) == len(old_segments)
    assert log.log_start_offset == log.segments[0].base_offset == old_segments[-1].next_offset
    assert log.segments[0].largest_timestamp == NOW - DAY // 2 + 1
    # The deleted segments' files are renamed, not yet removed; reads below the start are out of range.
    assert len(_deleted_files(log)) == 3 * len(old_segments)
    with pytest.raises(KafkaError) as info:
        log.read(0, 100)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert validate_batches(log.read(log.log_start_offset, 1).data)[0].base_offset == log.log_start_offset
    assert log.offset_for_timestamp(0)[0] == log.log_start_offset
    # file.delete.delay.ms later they are handed out for removal, once.
    assert log.take_expired_deletions(NOW + 4999) == []
    doomed = log.take_expired_deletions(NOW + 5000)
    assert sorted(os.path.basename(p) for p in doomed) == _deleted_files(log)
    assert log.take_expired_deletions(NOW + 10**9) == []
    log.close()


def test_everything_expired_rolls_the_active_segment(tmp_path) -> None:
    log = _log(tmp_path, retention_ms=DAY)
    _fill(log, [NOW - 2 * DAY] * 10)
    leo = log.log_end_offset
    n = len(log.segments)
    assert log.delete_old_segments(NOW) == n
    assert [s.base_offset for s in log.segments] == [leo]
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (leo, leo, leo)
    assert log.delete_old_segments(NOW) == 0  # the empty active segment stays
    assert append(log, make_batch(1, timestamp=NOW), now_ms=0).base_offset == leo
    log.close()
    reopened = PartitionLog(log.directory, log.config, log_start_offset=leo)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (leo, leo + 1)
    assert _deleted_files(reopened) == []  # leftovers removed at open
    reopened.close()


def test_retention_never_passes_the_high_watermark(tmp_path) -> None:
    log = _log(tmp_path, retention_ms=DAY)
    _fill(log, [NOW - 2 * DAY] * 4)
    hw = log.log_end_offset
    for _ in range(6):
        append(log, make_batch(2, value_size=150, timestamp=NOW - 2 * DAY), now_ms=0, hw=False)
    assert log.delete_old_segments(NOW) == 2  # [0, 4) and [4, 8); [8, 12) reaches past the HW
    assert log.log_start_offset == log.segments[0].base_offset == hw
    log.close()


def test_retention_ms_falls_back_to_file_mtime(tmp_path) -> None:
    log = _log(tmp_path, retention_ms=DAY)
    no_ts = build_batch([Record(0, 0, None, b"x" * 300)], base_timestamp=-1)
    for _ in range(8):
        append(log, no_ts, now_ms=0)
    first = log.segments[0]
    assert first.largest_timestamp == -1
    now = int(os.path.getmtime(naming.log_file(log.directory, 0)) * 1000)
    assert log.delete_old_segments(now) == 0  # fresh files
    old = (now - 2 * DAY) / 1000
    os.utime(naming.log_file(log.directory, 0), (old, old))
    assert log.delete_old_segments(now) == 1
    assert log.log_start_offset == log.segments[0].base_offset
    log.close()


def test_retention_bytes(tmp_path) -> None:
    log = _log(tmp_path, retention_bytes=2500)
    _fill(log, [NOW] * 20)
    sizes = [s.size for s in log.segments]
    excess = sum(sizes) - 2500
    expect = 0
    for size in sizes:
        if excess - size < 0:
            break
        excess -= size
        expect += 1
    assert expect >= 2
    assert log.delete_old_segments(NOW) == expect
    assert log.size >= 2500 - max(sizes)
    assert log.size <= sum(sizes[expect:])
    log.close()


def test_compact_only_policy_ignores_time_and_size(tmp_path) -> None:
    log = _log(tmp_path, retention_ms=DAY, retention_bytes=100, cleanup_policy="compact")
    _fill(log, [NOW - 3 * DAY] * 12)
    assert log.delete_old_segments(NOW) == 0
    log.delete_records(5)
    assert log.log_start_offset == 5
    log.close()


def test_delete_records_moves_start_and_deletes_whole_segments_below(tmp_path) -> None:
    log = _log(tmp_path)
    _fill(log, [NOW] * 20)
    bases = [s.base_offset for s in log.segments]
    target = bases[2] + 1
    assert log.delete_records(target) == target
    assert [s.base_offset for s in log.segments] == bases[2:]  # the segment holding target stays
    assert log.log_start_offset == target
    with pytest.raises(KafkaError):
        log.read(target - 1, 100)
    (h,) = validate_batches(log.read(target, 1).data)
    assert h.base_offset <= target <= h.last_offset
    assert log.delete_records(3) == target  # lower: nothing changes
    for bad in (-5, log.high_watermark + 1):
        with pytest.raises(KafkaError) as info:
            log.delete_records(bad)
        assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    # Everything: as in Kafka, the active segment stays (there is no next segment to compare with).
    assert log.delete_records(log.high_watermark) == log.log_end_offset
    assert len(log.segments) == 1 and log.read(log.log_end_offset, 100).data == b""
    log.close()


def test_delete_records_waits_for_a_cleaning_in_flight(tmp_path) -> None:
    log = _log(tmp_path)
    _fill(log, [NOW] * 20)
    n = len(log.segments)
    log.cleaning = object()  # a cleaner job holds the segment list
    assert log.delete_records(log.segments[3].base_offset) == log.segments[3].base_offset
    assert len(log.segments) == n and log.delete_old_segments(NOW) == 0
    log.cleaning = None
    assert log.delete_old_segments(NOW) == 3
    log.close()


def test_log_manager_retention_and_checkpoints(tmp_path) -> None:
    d = tmp_path / "data"
    mgr = LogManager(str(d), LogConfig(segment_bytes=1000, retention_ms=DAY, file_delete_delay_ms=0))
    mgr.create_topic("old", 1)
    mgr.create_topic("keep", 1, {"retention.ms": "-1"})
    for t in ("old", "keep"):
        log = mgr.get_log(t, 0)
        assert log is not None
        _fill(log, [NOW - 2 * DAY] * 8)
    assert mgr.delete_old_segments(NOW) > 0
    old = mgr.get_log("old", 0)
    keep = mgr.get_log("keep", 0)
    assert old is not None and keep is not None
    assert old.log_start_offset == 16 and keep.log_start_offset == 0
    doomed = mgr.take_expired_deletions(NOW)
    assert doomed and all(p.endswith(naming.DELETED_SUFFIX) for p in doomed)
    for p in doomed:
        mgr.fs.remove(p)
    mgr.write_checkpoint(naming.LOG_START_OFFSET_CHECKPOINT, mgr.log_start_offsets())
    assert (d / naming.LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n2\nkeep 0 0\nold 0 16\n"
    mgr.abandon()
    again = LogManager(str(d), LogConfig(segment_bytes=1000))
    old = again.get_log("old", 0)
    assert old is not None and (old.log_start_offset, old.log_end_offset) == (16, 16)
    again.close()
