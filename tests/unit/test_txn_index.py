"""The `.txnindex` file (Kafka's AbortedTxn entries): bytes, loading, torn tails, corruption,
truncation, rebuild replacement and the collect semantics of read_committed fetches."""

from __future__ import annotations

import os
import struct

import pytest

from storage.fs import FaultyFileSystem, FileSystem
from storage.txn_index import ENTRY_SIZE, AbortedRanges, AbortedTxn, TransactionIndex, iter_entries


def _path(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return str(tmp_path / "00000000000000000100.txnindex")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_entry_bytes_are_kafkas_layout() -> None:
    t = AbortedTxn(producer_id=5, first_offset=100, last_offset=130, last_stable_offset=90)
    assert ENTRY_SIZE == 34
    assert t.encode() == struct.pack(">hqqqq", 0, 5, 100, 130, 90)
    assert t.encode().hex() == (
        "0000" + "0000000000000005" + "0000000000000064" + "0000000000000082" + "000000000000005a"
    )
    assert list(iter_entries(t.encode() + b"\x00" * 5)) == [(0, t)]


def test_file_created_on_first_append_and_loaded_at_open(tmp_path) -> None:
    fs = FileSystem()
    path = _path(tmp_path)
    idx = TransactionIndex(fs, path)
    assert not idx.exists and not os.path.exists(path) and len(idx) == 0
    a, b = AbortedTxn(1, 100, 110, 100), AbortedTxn(2, 105, 120, 121)
    assert idx.append(a) is True
    assert idx.append(b) is False
    idx.flush()
    idx.close()
    assert _read(path) == a.encode() + b.encode()
    again = TransactionIndex(fs, path)
    assert list(again.entries) == [a, b] and again.corrupt is None and again.exists


def test_appends_must_increase_and_start_before_the_marker(tmp_path) -> None:
    idx = TransactionIndex(FileSystem(), _path(tmp_path))
    idx.append(AbortedTxn(1, 100, 110, 111))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(2, 100, 110, 111))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(2, 130, 120, 131))
    assert len(idx) == 1


def test_torn_trailing_entry_is_dropped_and_cut_before_the_next_append(tmp_path) -> None:
    fs = FileSystem()
    path = _path(tmp_path)
    a, b, c = AbortedTxn(1, 100, 110, 111), AbortedTxn(1, 112, 120, 121), AbortedTxn(3, 122, 130, 131)
    with open(path, "wb") as f:
        f.write(a.encode() + b.encode()[:20])
    idx = TransactionIndex(fs, path)
    assert list(idx.entries) == [a] and idx.corrupt is None
    idx.append(c)
    idx.close()
    assert _read(path) == a.encode() + c.encode()


@pytest.mark.parametrize(
    "content",
    [
        struct.pack(">hqqqq", 1, 1, 100, 110, 111),  # unknown version
        AbortedTxn(1, 100, 120, 121).encode() + AbortedTxn(2, 100, 110, 111).encode(),  # not increasing
        b"\x00" * ENTRY_SIZE,  # a zero-filled tail: first offset == last offset
        AbortedTxn(1, 100, 110, 500).encode(),  # LSO past the marker
    ],
    ids=["version", "order", "zeros", "lso"],
)
def test_bad_entries_mark_the_index_corrupt(tmp_path, content: bytes) -> None:
    path = _path(tmp_path)
    with open(path, "wb") as f:
        f.write(content)
    idx = TransactionIndex(FileSystem(), path)
    assert idx.corrupt is not None and len(idx) == 0
    good = [AbortedTxn(1, 100, 110, 111)]
    assert idx.replace(good) is True
    assert idx.corrupt is None and list(idx.entries) == good
    assert _read(path) == good[0].encode()


def test_check_range_flags_markers_outside_the_segment(tmp_path) -> None:
    idx = TransactionIndex(FileSystem(), _path(tmp_path))
    idx.append(AbortedTxn(1, 90, 110, 111))
    idx.check_range(100, 111)
    assert idx.corrupt is None
    idx.check_range(100, 110)
    assert idx.corrupt is not None


