"""Transaction indexes in a `PartitionLog`: appends, read_committed lookups, truncation, retention,
flush, and the rebuild at open (torn tails, lost or corrupt `.txnindex` files)."""

from __future__ import annotations

import logging
import os
import random

import pytest

from storage import naming
from storage.config import LogConfig
from storage.errors import KafkaStorageError
from storage.fs import FaultyFileSystem, FileSystem
from storage.partition_log import PartitionLog
from storage.txn_index import AbortedTxn
from tests.unit.txn_support import TxnWriter, all_entries

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=100)


def _open(tmp_path, fs: FileSystem | None = None, **kw) -> PartitionLog:  # type: ignore[no-untyped-def]
    return PartitionLog(str(tmp_path / "t-0"), CONFIG, fs, now_ms=0, **kw)


def _workload(w: TxnWriter, rng: random.Random, steps: int = 120, empty_aborts: bool = True) -> None:
    """Interleaved transactions of producers 1-4 (some aborted, some committed, some left open),
    plain batches in between; transactions span segments and overlap each other."""
    for _ in range(steps):
        pid = rng.randint(1, 4)
        roll = rng.random()
        if roll < 0.55:
            w.data(pid, [b"k%d" % rng.randint(0, 9) for _ in range(rng.randint(1, 3))])
        elif roll < 0.8 and pid in w.open:
            w.end(pid, commit=rng.random() < 0.4)
        elif roll < 0.9 and (empty_aborts or pid in w.open):
            w.end(pid, commit=False)  # possibly a marker of an empty transaction: no entry
        else:
            w.plain([b"p%d" % rng.randint(0, 9)])


def _expected(entries: list[AbortedTxn], fetch: int, upper: int) -> list[AbortedTxn]:
    return [t for t in entries if t.last_offset >= fetch and t.first_offset < upper]


@pytest.mark.parametrize("seed", range(3))
def test_entries_land_in_the_marker_segment_and_lookups_match_a_model(tmp_path, seed: int) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(seed))
    assert len(log.segments) > 5 and len(w.entries) >= 5
    assert all_entries(log) == w.entries
    for seg in log.segments:
        nxt = seg.next_offset
        assert all(seg.base_offset <= t.last_offset < nxt for t in seg.txn_index.entries)
        path = naming.txn_index_file(log.directory, seg.base_offset)
        assert os.path.exists(path) == bool(len(seg.txn_index))
    leo = log.log_end_offset
    for fetch in range(0, leo, 3):
        for upper in range(fetch + 1, leo + 1, 7):
            assert log.aborted_transactions(fetch, upper) == _expected(w.entries, fetch, upper)
    log.close()
    reopened = _open(tmp_path)
    assert all_entries(reopened) == w.entries
    reopened.close()


