"""One log segment: a `.log` file of record batches plus its offset, time and transaction indexes.

``<base>.log`` holds RecordBatch v2 batches back to back, exactly the bytes the
producer sent except baseOffset and partitionLeaderEpoch (set by the broker), no
header or footer of its own. Offsets in the segment start at ``base_offset``
(its file name) and increase from batch to batch; a byte position in the file
fits in int32 and so does ``offset - base_offset``.

Index maintenance (as Kafka): while appending, once more than
``index.interval.bytes`` have been appended since the last index entry, the
next batch gets an offset-index entry (its last offset -> the position where it
starts) and, if the segment's max timestamp grew since the last time-index
entry, a time-index entry (max timestamp so far -> last offset of the batch
holding it). Recovery rebuilds exactly the same entries from the batches.

The transaction index (`storage.txn_index`, the aborted transactions whose ABORT
marker is in this segment) is appended to by the owner (`append_aborted_txn`);
it is truncated and renamed with the segment, but rebuilding it needs the
earlier log, so `recover` only drops its entries past the new end and the
owner rebuilds it (`storage.txn_recovery`).

Crash behaviour: the `.log` may end in a torn batch (partial, zero-filled, or
garbage); `recover` keeps the longest prefix of CRC-valid batches with
increasing offsets, truncates the rest and rebuilds both indexes. `load` is the
cheap path for segments closed cleanly: it sanity-checks the indexes and scans
the batch headers after the last index entry, raising `CorruptIndexError` if
anything is off (the caller then runs `recover`).

Threading: everything runs on the event loop thread except `flush`, which only
fsyncs file descriptors and may run in an executor thread concurrently with
appends, rolls and reads; the owner (`PartitionLog`) makes sure `close` never
runs concurrently with `flush`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
from collections.abc import Callable, Iterator, Sequence

from protocol.errors import ProtocolError
from protocol.records import (
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_BIT,
    BatchHeader,
    scan_valid_prefix,
)
from storage import naming
from storage.config import LogConfig
from storage.errors import CorruptIndexError
from storage.fs import BytesLike, File, FileSystem
from storage.index import INT32_MAX, OffsetIndex, TimeIndex
from storage.record_scan import batch_payload, scan_records
from storage.txn_index import AbortedTxn, TransactionIndex

log = logging.getLogger(__name__)

# The 61-byte batch header (PROTOCOL.md "RecordBatch v2"), unpacked in one call; its fields are in
# `protocol.records.BatchHeader`'s order after ``position``.
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == RECORD_BATCH_OVERHEAD
_BATCH_LENGTH = struct.Struct(">i")  # at byte 8
_SCAN_CHUNK = 16 * 1024
_RECOVERY_CHUNK = 1024 * 1024
VIEW_MIN_BYTES = 64 * 1024
"""Reads `read(to_send=True)` serves as views of the mapped `.log`: below this a copy costs less
than mapping the file's new tail."""
_BOUNDARY_BULK_BYTES = 64 * 1024  # `_last_boundary` reads up to this many bytes at once
LOG_RESERVE_BYTES = 4 * 1024 * 1024
"""Disk blocks reserved ahead of the active segment's appends (see storage/fs.py); 1 MB to 16 MB
steps measured alike, so a small one keeps many partitions' reservations small."""

# (position of the batch inside the appended bytes, its last offset, its max timestamp)
BatchIndexInfo = tuple[int, int, int]


