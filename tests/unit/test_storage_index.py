"""OffsetIndex and TimeIndex: on-disk format, lookups, capacity, trimming, sanity checks."""

from __future__ import annotations

import os
import random
import struct

import pytest

from storage.errors import CorruptIndexError
from storage.fs import FileSystem
from storage.index import OffsetIndex, TimeIndex


def _offset_index(tmp_path, base: int = 100, max_bytes: int = 1000) -> OffsetIndex:
    idx = OffsetIndex(FileSystem(), str(tmp_path / "x.index"), base, max_bytes)
    idx.make_active()
    return idx


def test_offset_index_entries_are_8_bytes_big_endian(tmp_path) -> None:
    idx = _offset_index(tmp_path, base=100, max_bytes=1001)
    assert idx.file_size == 1000  # preallocated, rounded down to the entry size
    assert idx.max_entries == 125
    idx.append(105, 4200)
    idx.append(0x1_0000 + 100, 0x0102_0304)
    idx.trim()
    raw = (tmp_path / "x.index").read_bytes()
    assert len(raw) == 16
    assert raw[:8] == struct.pack(">ii", 5, 4200)
    assert raw[8:] == bytes.fromhex("00010000 01020304")
    idx.close()


def test_offset_index_lookup(tmp_path) -> None:
    idx = _offset_index(tmp_path)
    assert idx.lookup(150) == (100, 0)
    for off, pos in [(105, 500), (110, 1000), (120, 2000)]:
        idx.append(off, pos)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(104) == (100, 0)
    assert idx.lookup(105) == (105, 500)
    assert idx.lookup(109) == (105, 500)
    assert idx.lookup(110) == (110, 1000)
    assert idx.lookup(10**12) == (120, 2000)
    assert idx.lookup_position(0) == 0
    assert idx.lookup_position(999) == 500
    assert idx.lookup_position(1000) == 1000
    assert idx.lookup_position(2**40) == 2000
    assert idx.last_entry() == (120, 2000)
    with pytest.raises(ValueError):
        idx.append(119, 3000)
    with pytest.raises(ValueError):
        idx.append(130, 2000)
    idx.close()


def test_offset_index_lookup_warm_and_cold_match_brute_force(tmp_path) -> None:
    idx = _offset_index(tmp_path, base=0, max_bytes=8 * 5000)
    rng = random.Random(7)
    rel, pos, entries = 0, 0, []
    for _ in range(5000):
        rel += rng.randint(1, 5)
        pos += rng.randint(1, 100)
        idx.append(rel, pos)
        entries.append((rel, pos))
    for target in [rng.randint(-5, rel + 5) for _ in range(500)] + [0, rel, entries[3000][0]]:
        expected = max((e for e in entries if e[0] <= target), default=(0, 0))
        assert idx.lookup(target) == expected
        p = target * 20
        assert idx.lookup_position(p) == max((e[1] for e in entries if e[1] <= p), default=0)
    idx.close()


def test_offset_index_full_trim_reopen(tmp_path) -> None:
    idx = _offset_index(tmp_path, base=0, max_bytes=24)
    for i in range(3):
        assert not idx.is_full
        idx.append(i, i * 10)
    assert idx.is_full
    with pytest.raises(ValueError):
        idx.append(5, 50)
    idx.trim()
    assert not idx.active and idx.file_size == 24
    idx.close()
    again = OffsetIndex(FileSystem(), str(tmp_path / "x.index"), 0, 80)
    again.sanity_check(log_size=100)
    assert len(again) == 3 and again.lookup(1) == (1, 10)
    again.make_active()
    assert again.file_size == 80 and len(again) == 3 and not again.is_full
    again.append(3, 30)
    again.truncate_to_position(20)
    assert [(int(r), int(p)) for r, p in again.entries()] == [(0, 0), (1, 10)]
    again.close()


@pytest.mark.parametrize(
    "raw",
    [
        b"\x00" * 12,  # not a multiple of 8
        struct.pack(">ii", 1, 10) + b"\x00" * 8,  # zero padding: offsets go backwards
        struct.pack(">iiii", 1, 10, 2, 10),  # positions do not increase
        struct.pack(">ii", -1, 0),  # negative
        struct.pack(">ii", 1, 5000),  # points past the log's end
    ],
)
def test_offset_index_sanity_check(tmp_path, raw: bytes) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(raw)
    idx = OffsetIndex(FileSystem(), str(path), 0, 1000)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check(log_size=1000)
    idx.close()


def test_time_index_entries_are_12_bytes_big_endian(tmp_path) -> None:
    idx = TimeIndex(FileSystem(), str(tmp_path / "x.timeindex"), 50, 1000)
    idx.make_active()
    assert idx.file_size == 996
    assert idx.lookup(10**6) == (-1, 50)
    assert not idx.maybe_append(-1, 50)
    assert idx.maybe_append(1000, 55)
    assert not idx.maybe_append(1000, 60)  # not greater: skipped
    assert not idx.maybe_append(999, 60)
    assert idx.maybe_append(2000, 60)
    assert idx.lookup(999) == (-1, 50)
    assert idx.lookup(1000) == (1000, 55)
    assert idx.lookup(1999) == (1000, 55)
    assert idx.lookup(2**63 - 1) == (2000, 60)
    idx.trim()
    raw = (tmp_path / "x.timeindex").read_bytes()
    assert raw == struct.pack(">qi", 1000, 5) + struct.pack(">qi", 2000, 10)
    idx.make_active()
    idx.truncate_to_offset(60)
    assert idx.last_entry() == (1000, 55)
    idx.close()


def test_time_index_sanity_check(tmp_path) -> None:
    path = tmp_path / "x.timeindex"
    path.write_bytes(struct.pack(">qiqi", 2000, 1, 1000, 2))
    idx = TimeIndex(FileSystem(), str(path), 0, 1000)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close()
    path.write_bytes(struct.pack(">qi", 2000, 1) + b"\x00" * 12)
    idx = TimeIndex(FileSystem(), str(path), 0, 1000)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    idx.close()


def test_zero_capacity_index(tmp_path) -> None:
    idx = TimeIndex(FileSystem(), str(tmp_path / "x.timeindex"), 0, 4)
    idx.make_active()
    assert idx.is_full and not idx.maybe_append(5, 0)
    idx.trim()
    idx.close()
    assert os.path.getsize(tmp_path / "x.timeindex") == 0