def test_lookups_never_read_the_files(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    assert log.aborted_transactions(0, 10) == []
    w.data(1, [b"a"])
    w.end(1, commit=True)
    assert log.aborted_transactions(0, log.log_end_offset) == []
    w.data(2, [b"a", b"b"])
    w.end(2, commit=False)
    for seg in log.segments:
        os.remove(naming.txn_index_file(log.directory, seg.base_offset)) if len(seg.txn_index) else None
    assert log.aborted_transactions(0, log.log_end_offset) == w.entries
    log.close()


def test_append_checks_and_write_failure_takes_the_log_offline(tmp_path) -> None:
    fs = FaultyFileSystem()
    log = _open(tmp_path, fs)
    w = TxnWriter(log)
    w.data(1, [b"a"])
    with pytest.raises(ValueError):
        log.append_aborted_txn(AbortedTxn(1, 0, log.log_end_offset, 0))  # no such marker offset
    w.end(1, commit=False)
    with pytest.raises(ValueError):
        log.append_aborted_txn(w.entries[0])  # not after the last entry
    w.data(2, [b"a"])
    fs.fail_next_write(".txnindex")
    with pytest.raises(KafkaStorageError):
        w.end(2, commit=False)
    assert log.offline
    log.abandon()
    reopened = _open(tmp_path, recover=True, recovery_point=0)
    assert all_entries(reopened) == w.entries  # the lost entry is rebuilt from the log
    reopened.close()


def test_flush_fsyncs_the_transaction_index(tmp_path) -> None:
    fs = FaultyFileSystem()
    log = _open(tmp_path, fs)
    w = TxnWriter(log)
    w.data(1, [b"a"])
    w.end(1, commit=False)
    fs.fail_next_fsync(".txnindex")
    with pytest.raises(KafkaStorageError):
        log.flush()
    log.abandon()


def test_truncation_drops_entries_with_their_markers(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(7))
    cut = w.entries[len(w.entries) // 2].last_offset
    log.truncate_to(cut)
    kept = [t for t in w.entries if t.last_offset < cut]
    assert all_entries(log) == kept
    assert log.aborted_transactions(0, log.log_end_offset) == kept
    for name in os.listdir(log.directory):
        parsed = naming.parse_segment_filename(name)
        assert parsed is None or parsed[1] != naming.TXN_INDEX_SUFFIX or parsed[0] < cut
    log.close()
    reopened = _open(tmp_path)
    assert all_entries(reopened) == kept
    reopened.truncate_fully_and_start_at(5000)
    assert all_entries(reopened) == [] and reopened.aborted_transactions(5000, 5001) == []
    assert not [n for n in os.listdir(reopened.directory) if n.endswith(naming.TXN_INDEX_SUFFIX)]
    reopened.close()


def test_retention_deletes_the_index_with_its_segment(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(3))
    first = log.segments[0]
    while not len(first.txn_index):  # make the first segment hold an entry
        log.delete_records(log.segments[1].base_offset, now_ms=0)
        first = log.segments[0]
    path = naming.txn_index_file(log.directory, first.base_offset)
    assert os.path.exists(path)
    log.delete_records(log.segments[1].base_offset, now_ms=0)
    assert not os.path.exists(path) and os.path.exists(path + naming.DELETED_SUFFIX)
    doomed = log.take_expired_deletions(10**12)
    assert path + naming.DELETED_SUFFIX in doomed
    assert all(os.path.exists(p) for p in doomed)
    remaining = [t for t in w.entries if t.last_offset >= log.segments[0].base_offset]
    assert all_entries(log) == remaining
    log.close()


def _crash(log: PartitionLog) -> None:
    log.abandon()


@pytest.mark.parametrize("seed", range(4))
def test_unclean_reopen_rebuilds_lost_indexes_exactly(tmp_path, seed: int, caplog) -> None:
    """Every `.txnindex` lost: the recovered segments' indexes come back from the log, with Kafka's
    last stable offsets, although their transactions started before the recovered range."""
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(seed), steps=150)
    segments = [s.base_offset for s in log.segments]
    _crash(log)
    for name in os.listdir(tmp_path / "t-0"):
        if name.endswith(naming.TXN_INDEX_SUFFIX):
            os.remove(tmp_path / "t-0" / name)
    recovery_point = segments[len(segments) // 2]
    with caplog.at_level(logging.INFO, "storage.txn_recovery"):
        reopened = _open(tmp_path, recover=True, recovery_point=recovery_point)
    assert "from the start of the log" in caplog.text  # the recovered range alone could not tell
    # Segments below the recovery point were loaded as clean: a missing index there means no entries.
    assert all_entries(reopened) == [t for t in w.entries if t.last_offset >= recovery_point]
    reopened.close()
    from_zero = _open(tmp_path, recover=True, recovery_point=0)
    assert all_entries(from_zero) == w.entries
    from_zero.close()


def test_unclean_reopen_keeps_the_entries_the_old_index_confirms(tmp_path, caplog) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    # An ABORT closing nothing the recovered range saw is ambiguous without the earlier log (an
    # empty transaction, or one that started before): this workload has none.
    _workload(w, random.Random(11), steps=150, empty_aborts=False)
    _crash(log)
    recovery_point = log.segments[-4].base_offset
    recovered = [s for s in log.segments if s.base_offset >= recovery_point]
    assert any(len(s.txn_index) for s in recovered)
    with caplog.at_level(logging.INFO, "storage.txn_recovery"):
        reopened = _open(tmp_path, recover=True, recovery_point=recovery_point)
    assert "from the start of the log" not in caplog.text  # no scan of the earlier log
    assert all_entries(reopened) == w.entries
    reopened.close()


def test_an_index_write_lost_in_a_crash_is_rebuilt(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    w.data(1, [b"a", b"b"])
    w.data(2, [b"c"])
    log.roll(now_ms=0)
    w.data(1, [b"d"])
    w.record_index = False  # the broker died between the marker and its index entry
    w.end(1, commit=False)
    w.data(3, [b"e"])
    w.end(3, commit=False)
    assert all_entries(log) == []
    _crash(log)
    reopened = _open(tmp_path, recover=True, recovery_point=log.segments[-1].base_offset)
    # Producer 2's transaction (from offset 2) is still open: it bounds both last stable offsets.
    assert all_entries(reopened) == w.entries == [AbortedTxn(1, 0, 4, 2), AbortedTxn(3, 5, 6, 2)]
    reopened.close()


def test_torn_tail_drops_the_entry_of_a_cut_marker(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(5))
    w.data(9, [b"x"])
    marker = w.end(9, commit=False)
    assert all_entries(log)[-1].last_offset == marker
    active = log.active_segment.base_offset
    _crash(log)
    path = naming.log_file(str(tmp_path / "t-0"), active)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 5)  # inside the marker batch
    reopened = _open(tmp_path, recover=True, recovery_point=active)
    assert reopened.log_end_offset == marker
    assert all_entries(reopened) == w.entries[:-1]
    assert reopened.aborted_transactions(0, marker + 1) == _expected(w.entries[:-1], 0, marker + 1)
    reopened.close()


def test_junk_after_the_last_batch_keeps_every_entry(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(9))
    _crash(log)
    path = naming.log_file(str(tmp_path / "t-0"), log.segments[-1].base_offset)
    with open(path, "ab") as f:
        f.write(b"\x00" * 40 + b"junk")
    reopened = _open(tmp_path, recover=True, recovery_point=log.segments[-2].base_offset)
    assert all_entries(reopened) == w.entries
    reopened.close()


@pytest.mark.parametrize("damage", ["version", "torn", "zeros"])
def test_corrupt_index_of_a_sealed_segment_is_rebuilt_on_clean_open(tmp_path, damage: str) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _workload(w, random.Random(2), steps=150)
    log.close()
    seg = next(s for s in log.segments[1:-1] if len(s.txn_index))
    path = naming.txn_index_file(log.directory, seg.base_offset)
    data = bytearray(open_bytes(path))
    if damage == "version":
        data[0:2] = b"\x00\x07"
    elif damage == "torn":
        data += b"\x00\x00\x00"  # a partial entry: dropped, the rest is fine
    else:
        data += bytes(34)
    with open(path, "wb") as f:
        f.write(data)
    reopened = _open(tmp_path)
    assert all_entries(reopened) == w.entries
    rebuilt = b"".join(t.encode() for t in reopened.segments[log.segments.index(seg)].txn_index.entries)
    if damage == "torn":
        assert open_bytes(path) == rebuilt + b"\x00\x00\x00"  # cut before the next append only
    else:
        assert open_bytes(path) == rebuilt  # rewritten
    reopened.close()


def open_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