def test_truncate_to_drops_entries_at_or_past_the_offset(tmp_path) -> None:
    path = _path(tmp_path)
    idx = TransactionIndex(FileSystem(), path)
    entries = [AbortedTxn(1, 100, 110, 111), AbortedTxn(2, 100, 120, 121), AbortedTxn(3, 122, 130, 131)]
    for t in entries:
        idx.append(t)
    idx.truncate_to(131)
    assert list(idx.entries) == entries
    idx.truncate_to(120)
    assert list(idx.entries) == entries[:1]
    idx.close()
    assert _read(path) == entries[0].encode()
    reloaded = TransactionIndex(FileSystem(), path)
    reloaded.truncate_to(0)  # a loaded index (no descriptor yet) cuts its file too
    assert len(reloaded) == 0 and os.path.getsize(path) == 0
    reloaded.close()


def test_replace_is_a_no_op_when_nothing_changed_and_empty_means_no_file(tmp_path) -> None:
    path = _path(tmp_path)
    idx = TransactionIndex(FileSystem(), path)
    assert idx.replace([]) is False and not os.path.exists(path)
    t = AbortedTxn(1, 100, 110, 111)
    idx.append(t)
    assert idx.replace([t]) is False
    assert idx.replace([]) is True and not os.path.exists(path) and not idx.exists
    assert idx.append(t) is True  # created again
    idx.close()


def test_collect_overlap_and_early_stop(tmp_path) -> None:
    idx = TransactionIndex(FileSystem(), _path(tmp_path))
    a = AbortedTxn(1, 100, 110, 105)  # producer 2's transaction (from 105) was still open
    b = AbortedTxn(2, 105, 120, 121)
    c = AbortedTxn(3, 130, 140, 141)
    for t in (a, b, c):
        idx.append(t)
    assert idx.collect(0, 100) == []  # first offset must be below the upper bound
    assert idx.collect(0, 101) == [a]
    assert idx.collect(111, 1000) == [b, c]  # last offset must reach the fetch offset
    assert idx.collect(110, 131) == [a, b, c]
    assert idx.collect(141, 1000) == []
    # Stop at the first entry whose LSO reaches the upper bound: nothing later can overlap.
    out: list[AbortedTxn] = []
    assert idx.collect_into(out, 100, 121) is True and out == [a, b]
    out = []
    assert idx.collect_into(out, 100, 1000) is False and out == [a, b, c]


def test_flush_fsyncs_only_after_changes(tmp_path) -> None:
    fs = FaultyFileSystem()
    idx = TransactionIndex(fs, _path(tmp_path))
    idx.flush()  # no file: nothing to sync
    idx.append(AbortedTxn(1, 100, 110, 111))
    fs.fail_next_fsync(".txnindex")
    with pytest.raises(OSError):
        idx.flush()
    idx.flush()
    fs.fail_next_fsync(".txnindex")
    idx.flush()  # nothing new: no fsync
    assert fs.fsyncs_failed == 1
    idx.close()


def test_failed_append_changes_nothing(tmp_path) -> None:
    fs = FaultyFileSystem()
    path = _path(tmp_path)
    idx = TransactionIndex(fs, path)
    a = AbortedTxn(1, 100, 110, 111)
    idx.append(a)
    fs.fail_next_write(".txnindex")
    with pytest.raises(OSError):
        idx.append(AbortedTxn(2, 100, 120, 121))
    assert list(idx.entries) == [a]
    idx.close()
    assert _read(path) == a.encode()


def test_aborted_ranges() -> None:
    ranges = AbortedRanges(
        [AbortedTxn(1, 100, 110, 111), AbortedTxn(1, 200, 210, 211), AbortedTxn(2, 50, 300, 51)]
    )
    assert ranges
    assert not AbortedRanges([])
    assert [o for o in (99, 100, 105, 110, 111, 199, 200, 210, 211) if ranges.is_aborted(1, o)] == [
        100,
        105,
        110,
        200,
        210,
    ]
    assert ranges.is_aborted(2, 50) and ranges.is_aborted(2, 300) and not ranges.is_aborted(2, 301)
    assert not ranges.is_aborted(3, 105)
