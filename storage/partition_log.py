"""One partition's log: an ordered list of `LogSegment`s in ``<topic>-<partition>/``.

Three offsets, kept apart (REPLICATION.md):

- ``log_start_offset``: first offset a consumer may read (the first segment's
  base offset, or later once records are deleted).
- ``high_watermark`` (HW): offsets below it are committed and readable by
  consumers. It never moves backwards except by truncation, and never passes the
  LEO. Appends do **not** move it: the caller advances it with
  `advance_high_watermark` -- on a single broker (ISR = {self}) right after each
  append, with ``result.last_offset + 1``; with replication, to the minimum LEO of
  the ISR. On open it equals the LEO: what survived recovery is on disk and
  there is no follower to wait for.
- ``log_end_offset`` (LEO): the offset the next appended record will get.

Appends take a record set already validated by the caller (`protocol.records.validate_batches`),
assign offsets by patching baseOffset and partitionLeaderEpoch of each batch in
place (and, for ``message.timestamp.type=LogAppendTime``, maxTimestamp + attributes
+ CRC), and write it with one write: no per-record work. Each new leader epoch
is recorded in ``leader-epoch-checkpoint`` before its first batch is written.

Durability: appends go to the page cache. `flush` fsyncs; the broker's group
commit calls it in an executor thread while the loop keeps appending. `flush`
is the only method that may run off the loop thread; it holds a lock that only
`close`/`delete` (which wait for it) and segment removal (which never waits: the
flush thread closes removed segments' files when it is done) contend for, so
the loop never blocks on an fsync during normal operation.

Failures: a failed write leaves no partial bytes and raises `KafkaStorageError`;
the log stays usable. A failed fsync (or a failed rollback of a failed write)
takes the log offline: every later append, read and flush raises `KafkaStorageError`
(after a failed fsync the kernel may have dropped the unsynced pages).

Opening: segments are loaded in base-offset order. Without ``recover`` (clean
shutdown) each segment's indexes are sanity-checked and its tail scanned; any
problem (including a missing index file) rebuilds that segment's indexes from
its batches. With ``recover`` the segments from the one holding
``recovery_point`` (default: the last segment) to the end are CRC-scanned; the
first invalid batch truncates its segment and drops every later segment.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader, patch_base_offset, set_log_append_time
from storage import naming
from storage.config import LogConfig
from storage.errors import CorruptIndexError, KafkaStorageError
from storage.fs import FileSystem
from storage.index import INT32_MAX
from storage.leader_epoch import LeaderEpochCache
from storage.segment import BatchIndexInfo, LogSegment

log = logging.getLogger(__name__)


class HeaderLike(Protocol):
    """What `PartitionLog.append` reads from each batch header (`protocol.records.BatchHeader` fits)."""

    @property
    def position(self) -> int: ...
    @property
    def last_offset_delta(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def size(self) -> int: ...


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed."""

    base_offset: int  # offset of the first record appended
    last_offset: int  # offset of the last record appended
    log_append_time_ms: int  # the broker timestamp under LogAppendTime, else -1
    log_start_offset: int
    size: int  # bytes written
    rolled: bool  # a new segment was started for this append


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Bytes of whole batches plus the offsets a Fetch response reports."""

    data: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class PartitionLog:
    """The segments of one partition, with log start offset, high watermark and log end offset."""

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        fs: FileSystem | None = None,
        *,
        recover: bool = False,
        recovery_point: int | None = None,
        log_start_offset: int | None = None,
        now_ms: int | None = None,
    ) -> None:
        """Open (or create) the log in ``directory``.

        ``recover``: the previous shutdown was not clean; CRC-scan segments from
        the one holding ``recovery_point`` (None: only the last one) to the end.
        ``log_start_offset``: from the log-start-offset checkpoint, if any.
        """
        self.directory = directory
        self.config = config
        self._fs = fs if fs is not None else FileSystem()
        self._flush_lock = threading.Lock()
        self._graveyard: list[LogSegment] = []
        self._offline: BaseException | None = None
        self._closed = False
        self._dir_gen = 0
        self._dir_flushed_gen = 0
        now = _now_ms() if now_ms is None else now_ms
        self._fs.makedirs(directory)
        self._epochs = LeaderEpochCache(self._fs, os.path.join(directory, naming.LEADER_EPOCH_CHECKPOINT))
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._load(recover, recovery_point, log_start_offset, now)
        active = self._segments[-1]
        self._leo = active.next_offset
        first_base = self._segments[0].base_offset
        self._log_start = min(max(log_start_offset or first_base, first_base), self._leo)
        self._hw = self._leo
        self._hw_segment, self._hw_position = active, active.size
        self._recovery_point = self._leo

    # -- loading -----------------------------------------------------------------------------

    def _load(
        self, recover: bool, recovery_point: int | None, log_start_offset: int | None, now: int
    ) -> None:
        fs, d = self._fs, self.directory
        bases: set[int] = set()
        others: list[tuple[int, str]] = []
        for name in fs.listdir(d):
            if name.endswith((naming.DELETED_SUFFIX, naming.TMP_SUFFIX)):
                fs.remove(os.path.join(d, name))  # leftovers of an interrupted delete or atomic write
                continue
            parsed = naming.parse_segment_filename(name)
            if parsed is None:
                continue
            if parsed[1] == naming.LOG_SUFFIX:
                bases.add(parsed[0])
            else:
                others.append((parsed[0], name))
        for base, name in others:
            if base not in bases and name.endswith((naming.INDEX_SUFFIX, naming.TIME_INDEX_SUFFIX)):
                fs.remove(os.path.join(d, name))  # index without a log
        ordered = sorted(bases)
        if not ordered:
            seg = LogSegment.create(fs, d, max(log_start_offset or 0, 0), self.config, now)
            self._segments, self._bases = [seg], [seg.base_offset]
            self._dir_gen += 1
            return

        if not recover:
            recover_from = len(ordered)
        elif recovery_point is None:
            recover_from = len(ordered) - 1
        else:
            recover_from = max(0, bisect_right(ordered, recovery_point) - 1)

        new_epochs: list[tuple[int, int]] = []

        def note_epoch(h: BatchHeader) -> None:
            if h.partition_leader_epoch >= 0 and (
                not new_epochs or h.partition_leader_epoch > new_epochs[-1][0]
            ):
                new_epochs.append((h.partition_leader_epoch, h.base_offset))

        segments: list[LogSegment] = []
        try:
            self._load_segments(ordered, recover_from, segments, note_epoch, now)
        except BaseException:
            for seg in segments:
                seg.close_without_seal()
            raise
        recovered = [seg for seg in segments if seg.recovered]
        self._segments, self._bases = segments, [s.base_offset for s in segments]
        leo = segments[-1].next_offset

        if not self._epochs.loaded_cleanly:
            new_epochs.clear()  # no usable checkpoint: rebuild it from every batch header
            for seg in segments:
                for h in seg.iter_headers():
                    note_epoch(h)
        self._epochs.truncate_from_end(leo)
        added = False
        for epoch, start in new_epochs:
            if epoch > self._epochs.latest_epoch and start < leo:
                added = self._epochs.assign(epoch, start, persist=False) or added
        if added or not self._epochs.loaded_cleanly:
            self._epochs.flush()
        for seg in recovered:
            seg.flush()
        if recovered:
            fs.fsync_dir(d)

    def _load_segments(
        self,
        ordered: list[int],
        recover_from: int,
        segments: list[LogSegment],
        note_epoch: Callable[[BatchHeader], None],
        now: int,
    ) -> None:
        fs, d = self._fs, self.directory
        for i, base in enumerate(ordered):
            seg = LogSegment.open(fs, d, base, self.config, now)
            segments.append(seg)
            if i >= recover_from:
                truncated = seg.recover(note_epoch)
                if truncated:
                    for later in ordered[i + 1 :]:
                        log.warning("%s: dropping segment %d after a torn tail in segment %d", d, later, base)
                        LogSegment.open(fs, d, later, self.config, now).delete()
                        self._dir_gen += 1
                    break
            else:
                try:
                    seg.load()
                except CorruptIndexError as exc:
                    log.warning("%s: rebuilding indexes of segment %d: %s", d, base, exc)
                    seg.recover(note_epoch)
        for seg in segments[:-1]:
            seg.seal()
        segments[-1].make_active()

    # -- offsets -----------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def high_watermark(self) -> int:
        return self._hw

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def recovery_point(self) -> int:
        """Offsets below this are known to be fsynced."""
        return min(self._recovery_point, self._leo)

    @property
    def segments(self) -> Sequence[LogSegment]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        """Total bytes of all segments' `.log` files."""
        return sum(s.size for s in self._segments)

    @property
    def leader_epochs(self) -> LeaderEpochCache:
        return self._epochs

    @property
    def latest_epoch(self) -> int:
        return self._epochs.latest_epoch

    @property
    def offline(self) -> bool:
        return self._offline is not None

    def advance_high_watermark(self, offset: int) -> bool:
        """Move the HW up to ``offset`` (<= LEO); returns whether it moved. Never moves it backwards."""
        if offset > self._leo:
            raise ValueError(f"high watermark {offset} beyond log end offset {self._leo}")
        if offset <= self._hw:
            return False
        self._hw_segment, self._hw_position = self._position_of(offset)
        self._hw = offset
        return True

    def _segment_index(self, offset: int) -> int:
        return max(0, bisect_right(self._bases, offset) - 1)

    def _position_of(self, offset: int) -> tuple[LogSegment, int]:
        """Segment and byte position where reading up to (excluding) ``offset`` stops.

        For an offset inside a batch that is the batch's start (the batch is not readable yet).
        """
        if offset >= self._leo:
            seg = self._segments[-1]
            return seg, seg.size
        seg = self._segments[self._segment_index(offset)]
        header = seg.translate_offset(offset)
        return seg, header.position if header is not None else seg.size

    def _check_usable(self) -> None:
        if self._offline is not None:
            raise KafkaStorageError(f"{self.directory} is offline after an I/O error: {self._offline}")
        if self._closed:
            raise KafkaStorageError(f"{self.directory} is closed")

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        record_set: bytearray,
        headers: Sequence[HeaderLike],
        *,
        leader_epoch: int,
        now_ms: int | None = None,
    ) -> AppendResult:
        """Assign offsets to the validated batches in ``record_set`` (patched in place) and write them.

        ``headers`` are the batches' headers in order (`validate_batches` output);
        they must tile ``record_set`` exactly. Offsets start at the LEO. Rolls to a
        new segment first if needed. The HW does not move (see the module docstring).
        CRC, size (max.message.bytes) and idempotence checks are the caller's.
        Raises `ValueError` for malformed arguments or a leader epoch older than the
        latest one, `KafkaStorageError` for I/O failures (nothing is written then,
        though ``record_set`` may already be patched).
        """
        self._check_usable()
        if not headers:
            raise ValueError("empty record set")
        now = _now_ms() if now_ms is None else now_ms
        if 0 <= leader_epoch < self._epochs.latest_epoch:
            raise ValueError(
                f"leader epoch {leader_epoch} is older than the latest {self._epochs.latest_epoch}"
            )
        log_append_time = self.config.log_append_time
        base = self._leo
        offset = base
        expected = 0
        max_ts, offset_of_max = -1, -1
        batches: list[BatchIndexInfo] = []
        for h in headers:
            if h.position != expected:
                raise ValueError(f"batch headers do not tile the record set at byte {expected}")
            last = offset + h.last_offset_delta
            ts = now if log_append_time else h.max_timestamp
            batches.append((expected, last, ts))
            if ts > max_ts:
                max_ts, offset_of_max = ts, last
            expected += h.size
            offset = last + 1
        if expected != len(record_set):
            raise ValueError(f"batch headers cover {expected} of {len(record_set)} bytes")
        last_offset = offset - 1

        rolled = False
        try:
            if self._should_roll(len(record_set), last_offset, now):
                rolled = self._roll(now)
            seg = self._segments[-1]
            if last_offset - seg.base_offset > INT32_MAX:
                raise ValueError(f"record set spans too many offsets ({last_offset - base + 1})")
            if leader_epoch > self._epochs.latest_epoch:
                self._epochs.assign(leader_epoch, base)
            offset = base
            for position, last, _ in batches:
                patch_base_offset(record_set, position, offset, leader_epoch)
                if log_append_time:
                    set_log_append_time(record_set, position, now)
                offset = last + 1
            if seg.is_empty:
                seg.created_ms = now
            seg.append(base, last_offset, max_ts, offset_of_max, record_set, batches=batches)
        except OSError as exc:
            if self._segments[-1].log_file.failed:
                self._offline = exc
            raise KafkaStorageError(f"append to {self.directory} failed: {exc}") from exc
        self._leo = last_offset + 1
        return AppendResult(
            base_offset=base,
            last_offset=last_offset,
            log_append_time_ms=now if log_append_time else -1,
            log_start_offset=self._log_start,
            size=len(record_set),
            rolled=rolled,
        )

    def _should_roll(self, size: int, last_offset: int, now_ms: int) -> bool:
        seg = self._segments[-1]
        if seg.is_empty:
            return False
        return (
            seg.size + size > self.config.segment_bytes
            or now_ms - seg.created_ms > self.config.segment_ms
            or seg.index_full
            or last_offset - seg.base_offset > INT32_MAX
        )

    def roll(self, now_ms: int | None = None) -> bool:
        """Start a new segment at the LEO unless the active one is empty; returns whether it rolled."""
        self._check_usable()
        try:
            return self._roll(_now_ms() if now_ms is None else now_ms)
        except OSError as exc:
            raise KafkaStorageError(f"roll of {self.directory} failed: {exc}") from exc

    def _roll(self, now_ms: int) -> bool:
        old = self._segments[-1]
        if old.is_empty:
            return False
        new = LogSegment.create(self._fs, self.directory, self._leo, self.config, now_ms)
        old.seal()
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self._dir_gen += 1
        return True

    # -- read --------------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one_batch: bool = True) -> ReadResult:
        """Whole batches from the one containing ``offset``, up to ``max_bytes``, never at or past the HW.

        At least one whole batch (if any is below the HW) even if larger than
        ``max_bytes``, unless ``min_one_batch`` is False. ``offset`` below the log
        start offset or above the LEO raises `KafkaError` OFFSET_OUT_OF_RANGE;
        ``offset`` in [HW, LEO] returns no data. Reads within one segment.
        """
        self._check_usable()
        if offset < self._log_start or offset > self._leo:
            raise KafkaError(
                f"offset {offset} outside [{self._log_start}, {self._leo}] of {self.directory}",
                code=ErrorCode.OFFSET_OUT_OF_RANGE,
            )
        data = b""
        if offset < self._hw:
            hw_segment, hw_position = self._hw_segment, self._hw_position
            for seg in self._segments[self._segment_index(offset) :]:
                limit = hw_position if seg is hw_segment else None
                data = seg.read(offset, max_bytes, limit, min_one=min_one_batch)
                if data or seg is hw_segment:
                    break
        return ReadResult(data, self._hw, self._log_start, self._leo)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp`` below the HW, or None.

        As Kafka's ListOffsets: the first segment whose largest timestamp reaches
        ``timestamp``, then the first batch there whose maxTimestamp does, then the
        first record in that batch (one batch is decoded). Special timestamps
        (-1 latest, -2 earliest) are the caller's: use `high_watermark` / `log_start_offset`.
        """
        self._check_usable()
        hw_segment, hw_position = self._hw_segment, self._hw_position
        for seg in self._segments:
            if seg.largest_timestamp >= timestamp:
                limit = hw_position if seg is hw_segment else None
                found = seg.find_offset_for_timestamp(timestamp, self._log_start, limit)
                if found is not None and found[0] < self._hw:
                    return found
            if seg is hw_segment:
                break
        return None

    def iter_batch_headers(
        self, start_offset: int | None = None, end_offset: int | None = None
    ) -> Iterator[BatchHeader]:
        """Headers of the batches holding offsets in [start_offset, end_offset) (default: the whole log).

        ``BatchHeader.position`` is the byte position inside that batch's segment.
        For rebuilding producer state; no CRC check. Must run on the loop thread.
        """
        start = self._log_start if start_offset is None else start_offset
        end = self._leo if end_offset is None else end_offset
        for seg in list(self._segments[self._segment_index(start) :]):
            if seg.base_offset >= end:
                return
            first = seg.translate_offset(start)
            if first is None:
                continue
            for h in seg.iter_headers(first.position):
                if h.base_offset >= end:
                    return
                yield h

    # -- truncation --------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding ``offset`` or later; returns the new LEO (which may be < ``offset``
        when ``offset`` is inside a batch). For replication (divergent follower) and tests.

        HW and recovery point drop to the new LEO if above it; leader epochs
        starting at or after it are forgotten.
        """
        self._check_usable()
        if offset >= self._leo:
            return self._leo
        if offset < self._log_start:
            raise ValueError(f"cannot truncate to {offset}, below the log start offset {self._log_start}")
        i = self._segment_index(offset)
        removed = self._segments[i + 1 :]
        try:
            seg = self._segments[i]
            seg.truncate_to(offset)
            del self._segments[i + 1 :]
            del self._bases[i + 1 :]
            for r in removed:
                r.remove_files()
            self._retire(removed)
            if removed:
                self._dir_gen += 1
        except OSError as exc:
            self._offline = exc
            raise KafkaStorageError(f"truncation of {self.directory} failed: {exc}") from exc
        self._leo = seg.next_offset
        if self._hw > self._leo:
            self._hw = self._leo
        self._hw_segment, self._hw_position = self._position_of(self._hw)
        self._recovery_point = min(self._recovery_point, self._leo)
        self._epochs.truncate_from_end(self._leo)
        return self._leo

    def _retire(self, segments: list[LogSegment]) -> None:
        """Close removed segments now if no flush is running, else leave them to the flush thread."""
        if not segments:
            return
        if self._flush_lock.acquire(blocking=False):
            try:
                for seg in segments:
                    seg.close_without_seal()
            finally:
                self._flush_lock.release()
        else:
            self._graveyard.extend(segments)

    # -- durability and lifecycle --------------------------------------------------------------

    def flush(self) -> int:
        """fsync everything appended so far; return the offset up to which data is durable.

        Runs in an executor thread concurrently with appends on the loop: it
        captures the LEO first, then the segment list, and fsyncs only descriptors
        that stay open (closing waits on the same lock). Data appended after the
        capture may or may not be included; the return value only promises the
        captured LEO. On fsync failure the log goes offline and `KafkaStorageError` is raised.
        """
        with self._flush_lock:
            if self._offline is not None:
                raise KafkaStorageError(f"{self.directory} is offline after an I/O error: {self._offline}")
            if self._closed:
                return self.recovery_point
            leo = self._leo
            segments = list(self._segments)
            dir_gen = self._dir_gen
            try:
                for seg in segments:
                    if seg.dirty:
                        seg.flush()
                if dir_gen != self._dir_flushed_gen:
                    self._fs.fsync_dir(self.directory)
                    self._dir_flushed_gen = dir_gen
            except OSError as exc:
                self._offline = exc
                raise KafkaStorageError(f"fsync of {self.directory} failed: {exc}") from exc
            finally:
                while self._graveyard:
                    self._graveyard.pop().close_without_seal()
            self._recovery_point = max(self._recovery_point, leo)
            return leo

    def close(self) -> None:
        """Trim the indexes, fsync everything and close the files (waits for a running flush)."""
        with self._flush_lock:
            if self._closed:
                return
            self._closed = True
            try:
                for seg in self._segments:
                    seg.seal()
                if self._offline is None:
                    for seg in self._segments:
                        seg.flush()
                    self._fs.fsync_dir(self.directory)
                    self._recovery_point = self._leo
            finally:
                for seg in self._segments + self._graveyard:
                    seg.close_without_seal()
                self._graveyard.clear()

    def abandon(self) -> None:
        """Simulate a crash (fault injection for tests): close the descriptors without trimming,
        fsyncing or any other shutdown work. The files look as after a killed process."""
        with self._flush_lock:
            self._closed = True
            for seg in self._segments + self._graveyard:
                seg.close_without_seal()
            self._graveyard.clear()

    def delete(self) -> None:
        """Close the files (no fsync) and remove the partition directory.

        The directory is first renamed ``<name>.<id>-delete`` (durably), so a crash
        part-way leaves a name the `LogManager` finishes removing on the next start.
        """
        with self._flush_lock:
            self._closed = True
            for seg in self._segments + self._graveyard:
                seg.close_without_seal()
            self._graveyard.clear()
        parent, name = os.path.split(os.path.abspath(self.directory))
        doomed = os.path.join(parent, naming.delete_dir_name(name, uuid.uuid4().hex))
        self._fs.rename(self.directory, doomed)
        self._fs.fsync_dir(parent)
        self._fs.rmtree(doomed)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory!r}, start={self._log_start}, hw={self._hw}, "
            f"leo={self._leo}, segments={len(self._segments)})"
        )
