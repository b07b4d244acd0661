"""Sparse segment indexes, memory-mapped as numpy structured arrays.

Both index kinds share `MappedIndex`: a file of fixed-size big-endian entries,
mapped with ``mmap`` and viewed as a numpy structured array. The active
segment's index is preallocated to ``segment.index.bytes`` (rounded down to the
entry size; the tail is zeros, a sparse file) and mapped read-write; on roll or
clean close it is trimmed to its valid entries and remapped read-only, so a
closed segment's index never carries zero padding.

Lookups: entries are sorted, so "greatest entry <= target" is a binary search.
Most lookups (consumers near the tail) land in the last 8 KiB of the index, the
*warm section* (as in Kafka): it is searched with ``numpy.searchsorted``, which
copies the slice to native byte order, so only warm, resident pages are touched.
Older targets are searched by `bisect` directly over the mapped view: about 20
element reads touching about 20 pages. ``searchsorted`` over the whole mapping
would first copy all of it (measured: ~0.9 ms for a full 10 MiB index, versus
~2 us for bisect).

No checksums: after a crash an index is rebuilt from its `.log` (see
`LogSegment.recover`); `sanity_check` catches the usual damage (bad size, zero
padding, entries out of order) and raises `CorruptIndexError`, which leads to a
rebuild, never to a crash.
"""

from __future__ import annotations

import mmap
import struct
from bisect import bisect_left, bisect_right
from typing import ClassVar

import numpy as np

from storage.errors import CorruptIndexError
from storage.fs import File, FileSystem