class LogSegment:
    """A `.log` file plus `OffsetIndex`, `TimeIndex` and `TransactionIndex`, all named by ``base_offset``.

    Construct with `create` (new, empty, active) or `open` (existing files; then
    `load` or `recover`). Offsets passed in and returned are absolute.
    """

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        base_offset: int,
        config: LogConfig,
        log_file: File,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        created_ms: int,
        stage: str = "",
        txn_index: TransactionIndex | None = None,
    ) -> None:
        self._fs = fs
        self.stage = stage  # "" for live segments; `.cleaned`/`.swap`/`.deleted` while the cleaner or retention owns it
        self.directory = directory
        self.base_offset = base_offset
        self._config = config
        self._log = log_file
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = (
            txn_index
            if txn_index is not None
            else TransactionIndex(fs, naming.txn_index_file(directory, base_offset) + stage)
        )
        self.created_ms = created_ms
        self._next_offset = base_offset
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        self._bytes_since_index_entry = 0
        self.indexes_missing = False
        self.recovered = False  # `recover` ran on this segment since it was opened
        self.saw_transactional = False  # `recover` found a transactional batch (data or marker)
        # Mutation counter vs. the value at the last completed flush (flush may run in a thread).
        self._gen = 0
        self._flushed_gen = -1
        self._log_synced_gen = -1  # the same, for `flush_log` (the `.log` alone)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def create(
        cls, fs: FileSystem, directory: str, base_offset: int, config: LogConfig, now_ms: int, stage: str = ""
    ) -> LogSegment:
        """A new empty active segment (any stale files with the same name are emptied).

        ``stage`` is appended to every file name (the cleaner builds `.cleaned` segments).
        """
        seg = cls.open(fs, directory, base_offset, config, now_ms, stage)
        seg._log.truncate(0)
        seg.offset_index.reset()
        seg.time_index.reset()
        seg.txn_index.replace(())
        seg.indexes_missing = False
        seg.created_ms = now_ms
        seg._log.reserve_ahead = LOG_RESERVE_BYTES
        return seg

    @classmethod
    def open(
        cls, fs: FileSystem, directory: str, base_offset: int, config: LogConfig, now_ms: int, stage: str = ""
    ) -> LogSegment:
        """Open existing files (indexes are created empty if absent, and flagged `indexes_missing`).

        Nothing is trusted yet: call `load` (clean shutdown) or `recover` next.
        """
        index_path = naming.index_file(directory, base_offset) + stage
        time_index_path = naming.time_index_file(directory, base_offset) + stage
        missing = not fs.exists(index_path) or not fs.exists(time_index_path)
        log_file = fs.open(naming.log_file(directory, base_offset) + stage)
        try:
            offset_index = OffsetIndex(fs, index_path, base_offset, config.segment_index_bytes)
            try:
                time_index = TimeIndex(fs, time_index_path, base_offset, config.segment_index_bytes)
            except BaseException:
                offset_index.close()
                raise
        except BaseException:
            log_file.close()
            raise
        try:
            txn_index = TransactionIndex(fs, naming.txn_index_file(directory, base_offset) + stage)
        except BaseException:
            offset_index.close()
            time_index.close()
            log_file.close()
            raise
        seg = cls(
            fs, directory, base_offset, config, log_file, offset_index, time_index, now_ms, stage, txn_index
        )
        seg.indexes_missing = missing
        return seg

    # -- properties --------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Bytes in the `.log`."""
        return self._log.size()

    @property
    def next_offset(self) -> int:
        """One past the last offset in the segment (``base_offset`` when empty)."""
        return self._next_offset

    @property
    def is_empty(self) -> bool:
        return self._log.size() == 0

    @property
    def largest_timestamp(self) -> int:
        """Largest batch max timestamp in the segment, -1 if none."""
        return self._max_timestamp

    def retention_timestamp(self) -> int:
        """What time-based retention compares with ``retention.ms`` (as Kafka): the largest
        timestamp in the segment (from its time index), or the `.log` file's mtime if it has none."""
        if self._max_timestamp >= 0:
            return self._max_timestamp
        return self._log.mtime_ms()

    @property
    def active(self) -> bool:
        return self.offset_index.active

    @property
    def log_file(self) -> File:
        return self._log

    @property
    def generation(self) -> int:
        """Changes whenever the segment's content or indexes change (append, truncate, recover, seal)."""
        return self._gen

    @property
    def closed(self) -> bool:
        return self._log.closed

    @property
    def dirty(self) -> bool:
        """Changed since the last completed `flush`."""
        return self._gen != self._flushed_gen

    @property
    def index_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
        data: BytesLike,
        *,
        batches: Sequence[BatchIndexInfo] | None = None,
    ) -> int:
        """Write ``data`` (whole batches, offsets already assigned) in one write; return its position.

        ``batches`` describes each batch in ``data`` for per-batch index entries
        (as Kafka and `recover` do); without it ``data`` is indexed as one unit
        (last offset ``last_offset``, max timestamp ``max_timestamp``).
        On `OSError` from the log write nothing was written and the indexes are
        unchanged; an `OSError` from an index write leaves ``log_file.failed`` set.
        """
        if first_offset < self._next_offset:
            raise ValueError(f"offset {first_offset} is below the segment's next offset {self._next_offset}")
        if last_offset - self.base_offset > INT32_MAX:
            raise ValueError(f"offset {last_offset} does not fit segment {self.base_offset} (int32 relative)")
        if not self.active:
            raise ValueError("append to an inactive segment")
        position = self._log.write(data)
        try:
            if batches is None:
                if max_timestamp > self._max_timestamp:
                    self._max_timestamp = max_timestamp
                    self._offset_of_max_timestamp = offset_of_max_timestamp
                self._index_batch(position, last_offset, -1, len(data))
            else:
                end = len(data)
                for i, (rel, last, ts) in enumerate(batches):
                    nxt = batches[i + 1][0] if i + 1 < len(batches) else end
                    self._index_batch(position + rel, last, ts, nxt - rel)
        except OSError:
            # The log holds batches its index does not: unusable until recovery rebuilds the
            # index (the owner sees `failed` and takes the partition offline).
            self._log.failed = True
            raise
        self._next_offset = last_offset + 1
        self._gen += 1
        return position

    def append_aborted_txn(self, txn: AbortedTxn) -> bool:
        """Add an entry to the transaction index (its ABORT marker is in this segment); True if that
        created the `.txnindex` file. `OSError` if the write failed (nothing was added)."""
        created = self.txn_index.append(txn)
        self._gen += 1
        return created

    def _index_batch(self, position: int, last_offset: int, max_timestamp: int, size: int) -> None:
        """Index bookkeeping for one batch (shared by `append` and `recover`)."""
        if max_timestamp > self._max_timestamp:
            self._max_timestamp = max_timestamp
            self._offset_of_max_timestamp = last_offset
        if self._bytes_since_index_entry > self._config.index_interval_bytes:
            if not self.offset_index.is_full:
                self.offset_index.append(last_offset, position)
                self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += size

    # -- reading -----------------------------------------------------------------------------

    def iter_headers(self, start_position: int = 0, end_position: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the batches from ``start_position`` (a batch boundary) to ``end_position``.

        ``BatchHeader.position`` is the byte position in the `.log`. Stops quietly
        at anything that is not a plausible batch (the caller checks where it stopped
        if that matters); CRCs are not checked. Reads 16 KiB chunks with pread.
        """
        end = self._log.size() if end_position is None else min(end_position, self._log.size())
        pos = start_position
        chunk = b""
        chunk_pos = pos
        while pos < end:
            off = pos - chunk_pos
            if off + RECORD_BATCH_OVERHEAD > len(chunk):
                chunk = self._log.pread(min(_SCAN_CHUNK, end - pos), pos)
                chunk_pos, off = pos, 0
                if len(chunk) < RECORD_BATCH_OVERHEAD:
                    return
            header = BatchHeader(pos, *_HEADER.unpack_from(chunk, off))
            if (
                header.magic != MAGIC
                or header.batch_length < MIN_BATCH_LENGTH
                or header.last_offset_delta < 0
            ):
                return
            size = header.batch_length + LOG_OVERHEAD
            if pos + size > end:
                return
            yield header
            pos += size

    def translate_offset(self, offset: int, end_position: int | None = None) -> BatchHeader | None:
        """Header of the first batch whose last offset >= ``offset`` (before ``end_position``), or None."""
        _, position = self.offset_index.lookup(offset)
        for header in self.iter_headers(position, end_position):
            if header.base_offset + header.last_offset_delta >= offset:
                return header
        return None

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_position: int | None = None,
        *,
        min_one: bool = True,
        to_send: bool = False,
    ) -> bytes | memoryview:
        """Whole batches starting with the one that contains ``start_offset``.

        At most ``max_bytes`` bytes, except that the first batch is returned whole
        even if larger (unless ``min_one`` is False); never bytes at or past
        ``max_position`` (a batch boundary, e.g. the high watermark's position).
        Empty if no batch in range holds ``start_offset`` or later.
        ``to_send``: reads of `VIEW_MIN_BYTES` or more come back as a read-only
        view of the mapped `.log` (`File.view`) instead of a copy, for a Fetch
        response to hand to the socket.
        """
        limit = self._log.size() if max_position is None else min(max_position, self._log.size())
        first = self.translate_offset(start_offset, limit)
        if first is None:
            return b""
        start = first.position
        if limit - start <= max_bytes:
            end = limit
        else:
            end = self._last_boundary(start, start + max(0, max_bytes))
            if end == start:
                if not min_one:
                    return b""
                end = start + first.size
        if to_send and end - start >= VIEW_MIN_BYTES:
            return self._log.view(end - start, start)
        return self._log.pread(end - start, start)

    def _last_boundary(self, start: int, target: int) -> int:
        """Greatest batch boundary in [start, target] (``target`` must be within the log).

        Index positions are batch starts, so the walk begins at the last indexed
        position <= target and reads at most about one index interval of headers.
        A longer distance means large batches (each one indexed), so few of
        them: their lengths are read one by one instead of every byte between.
        """
        begin = max(start, self.offset_index.lookup_position(target))
        if target - begin > _BOUNDARY_BULK_BYTES:
            p = begin
            while p + LOG_OVERHEAD <= target:
                (length,) = _BATCH_LENGTH.unpack_from(self._log.pread(LOG_OVERHEAD, p), 8)
                if length < MIN_BATCH_LENGTH or p + LOG_OVERHEAD + length > target:
                    break
                p += LOG_OVERHEAD + length
            return p
        chunk = self._log.pread(target - begin, begin)
        p = 0
        while p + LOG_OVERHEAD <= len(chunk):
            (length,) = _BATCH_LENGTH.unpack_from(chunk, p + 8)
            if length < MIN_BATCH_LENGTH or p + LOG_OVERHEAD + length > len(chunk):
                break
            p += LOG_OVERHEAD + length
        return begin + p

    def find_offset_for_timestamp(
        self, timestamp: int, min_offset: int = 0, max_position: int | None = None
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``min_offset`` with timestamp >= ``timestamp``.

        Finds the first batch whose maxTimestamp >= ``timestamp`` via the time and
        offset indexes, then decodes that one batch to find the exact record (as
        Kafka's ListOffsets does). If the batch cannot be decoded, answers with the
        batch's base offset and maxTimestamp. None if no such record before ``max_position``.
        """
        if self._max_timestamp < timestamp:
            return None
        _, ts_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(ts_offset, min_offset))
        for header in self.iter_headers(position, max_position):
            if header.last_offset < min_offset or header.max_timestamp < timestamp:
                continue
            data = self._log.pread(header.size, header.position)
            try:
                records = scan_records(batch_payload(data, header), header.record_count)
            except ProtocolError:
                return max(header.base_offset, min_offset), header.max_timestamp
            log_append_time = header.timestamp_type == LOG_APPEND_TIME
            for offset_delta, timestamp_delta, *_ in records:
                offset = header.base_offset + offset_delta
                # What a consumer sees: maxTimestamp for every record under LogAppendTime.
                ts = header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
                if offset >= min_offset and ts >= timestamp:
                    return offset, ts
        return None

    # -- loading and recovery ------------------------------------------------------------------

    def load(self) -> None:
        """Trust-but-verify open after a clean shutdown; `CorruptIndexError` means "run `recover`".

        Checks both indexes (size, order, last entries inside the log) and scans
        the batch headers after the last offset-index entry to find the next
        offset and max timestamp; the scan must end exactly at the end of the log.
        """
        if self.indexes_missing:
            raise CorruptIndexError(f"index files of segment {self.base_offset} are missing")
        size = self._log.size()
        self.offset_index.sanity_check(size)
        self.time_index.sanity_check()
        if size == 0 and (len(self.offset_index) or len(self.time_index)):
            raise CorruptIndexError(f"empty segment {self.base_offset} has index entries")
        self._restore_tail(check=True)
        self.time_index.sanity_check(self._next_offset - 1)
        self.txn_index.check_range(self.base_offset, self._next_offset)
        if size:
            first = next(self.iter_headers(0, size), None)
            if first is not None:
                self.created_ms = first.max_timestamp if first.max_timestamp > 0 else self.created_ms

    def _restore_tail(self, *, check: bool) -> None:
        """Recompute next offset and max timestamp from the indexes' last entries plus a tail scan."""
        size = self._log.size()
        indexed_offset, position = self.offset_index.last_entry()
        ts, ts_offset = self.time_index.last_entry()
        self._max_timestamp, self._offset_of_max_timestamp = (ts, ts_offset) if ts >= 0 else (-1, -1)
        next_offset = self.base_offset
        end = position
        for header in self.iter_headers(position, size):
            if check and (
                header.base_offset < next_offset or header.last_offset - self.base_offset > INT32_MAX
            ):
                raise CorruptIndexError(
                    f"segment {self.base_offset}: offsets out of order at byte {header.position}"
                )
            if (
                check
                and header.position == position
                and len(self.offset_index)
                and header.base_offset > indexed_offset
            ):
                raise CorruptIndexError(
                    f"segment {self.base_offset}: index entry does not match the batch it points at"
                )
            next_offset = header.last_offset + 1
            if header.max_timestamp > self._max_timestamp:
                self._max_timestamp = header.max_timestamp
                self._offset_of_max_timestamp = header.last_offset
            end = header.end
        if check and end != size:
            raise CorruptIndexError(f"segment {self.base_offset}: no whole batch at byte {end} of {size}")
        if next_offset == self.base_offset and len(self.offset_index):
            next_offset = indexed_offset + 1
        self._next_offset = next_offset
        self._bytes_since_index_entry = 0

    def recover(
        self, on_batch: Callable[[BatchHeader], None] | None = None, *, chunk_size: int = _RECOVERY_CHUNK
    ) -> int:
        """Rebuild the indexes from the `.log`, truncating at the first invalid batch; return bytes truncated.

        A batch is valid if it is whole, has magic 2, a sane length, a correct
        CRC-32C and offsets above the previous batch's (and above the segment
        base). Partial, zero-filled and garbage tails all end the valid prefix.
        ``on_batch`` sees every valid header (position = byte position in the `.log`).
        The `.log` is read in ``chunk_size`` pieces (larger for batches that do not
        fit). Leaves the indexes active (preallocated); `seal` trims them. The
        transaction index only loses entries past the new end (rebuilding it
        needs the earlier log: `storage.txn_recovery`); `saw_transactional` tells
        whether the segment holds any transactional batch.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.indexes_missing = False
        self.recovered = True
        self.saw_transactional = False
        self._max_timestamp = -1
        self._offset_of_max_timestamp = -1
        self._bytes_since_index_entry = 0
        size = self._log.size()
        next_offset = self.base_offset
        pos = 0
        chunk_size = max(chunk_size, RECORD_BATCH_OVERHEAD)
        want = chunk_size
        while pos < size:
            chunk = self._log.pread(min(want, size - pos), pos)
            want = chunk_size
            headers, valid = scan_valid_prefix(chunk)
            good = 0
            for h in headers:
                if h.base_offset < next_offset or h.last_offset - self.base_offset > INT32_MAX:
                    break
                self._index_batch(pos + h.position, h.last_offset, h.max_timestamp, h.size)
                next_offset = h.last_offset + 1
                if h.attributes & TRANSACTIONAL_BIT:
                    self.saw_transactional = True
                if on_batch is not None:
                    on_batch(BatchHeader(pos + h.position, *_HEADER.unpack_from(chunk, h.position)))
                good = h.end
            if good < valid:  # offsets out of order
                pos += good
                break
            pos += valid
            if valid == len(chunk):
                continue
            # The scan stopped inside the chunk: a batch cut by the chunk's end, or invalid bytes.
            rest = len(chunk) - valid
            if pos + rest >= size:
                break
            if rest < LOG_OVERHEAD:
                continue  # valid > 0 here (a chunk holds at least one header), so the next read moves on
            (length,) = _BATCH_LENGTH.unpack_from(chunk, valid + 8)
            need = LOG_OVERHEAD + length
            if length < MIN_BATCH_LENGTH or need <= rest or pos + need > size:
                break
            want = need
        truncated = size - pos
        if truncated:
            log.warning(
                "segment %s: truncating %d invalid bytes at position %d",
                naming.log_file(self.directory, self.base_offset),
                truncated,
                pos,
            )
            self._log.truncate(pos)
        self._next_offset = next_offset
        self.txn_index.truncate_to(next_offset)
        self._gen += 1
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove the batch containing ``offset`` and everything after it; return bytes removed.

        The segment becomes active (indexes remapped read-write).
        """
        size = self._log.size()
        header = self.translate_offset(offset, size)
        if header is None:
            return 0
        self.make_active()
        self.offset_index.truncate_to_position(header.position)
        self.time_index.truncate_to_offset(header.base_offset)
        self._log.truncate(header.position)
        self._restore_tail(check=False)
        self.txn_index.truncate_to(self._next_offset)
        self._gen += 1
        return size - header.position

    # -- lifecycle ---------------------------------------------------------------------------

    def make_active(self) -> None:
        """Preallocate and map the indexes read-write, reserve blocks ahead of `.log` appends
        (this becomes the segment appended to)."""
        self.offset_index.make_active()
        self.time_index.make_active()
        self._log.reserve_ahead = LOG_RESERVE_BYTES

    def seal(self) -> None:
        """No more appends: add the final time-index entry, trim both indexes and give back the
        `.log`'s reserved blocks (on roll or close)."""
        if self.time_index.active and self._max_timestamp >= 0:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
        self.offset_index.trim()
        self.time_index.trim()
        self._log.reserve_ahead = 0
        self._log.release_reserve()
        self._gen += 1

    def flush(self) -> bool:
        """fsync the `.log` and the indexes if changed since the last flush; True if it synced.

        Thread-safe against appends/rolls on the loop thread: it only fsyncs
        file descriptors, and marks as flushed only the changes made before it
        started. Must not run concurrently with `close`.
        """
        gen = self._gen
        if gen == self._flushed_gen:
            return False
        self._log.fsync()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()
        self._flushed_gen = self._log_synced_gen = gen
        return True

    def flush_log(self) -> bool:
        """fsync the `.log` alone if changed since its last fsync; True if it synced (same
        threading rules as `flush`). The indexes are left to `flush`: recovery rebuilds them
        from the `.log` for every segment from the recovery point on."""
        gen = self._gen
        if gen in (self._log_synced_gen, self._flushed_gen):
            return False
        self._log.fsync()
        self._log_synced_gen = gen
        return True

    def close(self) -> None:
        """Seal (trim indexes) and close the files; no fsync (call `flush` first for durability)."""
        if self._log.closed:
            return
        try:
            self.seal()
        finally:
            self.offset_index.close()
            self.time_index.close()
            self.txn_index.close()
            self._log.close()

    def close_without_seal(self) -> None:
        """Close the files as they are (for segments being deleted)."""
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self._log.close()

    def file_paths(self, *, existing: bool = False) -> list[str]:
        """Current paths of the `.log`, `.index`, `.timeindex` and `.txnindex` files (with the stage
        suffix), in `naming.SEGMENT_FILE_SUFFIXES` order. The `.txnindex` may not exist;
        ``existing`` leaves it out then."""
        paths = [
            naming.segment_file(self.directory, self.base_offset, suffix) + self.stage
            for suffix in naming.SEGMENT_FILE_SUFFIXES
        ]
        if existing and not self.txn_index.exists:
            del paths[3]
        return paths

    def remove_files(self) -> None:
        """Unlink the segment's files (open descriptors stay usable until closed)."""
        for path in self.file_paths():
            with contextlib.suppress(FileNotFoundError):
                self._fs.remove(path)

    def rename_files(self, stage: str) -> list[str]:
        """Rename the segment's files to carry ``stage`` instead of the current one; return the new
        paths (`file_paths` with ``existing``).

        Open descriptors (and mappings) stay valid; only names change. The `.log`
        is renamed last, so a crash part-way never shows a `.log` under the new
        name without its indexes. Missing files are skipped.
        """
        old = self.file_paths()
        self.stage = stage
        new = self.file_paths()
        for i in (1, 2, 3, 0):
            with contextlib.suppress(FileNotFoundError):
                self._fs.rename(old[i], new[i])
        self._log.path = new[0]
        self.offset_index.path = new[1]
        self.time_index.path = new[2]
        self.txn_index.path = new[3]
        return self.file_paths(existing=True)

    def delete(self) -> None:
        """Close and remove the segment's files."""
        self.close_without_seal()
        self.remove_files()

    def __repr__(self) -> str:
        return f"LogSegment({os.path.basename(self.directory)}/{self.base_offset}, size={self.size})"
