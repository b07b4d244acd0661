"""Kafka's transaction index (``<base>.txnindex``): the aborted transactions of one segment.

A segment's index lists the transactions whose ABORT marker sits in that
segment (a transaction's data may start in earlier segments). read_committed
fetches use it to tell the consumer which producers' records to drop
(`PartitionLog.aborted_transactions`); the cleaner uses it to drop aborted data.

File format (Kafka's AbortedTxn), entries back to back, no header, no checksum,
not preallocated, in increasing lastOffset order; 34 bytes each, big-endian::

    off size field
      0   2  version            INT16, always 0
      2   8  producerId         INT64
     10   8  firstOffset        INT64  first offset of the transaction in this partition
     18   8  lastOffset         INT64  offset of its ABORT marker
     26   8  lastStableOffset   INT64  the partition's LSO once the marker was written: the
                                       first offset of the oldest other open transaction,
                                       else lastOffset + 1

The file is created on the first entry, so a segment without aborted
transactions has none (as in Kafka). Entries are also kept in memory (aborts
are rare), so lookups never touch the file.

Crash behaviour: an entry is written after its marker reaches the `.log` and
fsynced with the segment. At open a torn trailing partial entry is dropped (and
cut from the file before the next append); an entry with a version other than
0, a firstOffset not below its lastOffset, a lastStableOffset above lastOffset
+ 1, or lastOffset not increasing marks the index `corrupt` (no entries kept):
its owner rebuilds it from the log (`storage.txn_recovery`), as it does for
every segment recovered after an unclean shutdown.

Threading: everything runs on the event loop thread except `flush` (the
segment's flush thread), which only fsyncs the open descriptor; the owner
never runs `close` concurrently with it.
"""

from __future__ import annotations

import contextlib
import struct
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from storage.fs import File, FileSystem

VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size
assert ENTRY_SIZE == 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: producer, first offset, ABORT marker offset, LSO after the marker."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        """The 34-byte file entry (version 0)."""
        return _ENTRY.pack(
            VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


def iter_entries(data: bytes) -> Iterator[tuple[int, AbortedTxn]]:
    """``(version, entry)`` for each whole 34-byte entry of a `.txnindex` file's bytes, unchecked."""
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        yield version, AbortedTxn(pid, first, last, lso)


def entry_problem(version: int, txn: AbortedTxn, previous_last: int | None) -> str | None:
    """Why an entry read from a file cannot be right, or None."""
    if version != VERSION:
        return f"version {version}"
    if txn.producer_id < 0 or txn.first_offset < 0 or txn.first_offset >= txn.last_offset:
        return f"impossible entry {txn}"
    if txn.last_stable_offset > txn.last_offset + 1:
        return f"last stable offset past the marker in {txn}"
    if previous_last is not None and txn.last_offset <= previous_last:
        return f"last offset {txn.last_offset} after {previous_last}"
    return None


