"""A tiered log's local retention (KIP-405): only what is safely remote goes, the log start stays."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode, KafkaError
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, make_batch

DAY = 24 * 3600 * 1000
NOW = 100 * DAY


def _log(tmp_path, *, tiered: bool = True, log_start: int | None = None, **kw) -> PartitionLog:
    config = LogConfig(segment_bytes=1000, index_interval_bytes=100, file_delete_delay_ms=0, **kw)
    return PartitionLog(str(tmp_path / "t-0"), config, now_ms=0, tiered=tiered, log_start_offset=log_start)


def _fill(log: PartitionLog, batches: int, ts: int = NOW) -> None:
    for _ in range(batches):
        append(log, make_batch(2, value_size=150, timestamp=ts), now_ms=0)


def test_local_retention_deletes_only_segments_already_remote(tmp_path) -> None:
    log = _log(tmp_path, local_retention_bytes=0, retention_bytes=-1)
    _fill(log, 18)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 5
    assert log.delete_old_segments(NOW) == 0  # nothing copied: nothing local may go
    assert log.remote is not None
    log.remote.update_highest(bases[2] - 1)  # the first two segments are in the object store
    assert log.delete_old_segments(NOW) == 2
    assert [s.base_offset for s in log.segments] == bases[2:]
    assert log.log_start_offset == 0  # still readable, from the object store
    assert log.local_log_start_offset == bases[2]
    with pytest.raises(KafkaError) as info:
        log.read(bases[1], 100)  # below the local start: the caller reads remote
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.read(bases[2], 100).data
    log.close()


def test_local_retention_falls_back_to_retention_when_unset(tmp_path) -> None:
    log = _log(tmp_path, retention_bytes=0)  # local.retention.bytes -2: retention.bytes
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    log.remote.update_highest(bases[1] - 1)
    assert log.delete_old_segments(NOW) == 1
    assert log.log_start_offset == 0 and log.local_log_start_offset == bases[1]
    log.close()


def test_time_breach_of_the_active_segment_rolls_it_for_copying(tmp_path) -> None:
    log = _log(tmp_path, local_retention_ms=DAY)
    _fill(log, 2, ts=NOW - 3 * DAY)
    assert len(log.segments) == 1
    assert log.delete_old_segments(NOW) == 0
    assert len(log.segments) == 2  # rolled: the old records can be copied, then deleted
    log.remote.update_highest(log.segments[1].base_offset - 1)
    assert log.delete_old_segments(NOW) == 1
    log.close()


def test_copy_disabled_deletes_by_retention_and_moves_the_log_start(tmp_path) -> None:
    log = _log(tmp_path, retention_bytes=0, remote_log_copy_disable=True)
    log.set_tiered(True, copy_enabled=False)
    _fill(log, 12)
    deleted = log.delete_old_segments(NOW)
    assert deleted >= 1
    assert log.log_start_offset == log.local_log_start_offset == log.segments[0].base_offset
    log.close()


def test_checkpointed_log_start_below_the_first_segment_survives_reopening(tmp_path) -> None:
    log = _log(tmp_path, local_retention_bytes=0)
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    log.remote.update_highest(bases[2] - 1)
    log.delete_old_segments(NOW)
    log.close()
    reopened = _log(tmp_path, local_retention_bytes=0, log_start=0)
    assert reopened.log_start_offset == 0
    assert reopened.local_log_start_offset == bases[2]
    reopened.close()
    untiered = _log(tmp_path, tiered=False, log_start=0)
    assert untiered.log_start_offset == bases[2]  # without tiering the segments bound it, as before
    untiered.close()


def test_untiering_moves_the_log_start_to_the_local_start(tmp_path) -> None:
    log = _log(tmp_path, local_retention_bytes=0)
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    log.remote.update_highest(bases[1] - 1)
    log.delete_old_segments(NOW)
    log.set_tiered(False)
    assert log.remote is None
    assert log.log_start_offset == bases[1]
    log.close()


def test_raise_log_start_never_passes_the_high_watermark(tmp_path) -> None:
    log = _log(tmp_path)
    for _ in range(3):
        append(log, make_batch(2, value_size=150), now_ms=0, hw=False)
    log.advance_high_watermark(2)
    log.raise_log_start(5, "test")
    assert log.log_start_offset == 2
    log.raise_log_start(1, "test")
    assert log.log_start_offset == 2
    log.close()


def test_snapshots_of_segments_gone_from_disk_are_removed(tmp_path) -> None:
    log = _log(tmp_path, local_retention_bytes=0)
    _fill(log, 12)
    bases = [s.base_offset for s in log.segments]
    for base in bases[1:]:  # the broker writes one at each roll; a tiered log keeps them until copied
        (tmp_path / "t-0" / f"{base:020d}.snapshot").write_bytes(b"")
    log.remote.update_highest(bases[2] - 1)
    log.delete_old_segments(NOW)
    left = sorted(int(p.name.split(".")[0]) for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert left == bases[2:]
    log.close()