__all__ = ["CorruptIndexError", "MappedIndex", "OffsetIndex", "TimeIndex"]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_WARM_BYTES = 8192
# Appends read the last entry with struct from the mapping (numpy's per-field views cost
# microseconds per call) and write the new one with pwrite, not through the mapping: a store
# into a mapped page that is new or was just written back takes a page fault that blocks on
# the filesystem (measured ~3x the cost of pwrite with 64 active indexes). The mapping sees
# the written bytes at once (one page cache).
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class MappedIndex:
    """Common machinery: file, mapping, entry count, search, trim/extend, flush."""

    ENTRY_SIZE: ClassVar[int]
    DTYPE: ClassVar[np.dtype]
    KEY: ClassVar[str]  # the field `lookup` searches

    def __init__(self, fs: FileSystem, path: str, base_offset: int, max_index_bytes: int) -> None:
        """Open (creating if absent) and map the file as it is: read-only, not yet checked.

        Call `sanity_check` before trusting it, `make_active` to append to it, or
        `reset` to rebuild it from scratch.
        """
        self.path = path
        self.base_offset = base_offset
        self._max_entries = max(0, max_index_bytes) // self.ENTRY_SIZE
        self._file: File = fs.open(path)
        size = self._file.size()
        self._size_error = (
            f"{path}: size {size} is not a multiple of {self.ENTRY_SIZE}" if size % self.ENTRY_SIZE else None
        )
        self._entries = size // self.ENTRY_SIZE
        self._active = False
        self._mm: mmap.mmap | None = None
        self._arr: np.ndarray = np.empty(0, dtype=self.DTYPE)
        self._map(self._entries * self.ENTRY_SIZE, writable=False)

    # -- mapping -----------------------------------------------------------------------------

    def _map(self, length: int, *, writable: bool) -> None:
        self._unmap()
        if length > 0:
            access = mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
            self._mm = mmap.mmap(self._file.fileno(), length, access=access)
            self._arr = np.frombuffer(self._mm, dtype=self.DTYPE, count=length // self.ENTRY_SIZE)

    def _unmap(self) -> None:
        # The array must go first: an mmap with exported buffers cannot be closed.
        self._arr = np.empty(0, dtype=self.DTYPE)
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def make_active(self) -> None:
        """Preallocate to the configured size and map read-write, for appends."""
        if self._active:
            return
        length = max(self._max_entries, self._entries) * self.ENTRY_SIZE
        self._unmap()
        self._file.truncate(length)
        self._map(length, writable=True)
        self._active = True

    def trim(self) -> None:
        """Shrink the file to the valid entries and map it read-only (segment no longer active)."""
        length = self._entries * self.ENTRY_SIZE
        if not self._active and self._file.size() == length:
            return
        self._unmap()
        self._file.truncate(length)
        self._size_error = None
        self._map(length, writable=False)
        self._active = False

    def reset(self) -> None:
        """Drop every entry (before a rebuild); leaves the index active."""
        self._unmap()
        self._file.truncate(0)
        self._size_error = None
        self._entries = 0
        self._active = False
        self.make_active()

    # -- state -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._entries

    @property
    def active(self) -> bool:
        return self._active

    @property
    def max_entries(self) -> int:
        """Capacity while active."""
        return max(self._max_entries, self._entries) if self._active else self._entries

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    @property
    def file_size(self) -> int:
        return self._file.size()

    def entries(self) -> np.ndarray:
        """A copy of the valid entries (structured array, big-endian fields)."""
        return self._arr[: self._entries].copy()

    def _check_append(self) -> None:
        if not self._active:
            raise ValueError(f"{self.path}: index is not active")
        if self._entries >= self.max_entries:
            raise ValueError(f"{self.path}: index is full")

    # -- search ------------------------------------------------------------------------------

    def _search(self, field: str, value: int) -> int:
        """Index of the greatest entry whose ``field`` <= ``value``; -1 if none."""
        n = self._entries
        if n == 0:
            return -1
        keys = self._arr[field]
        warm = _WARM_BYTES // self.ENTRY_SIZE
        lo = n - warm if n > warm else 0
        if lo == 0 or value >= keys[lo]:
            return lo + int(np.searchsorted(keys[lo:n], value, side="right")) - 1
        return bisect_right(keys, value, 0, lo) - 1

    def _count_below(self, field: str, value: int) -> int:
        """Number of entries whose ``field`` < ``value``."""
        return bisect_left(self._arr[field], value, 0, self._entries)

    def _truncate_entries(self, keep: int) -> None:
        if keep < self._entries:
            self.make_active()
            self._arr[keep : self._entries] = 0
            self._entries = keep

    def _check_sorted(self, field: str, *, strict: bool) -> None:
        keys = self._arr[field][: self._entries].astype(np.int64)
        if keys.size and keys[0] < 0:
            raise CorruptIndexError(f"{self.path}: negative {field} {keys[0]}")
        diffs = np.diff(keys)
        bad = np.flatnonzero(diffs <= 0 if strict else diffs < 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise CorruptIndexError(
                f"{self.path}: entry {i} {field} {keys[i]} does not increase on {keys[i - 1]}"
            )

    def sanity_check(self) -> None:
        if self._size_error:
            raise CorruptIndexError(self._size_error)

    # -- durability --------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the file. On Linux this also writes back pages dirtied through the mapping.

        Safe to call from another thread while the loop appends (it touches only the fd).
        """
        self._file.fsync()

    def close(self) -> None:
        self._unmap()
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed


class OffsetIndex(MappedIndex):
    """``<base>.index``: sparse map from offset to byte position in the segment's `.log`.

    File format: entries of 8 bytes, back to back, no header, no checksum::

        bytes 0-3  relativeOffset  INT32 big-endian  (offset - segment base offset)
        bytes 4-7  position        INT32 big-endian  (byte position of a batch in the .log)

    An entry ``(r, p)`` says: the batch starting at byte ``p`` has last offset
    ``base + r``. Both columns strictly increase. Entries are sparse (about one
    per ``index.interval.bytes`` of log), so a lookup gives a position at or
    before the wanted batch and the reader scans batch headers forward from it.
    Not checksummed; rebuilt from the log after a crash or when `sanity_check` fails.
    """

    ENTRY_SIZE = 8
    DTYPE = np.dtype([("rel", ">i4"), ("pos", ">i4")])
    KEY = "rel"

    def append(self, offset: int, position: int) -> None:
        """Add ``(offset - base, position)``; both must exceed the last entry's."""
        self._check_append()
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"relative offset {rel} does not fit in int32")
        n = self._entries
        mm = self._mm
        assert mm is not None  # active, so mapped
        if n:
            last_rel, last_pos = _OFFSET_ENTRY.unpack_from(mm, (n - 1) * 8)
            if rel <= last_rel or position <= last_pos:
                raise ValueError(f"index entry ({offset}, {position}) does not increase on the last entry")
        self._file.write_at(_OFFSET_ENTRY.pack(rel, position), n * 8)
        self._entries = n + 1

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the greatest entry with offset <= ``offset``; ``(base, 0)`` if none."""
        rel = min(offset - self.base_offset, INT32_MAX)
        i = self._search("rel", rel) if rel >= 0 else -1
        if i < 0:
            return self.base_offset, 0
        entry = self._arr[i]
        return self.base_offset + int(entry["rel"]), int(entry["pos"])

    def lookup_position(self, position: int) -> int:
        """Greatest indexed batch position <= ``position`` (0 if none): a batch boundary."""
        i = self._search("pos", max(INT32_MIN, min(position, INT32_MAX)))
        return int(self._arr["pos"][i]) if i >= 0 else 0

    def last_entry(self) -> tuple[int, int]:
        """``(offset, position)`` of the last entry, ``(base, 0)`` if empty."""
        if not self._entries:
            return self.base_offset, 0
        entry = self._arr[self._entries - 1]
        return self.base_offset + int(entry["rel"]), int(entry["pos"])

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at ``position`` or later (the log is being truncated there)."""
        self._truncate_entries(self._count_below("pos", position))

    def sanity_check(self, log_size: int | None = None) -> None:
        """`CorruptIndexError` unless entries strictly increase (and point inside the log)."""
        super().sanity_check()
        self._check_sorted("rel", strict=True)
        self._check_sorted("pos", strict=True)
        if log_size is not None and self._entries and self.last_entry()[1] >= log_size:
            raise CorruptIndexError(f"{self.path}: last entry points past the log's end ({log_size})")


class TimeIndex(MappedIndex):
    """``<base>.timeindex``: sparse map from timestamp to offset.

    File format: entries of 12 bytes, back to back, no header, no checksum::

        bytes 0-7   timestamp       INT64 big-endian  (ms; the segment's max timestamp so far)
        bytes 8-11  relativeOffset  INT32 big-endian  (last offset of the batch holding it, minus base)

    Appended together with an offset-index entry, and only when the timestamp is
    greater than the last entry's, so timestamps strictly increase. Entry
    ``(t, r)``: every batch up to offset ``base + r`` has max timestamp <= t, and
    the batch ending at ``base + r`` is the first to reach ``t``. Not
    checksummed; rebuilt from the log after a crash or when `sanity_check` fails.
    """

    ENTRY_SIZE = 12
    DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])
    KEY = "ts"

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add ``(timestamp, offset - base)`` if the timestamp is greater than the last entry's.

        Timestamps <= -1 ("no timestamp") are never indexed. Returns whether an
        entry was added; a full index skips the entry (it is sparse anyway).
        """
        n = self._entries
        mm = self._mm
        last_ts, last_rel = _TIME_ENTRY.unpack_from(mm, (n - 1) * 12) if n and mm is not None else (-1, -1)
        if timestamp <= last_ts:
            return False
        if not self._active or mm is None or n >= self.max_entries:
            return False
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise ValueError(f"relative offset {rel} does not fit in int32")
        if rel < last_rel:
            raise ValueError(f"time index offset {offset} goes backwards")
        self._file.write_at(_TIME_ENTRY.pack(timestamp, rel), n * 12)
        self._entries = n + 1
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """``(timestamp, offset)`` of the greatest entry with timestamp <= ``timestamp``; ``(-1, base)`` if none."""
        i = self._search("ts", max(INT64_MIN, min(timestamp, INT64_MAX)))
        if i < 0:
            return -1, self.base_offset
        entry = self._arr[i]
        return int(entry["ts"]), self.base_offset + int(entry["rel"])

    def last_entry(self) -> tuple[int, int]:
        """``(timestamp, offset)`` of the last entry, ``(-1, base)`` if empty."""
        if not self._entries:
            return -1, self.base_offset
        entry = self._arr[self._entries - 1]
        return int(entry["ts"]), self.base_offset + int(entry["rel"])

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries whose offset is ``offset`` or later."""
        rel = offset - self.base_offset
        keep = self._count_below("rel", rel) if rel >= 0 else 0
        self._truncate_entries(keep)

    def sanity_check(self, last_offset: int | None = None) -> None:
        """`CorruptIndexError` unless timestamps strictly increase and offsets never decrease."""
        super().sanity_check()
        self._check_sorted("ts", strict=True)
        self._check_sorted("rel", strict=False)
        if last_offset is not None and self._entries and self.last_entry()[1] > last_offset:
            raise CorruptIndexError(f"{self.path}: last entry's offset is past the segment's last offset")