class TransactionIndex:
    """The aborted transactions of one segment: in memory, plus the `.txnindex` at ``path``.

    ``path`` follows the segment's renames (the owner renames the file and sets it).
    """

    __slots__ = ("path", "_fs", "_entries", "_file", "_file_size", "corrupt", "_gen", "_flushed_gen")

    def __init__(self, fs: FileSystem, path: str) -> None:
        """Load ``path`` if it exists (see the module docstring for what is dropped or flagged)."""
        self.path = path
        self._fs = fs
        self._entries: list[AbortedTxn] = []
        self._file: File | None = None
        self._file_size = -1  # bytes in the file, -1 when there is none
        self.corrupt: str | None = None  # why the file's content was rejected (then rebuild it)
        self._gen = 0
        self._flushed_gen = 0
        if fs.exists(path):
            self._load(fs.read_bytes(path))

    def _load(self, data: bytes) -> None:
        self._file_size = len(data)
        previous: int | None = None
        for version, txn in iter_entries(data):
            problem = entry_problem(version, txn, previous)
            if problem is not None:
                self.corrupt = f"{self.path}: {problem}"
                self._entries = []
                return
            self._entries.append(txn)
            previous = txn.last_offset

    # -- reading -----------------------------------------------------------------------------

    @property
    def entries(self) -> Sequence[AbortedTxn]:
        """The entries in lastOffset order (the live list: do not modify)."""
        return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def exists(self) -> bool:
        """Whether the index has a file."""
        return self._file_size >= 0

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries overlapping [fetch_offset, upper_bound): lastOffset >= fetch_offset and
        firstOffset < upper_bound."""
        out: list[AbortedTxn] = []
        self.collect_into(out, fetch_offset, upper_bound)
        return out

    def collect_into(self, out: list[AbortedTxn], fetch_offset: int, upper_bound: int) -> bool:
        """Add the entries `collect` returns to ``out``, stopping (and returning True) at the first
        entry whose lastStableOffset >= ``upper_bound``: no later entry, here or in a later
        segment, can overlap the range (Kafka's collectAbortedTxns)."""
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return True
        return False

    def check_range(self, base_offset: int, next_offset: int) -> None:
        """Flag the index `corrupt` if a marker offset lies outside the segment's [base, next)."""
        if self._entries and (
            self._entries[0].last_offset < base_offset or self._entries[-1].last_offset >= next_offset
        ):
            self.corrupt = (
                f"{self.path}: aborted transactions end in [{self._entries[0].last_offset}, "
                f"{self._entries[-1].last_offset}], outside the segment's [{base_offset}, {next_offset})"
            )

    # -- writing -----------------------------------------------------------------------------

    def _open(self) -> File:
        """The descriptor to append with, creating the file and cutting a torn tail if needed."""
        f = self._file
        if f is None:
            f = self._file = self._fs.open(self.path)
            whole = len(self._entries) * ENTRY_SIZE
            if f.size() != whole:
                f.truncate(whole)
            self._file_size = whole
        return f

    def append(self, txn: AbortedTxn) -> bool:
        """Add ``txn`` (its lastOffset must exceed the last entry's); True if this created the file.

        `ValueError` for an out-of-order entry. On `OSError` the file and the
        entries are unchanged (the write is all or nothing).
        """
        if self._entries and txn.last_offset <= self._entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction ending at {txn.last_offset} after one ending at "
                f"{self._entries[-1].last_offset} in {self.path}"
            )
        if txn.first_offset > txn.last_offset:
            raise ValueError(f"aborted transaction {txn} starts after its marker")
        created = not self.exists
        f = self._open()
        f.write(txn.encode())
        self._file_size = f.size()
        self._entries.append(txn)
        self._gen += 1
        return created

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose lastOffset >= ``offset`` (their markers are gone)."""
        keep = bisect_right([t.last_offset for t in self._entries], offset - 1)
        if keep == len(self._entries):
            return
        del self._entries[keep:]
        if self.exists:
            f = self._open()
            f.truncate(keep * ENTRY_SIZE)
            self._file_size = f.size()
            self._gen += 1

    def replace(self, entries: Iterable[AbortedTxn]) -> bool:
        """Make ``entries`` the index's content (a rebuild); True if the file had to change.

        Written atomically (temp file, fsync, rename), so a crash leaves the old or
        the new index; an empty index has no file. Clears `corrupt`.
        """
        new = list(entries)
        if new == self._entries and self.corrupt is None:
            if new and self._file_size == len(new) * ENTRY_SIZE:
                return False  # the file holds exactly these entries
            if not new and not self.exists:
                return False
        self.close()
        if new:
            self._fs.atomic_write(self.path, b"".join(t.encode() for t in new))
            self._file_size = len(new) * ENTRY_SIZE
        else:
            self._fs.remove_if_exists(self.path)
            self._file_size = -1
        self._entries = new
        self.corrupt = None
        return True

    def flush(self) -> None:
        """fsync the file if entries were written or cut since the last flush (any thread)."""
        gen = self._gen
        f = self._file
        if gen != self._flushed_gen and f is not None and not f.closed:
            f.fsync()
        self._flushed_gen = gen

    def close(self) -> None:
        """Close the descriptor (the entries stay readable; an append reopens the file)."""
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path!r}, entries={len(self._entries)})"


class AbortedRanges:
    """Is the batch of producer P at offset o part of an aborted transaction? (for the cleaner)

    Built from `AbortedTxn` entries: P's aborted transactions cover [firstOffset,
    lastOffset]; a producer has one transaction open at a time, so its ranges do
    not overlap. Lookups are a dict access plus a binary search.
    """

    __slots__ = ("_firsts", "_lasts")

    def __init__(self, txns: Iterable[AbortedTxn]) -> None:
        spans: dict[int, list[tuple[int, int]]] = {}
        for t in txns:
            spans.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))
        self._firsts: dict[int, list[int]] = {}
        self._lasts: dict[int, list[int]] = {}
        for pid, ranges in spans.items():
            ranges.sort()
            self._firsts[pid] = [r[0] for r in ranges]
            self._lasts[pid] = [r[1] for r in ranges]

    def __bool__(self) -> bool:
        return bool(self._firsts)

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        firsts = self._firsts.get(producer_id)
        if firsts is None:
            return False
        i = bisect_right(firsts, offset) - 1
        return i >= 0 and offset <= self._lasts[producer_id][i]
