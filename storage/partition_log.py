"""One partition's log: an ordered list of `LogSegment`s in ``<topic>-<partition>/``.

Three offsets, kept apart (REPLICATION.md):

- ``log_start_offset``: first offset a consumer may read (the first segment's
  base offset, or later once records are deleted). A tiered log (``tiered``,
  `storage.remote_state`) also has a ``local_log_start_offset``, the first offset
  held in local segments; the log start offset may be below it, the records in
  between being only in the object store. Without tiering the two are equal.
- ``high_watermark`` (HW): offsets below it are committed and readable by
  consumers. It never moves backwards except by truncation, and never passes the
  LEO. Appends do **not** move it: the caller advances it with
  `advance_high_watermark` -- on a single broker (ISR = {self}) right after each
  append, with ``result.last_offset + 1``; with replication, to the minimum LEO of
  the ISR. On open it equals the LEO: what survived recovery is on disk and
  there is no follower to wait for; the log manager then lowers it to the
  HW checkpointed in ``replication-offset-checkpoint`` (`restore_high_watermark`).
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
Before that, an interrupted cleaner swap is finished or undone (below).

Retention (`delete_old_segments`, Kafka's rules): a prefix of segments is deleted
when the log start offset has passed the next segment's base offset, and, with
``cleanup.policy`` including ``delete``, while the log is larger than
``retention.bytes`` by at least the segment's size, or while the segment's
largest timestamp (time index; file mtime if it has none) is more than
``retention.ms`` old. A segment is never deleted unless the high watermark has
passed it, and the empty active segment never is; when every segment goes, a
new active segment is rolled first. `delete_records` moves the log start offset
(DeleteRecords). Deleted segments leave the list at once (reads below the new
log start offset answer OFFSET_OUT_OF_RANGE), their files are renamed
``*.deleted`` and handed out by `take_expired_deletions` ``file.delete.delay.ms``
later; ``*.deleted`` files found at open are removed.

Compaction swap (the cleaner in `storage.cleaner` writes ``<base>.log.cleaned`` plus
indexes for each replacement segment, fsynced, off the loop). Then, each step
on the loop thread unless noted:

1. `swap_prepare`: check the replaced segments are still in the log unchanged,
   rename every ``.cleaned`` file to ``.swap`` in descending base-offset order;
2. (executor) fsync the directory: the new content is now committed;
3. `swap_retire_old`: rename the replaced segments' files to ``.deleted``;
4. (executor) fsync the directory;
5. `swap_install`: rename ``.swap`` files to their final names, open the new
   segments and put them in the list in place of the old ones.

Crash recovery at open: ``.cleaned`` files are deleted; if any existed next to
``.swap`` files, step 1 was interrupted and the ``.swap`` files are deleted too
(the old segments are intact). Otherwise every ``.swap`` segment is complete:
segment files (not ``.swap``) with a base offset in [lowest swap base, highest
swap next offset) are deleted and the swaps renamed into place. An old segment
whose records were all cleaned away can survive that rule; it holds only
superseded records and its offsets overlap nothing, so nothing is lost either
way. Retention skips a log while a cleaning is in flight, and `truncate_to`
aborts it (and is refused between steps 1 and 5).

Transactions (Kafka's): the broker appends each ABORT marker batch like any
other batch and then `append_aborted_txn` adds its `AbortedTxn` to the active
segment's transaction index (`storage.txn_index`); read_committed fetches ask
`aborted_transactions`, which reads only in-memory entries (and returns at once
when the log has none). The broker keeps ``first_unstable_offset`` (the first
offset of the oldest undecided transaction, None if there is none) up to date;
the cleaner never cleans at or past it. Transaction indexes are truncated,
deleted and renamed with their segments; compaction carries each source
segment's entries into the cleaned segment holding their markers. At open, the
indexes of recovered segments, and corrupt ones, are rebuilt from the log
(`storage.txn_recovery`); a missing `.txnindex` of a segment loaded cleanly
means it has no aborted transactions (as in Kafka).

Flush policy (Kafka's): `unflushed_messages` is LEO minus recovery point;
`flush_due` says when a background flush should run (``flush.messages`` reached,
``flush.ms`` elapsed, or segments rolled since the last flush, so that the
recovery point follows the rolls).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from bisect import bisect_left, bisect_right
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
from storage.io_health import IoHealth
from storage.leader_epoch import LeaderEpochCache
from storage.remote_state import RemoteLogState
from storage.segment import BatchIndexInfo, LogSegment
from storage.txn_index import AbortedTxn
from storage.txn_recovery import rebuild_txn_indexes

log = logging.getLogger(__name__)

_RECENT_ENDS = 64  # append end positions remembered for `_position_of`


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

    data: bytes | memoryview  # a memoryview only for `read(to_send=True)`
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
        health: IoHealth | None = None,
        tiered: bool = False,
    ) -> None:
        """Open (or create) the log in ``directory``.

        ``recover``: the previous shutdown was not clean; CRC-scan segments from
        the one holding ``recovery_point`` (None: only the last one) to the end.
        ``log_start_offset``: from the log-start-offset checkpoint, if any.
        ``health``: where failed file operations are reported (logged and counted).
        ``tiered``: the topic is tiered (`set_tiered`); its checkpointed log start offset may lie below
        the first local segment.
        """
        self.directory = directory
        self.config = config
        self._fs = fs if fs is not None else FileSystem()
        self._health = health if health is not None else IoHealth()
        self._tp = naming.parse_partition_dir_name(os.path.basename(directory.rstrip(os.sep))) or (
            directory,
            -1,
        )
        self._io_failing = False  # a write failed and none has succeeded since
        self._flush_lock = threading.Lock()
        self._graveyard: list[LogSegment] = []
        self._offline: BaseException | None = None
        self._closed = False
        self._dir_gen = 0
        self._dir_flushed_gen = 0
        self._pending_deletes: list[tuple[int, list[str]]] = []  # (due ms, paths of `.deleted` files)
        self.cleaning: object | None = None  # the cleaner's job while one is in flight (see storage.cleaner)
        self._swapping = False
        self._ts_prefix: list[int] = []
        self._ts_prefix_key: tuple[int, int] | None = None
        self.latest_delete_horizon = -1  # largest tombstone delete horizon the cleaner wrote, -1 if none
        self.uncleanable: str | None = None  # why the cleaner gave up on this log (corrupt data), if it did
        # First offset of the oldest undecided transaction (set by the broker), None if none is open:
        # the cleaner stays below it.
        self.first_unstable_offset: int | None = None
        self._has_aborted = False  # some segment's transaction index has entries
        now = _now_ms() if now_ms is None else now_ms
        self._last_flush_ms = now
        self._last_roll_offset = 0
        self._fs.makedirs(directory)
        self._epochs = LeaderEpochCache(self._fs, os.path.join(directory, naming.LEADER_EPOCH_CHECKPOINT))
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._load(recover, recovery_point, log_start_offset, now)
        active = self._segments[-1]
        self._leo = active.next_offset
        first_base = self._segments[0].base_offset
        # Kafka's LogLoader: a tiered log keeps the checkpointed log start even below its first segment
        self.remote: RemoteLogState | None = RemoteLogState() if tiered else None
        if tiered and log_start_offset is not None and log_start_offset >= 0:
            self._log_start = min(log_start_offset, self._leo)
        else:
            self._log_start = min(max(log_start_offset or first_base, first_base), self._leo)
        self._hw = self._leo
        self._hw_segment, self._hw_position = active, active.size
        # (segment, byte position) where each of the last appends ended, by end offset
        self._ends: dict[int, tuple[LogSegment, int]] = {}
        self._recovery_point = self._leo

    # -- loading -----------------------------------------------------------------------------

    def _load(
        self, recover: bool, recovery_point: int | None, log_start_offset: int | None, now: int
    ) -> None:
        fs, d = self._fs, self.directory
        self._finish_interrupted_swap(now)
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
            if base not in bases and name.endswith(
                (naming.INDEX_SUFFIX, naming.TIME_INDEX_SUFFIX, naming.TXN_INDEX_SUFFIX)
            ):
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
        rebuilt = self._rebuild_txn_indexes()

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
        if recovered or rebuilt:
            fs.fsync_dir(d)
        self._recount_aborted()

    def _rebuild_txn_indexes(self) -> bool:
        """Rebuild the transaction indexes of recovered segments and corrupt ones (`storage.txn_recovery`)."""
        targets = []
        for i, seg in enumerate(self._segments):
            if seg.txn_index.corrupt is not None:
                log.warning("%s: rebuilding a transaction index: %s", self.directory, seg.txn_index.corrupt)
            if seg.recovered or seg.txn_index.corrupt is not None:
                targets.append(i)
        return bool(rebuild_txn_indexes(self._segments, targets))

    def _recount_aborted(self) -> None:
        """Recompute whether any transaction index has entries (after segments went or changed)."""
        self._has_aborted = any(len(seg.txn_index) for seg in self._segments)

    def _finish_interrupted_swap(self, now: int) -> None:
        """Complete or undo a cleaner swap that a crash interrupted (module docstring)."""
        fs, d = self._fs, self.directory
        names = fs.listdir(d)
        cleaned = [n for n in names if naming.parse_stage_filename(n, naming.CLEANED_SUFFIX)]
        swaps: dict[int, set[str]] = {}
        for n in names:
            parsed = naming.parse_stage_filename(n, naming.SWAP_SUFFIX)
            if parsed is not None:
                swaps.setdefault(parsed[0], set()).add(parsed[1])
        for n in cleaned:
            fs.remove_if_exists(os.path.join(d, n))
        if not swaps:
            return
        if cleaned:
            log.warning("%s: discarding an interrupted compaction swap (old segments are intact)", d)
            for base, suffixes in swaps.items():
                for suffix in suffixes:
                    fs.remove_if_exists(naming.segment_file(d, base, suffix) + naming.SWAP_SUFFIX)
            fs.fsync_dir(d)
            return
        lo, hi = None, None
        for base, suffixes in sorted(swaps.items()):
            if naming.LOG_SUFFIX not in suffixes:
                for suffix in suffixes:
                    fs.remove_if_exists(naming.segment_file(d, base, suffix) + naming.SWAP_SUFFIX)
                continue
            seg = LogSegment.open(fs, d, base, self.config, now, naming.SWAP_SUFFIX)
            try:
                try:
                    seg.load()
                except CorruptIndexError:
                    seg.recover()
                seg.seal()
                seg.flush()
                end = max(seg.next_offset, base + 1)
            finally:
                seg.close_without_seal()
            lo = base if lo is None else min(lo, base)
            hi = end if hi is None else max(hi, end)
        if lo is None or hi is None:
            return
        log.warning("%s: completing an interrupted compaction swap of offsets [%d, %d)", d, lo, hi)
        for n in fs.listdir(d):
            parsed = naming.parse_segment_filename(n)
            if parsed is not None and parsed[1] in naming.SEGMENT_FILE_SUFFIXES and lo <= parsed[0] < hi:
                fs.remove(os.path.join(d, n))
        for base, suffixes in sorted(swaps.items()):
            if naming.LOG_SUFFIX in suffixes:
                for suffix in naming.SEGMENT_RENAME_ORDER:
                    path = naming.segment_file(d, base, suffix)
                    if fs.exists(path + naming.SWAP_SUFFIX):
                        fs.rename(path + naming.SWAP_SUFFIX, path)
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
    def local_log_start_offset(self) -> int:
        """The first offset held in local segments (= `log_start_offset` unless the log is tiered)."""
        return max(self._log_start, self._bases[0])

    def set_tiered(self, tiered: bool, copy_enabled: bool = True) -> None:
        """Make the log tiered or not (``remote.storage.enable`` changed), keeping what is known of the
        remote part. Untiering moves the log start up to the local log start: what was remote is no
        longer readable (Kafka's delete-on-disable)."""
        if tiered:
            if self.remote is None:
                self.remote = RemoteLogState()
            self.remote.copy_enabled = copy_enabled
        elif self.remote is not None:
            self.remote = None
            self._log_start = max(self._log_start, self._bases[0])

    @property
    def _tiered_copy(self) -> bool:
        """Local deletion waits for the object store, and moves only the local log start."""
        return self.remote is not None and self.remote.copy_enabled

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

    def become_leader(self, leader_epoch: int) -> None:
        """Record that ``leader_epoch`` starts at the LEO, if newer (Kafka's makeLeader does this).

        Done when leadership starts rather than on the first append, so the
        checkpoint's fsync is paid by topic creation, not by the first Produce.
        `append` still assigns a newer epoch itself if this was not called.
        """
        self._check_usable()
        if leader_epoch > self._epochs.latest_epoch:
            try:
                self._epochs.assign(leader_epoch, self._leo)
            except OSError as exc:
                raise self._io_error("checkpoint", exc, "leader epoch checkpoint") from exc

    @property
    def offline(self) -> bool:
        return self._offline is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def fs(self) -> FileSystem:
        return self._fs

    @property
    def swapping(self) -> bool:
        """A cleaner swap is between `swap_prepare` and `swap_install`."""
        return self._swapping

    @property
    def unflushed_messages(self) -> int:
        """Offsets appended since the last flush (Kafka's ``logEndOffset - recoveryPoint``)."""
        return self._leo - self.recovery_point

    def flush_due(self, now_ms: int | None = None) -> bool:
        """Whether the flush policy wants a flush now: ``flush.messages`` reached, ``flush.ms``
        elapsed since the last flush with data pending, or a segment rolled since the last flush."""
        unflushed = self.unflushed_messages
        if unflushed <= 0 or self._offline is not None or self._closed:
            return False
        if unflushed >= self.config.flush_interval_messages or self.recovery_point < self._last_roll_offset:
            return True
        now = _now_ms() if now_ms is None else now_ms
        return now - self._last_flush_ms >= self.config.flush_interval_ms

    def restore_high_watermark(self, offset: int) -> None:
        """Set the HW from ``replication-offset-checkpoint`` at open, clamped to [log start, LEO].

        Unlike `advance_high_watermark` this may lower it: what was committed
        when the checkpoint was written is all a restarted replica can vouch
        for; its leader (or, leading alone, the ISR of one) moves it up again.
        """
        self._hw = min(max(offset, self._log_start), self._leo)
        self._reposition_high_watermark()

    def advance_high_watermark(self, offset: int) -> bool:
        """Move the HW up to ``offset`` (<= LEO); returns whether it moved. Never moves it backwards."""
        if offset > self._leo:
            raise ValueError(f"high watermark {offset} beyond log end offset {self._leo}")
        if offset <= self._hw:
            return False
        self._hw_segment, self._hw_position = self._position_of(offset)
        self._hw = offset
        return True

    def _reposition_high_watermark(self) -> None:
        """Find the HW's byte position anew after segments or the HW changed other than by appending;
        the remembered append ends may describe bytes that are gone."""
        self._ends.clear()
        self._hw_segment, self._hw_position = self._position_of(self._hw)

    def _segment_index(self, offset: int) -> int:
        return max(0, bisect_right(self._bases, offset) - 1)

    def _position_of(self, offset: int) -> tuple[LogSegment, int]:
        """Segment and byte position where reading up to (excluding) ``offset`` stops.

        For an offset inside a batch that is the batch's start (the batch is not readable yet).
        """
        if offset >= self._leo:
            seg = self._segments[-1]
            return seg, seg.size
        recent = self._ends.get(offset)
        if recent is not None:  # where an append ended: the HW follows followers' fetch offsets there
            return recent
        seg = self._segments[self._segment_index(offset)]
        header = seg.translate_offset(offset)
        return seg, header.position if header is not None else seg.size

    def _io_error(self, op: str, exc: OSError, what: str) -> KafkaStorageError:
        """Report a failed file operation (after `_offline` is set if it takes the log offline); the error to raise."""
        self._io_failing = True
        self._health.failed(*self._tp, op, self.directory, exc, offline=self._offline is not None)
        return KafkaStorageError(f"{what} of {self.directory} failed: {exc}")

    def _io_succeeded(self, op: str) -> None:
        self._io_failing = False
        self._health.succeeded(*self._tp, op)

    def _check_usable(self) -> None:
        if self._offline is not None:
            raise KafkaStorageError(f"{self.directory} is offline after an I/O error: {self._offline}")
        if self._closed:
            raise KafkaStorageError(f"{self.directory} is closed")

    # -- append ------------------------------------------------------------------------------

    def append(
        self,
        record_set: bytearray | memoryview,
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
        return self._append(record_set, headers, leader_epoch=leader_epoch, now_ms=now_ms, replicated=None)

    def append_as_follower(
        self, record_set: bytearray | memoryview, headers: Sequence[BatchHeader], now_ms: int | None = None
    ) -> AppendResult:
        """Append batches fetched from the leader as they are: their offsets and leader epochs are kept.

        The first batch must start at the LEO and the batches must be contiguous
        (`ValueError` otherwise). Each leader epoch newer than the latest one is
        recorded at its first batch's base offset. Timestamps are not touched.
        """
        return self._append(record_set, headers, leader_epoch=-1, now_ms=now_ms, replicated=headers)

    def _append(
        self,
        record_set: bytearray | memoryview,
        headers: Sequence[HeaderLike],
        *,
        leader_epoch: int,
        now_ms: int | None,
        replicated: Sequence[BatchHeader] | None,
    ) -> AppendResult:
        self._check_usable()
        if not headers:
            raise ValueError("empty record set")
        now = _now_ms() if now_ms is None else now_ms
        if replicated is not None:
            expected_base = self._leo
            for h in replicated:
                if h.base_offset != expected_base:
                    raise ValueError(f"replicated batch at offset {h.base_offset}, expected {expected_base}")
                expected_base = h.base_offset + h.last_offset_delta + 1
        if 0 <= leader_epoch < self._epochs.latest_epoch:
            raise ValueError(
                f"leader epoch {leader_epoch} is older than the latest {self._epochs.latest_epoch}"
            )
        log_append_time = self.config.log_append_time and replicated is None
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
            if replicated is not None:
                for h in replicated:
                    if h.partition_leader_epoch > self._epochs.latest_epoch:
                        self._epochs.assign(h.partition_leader_epoch, h.base_offset)
            else:
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
            raise self._io_error("append", exc, "append") from exc
        self._leo = last_offset + 1
        ends = self._ends
        ends[self._leo] = (seg, seg.size)
        if len(ends) > _RECENT_ENDS:
            del ends[next(iter(ends))]
        if self._io_failing:
            self._io_succeeded("append")
        return AppendResult(
            base_offset=base,
            last_offset=last_offset,
            log_append_time_ms=now if log_append_time else -1,
            log_start_offset=self._log_start,
            size=len(record_set),
            rolled=rolled,
        )

    def write_back(self, min_bytes: int) -> bool:
        """Start the disk writeback of the active segment's bytes appended since the last call, once
        there are at least ``min_bytes`` of them (`File.write_back`: no waiting, nothing made
        durable); True if it started one. For a bulk copy beside acks=all producers (a throttled
        reassignment's follower): its bytes go to disk as they arrive instead of in one burst
        that every fsync on the filesystem waits behind. A closed or offline log does nothing."""
        if self._closed or self._offline is not None:
            return False
        return self._segments[-1].log_file.write_back(min_bytes)

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
            raise self._io_error("roll", exc, "roll") from exc

    def _roll(self, now_ms: int) -> bool:
        old = self._segments[-1]
        if old.is_empty:
            return False
        new = LogSegment.create(self._fs, self.directory, self._leo, self.config, now_ms)
        old.seal()
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self._dir_gen += 1
        self._last_roll_offset = new.base_offset
        return True

    # -- read --------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        to_send: bool = False,
        upto_leo: bool = False,
    ) -> ReadResult:
        """Whole batches from the one containing ``offset``, up to ``max_bytes``, never at or past the HW
        (``upto_leo``: up to the LEO, for follower replicas).

        At least one whole batch (if any is below the HW) even if larger than
        ``max_bytes``, unless ``min_one_batch`` is False. ``offset`` below the local log
        start offset or above the LEO raises `KafkaError` OFFSET_OUT_OF_RANGE (for a tiered log the
        caller reads [log start, local log start) from the object store);
        ``offset`` in [HW, LEO] returns no data. Reads within one segment.
        ``to_send``: large reads may be read-only views of the mapped segment
        (`LogSegment.read`), for a Fetch response.
        """
        self._check_usable()
        if offset < self.local_log_start_offset or offset > self._leo:
            raise KafkaError(
                f"offset {offset} outside [{self.local_log_start_offset}, {self._leo}] of {self.directory}",
                code=ErrorCode.OFFSET_OUT_OF_RANGE,
            )
        data: bytes | memoryview = b""
        if upto_leo and offset < self._leo:
            for seg in self._segments[self._segment_index(offset) :]:
                data = seg.read(offset, max_bytes, None, min_one=min_one_batch, to_send=to_send)
                if data:
                    break
        elif offset < self._hw:
            hw_segment, hw_position = self._hw_segment, self._hw_position
            for seg in self._segments[self._segment_index(offset) :]:
                limit = hw_position if seg is hw_segment else None
                data = seg.read(offset, max_bytes, limit, min_one=min_one_batch, to_send=to_send)
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
        # Segments before the first whose running max timestamp reaches ``timestamp`` cannot match:
        # a binary search skips them, so the cost does not grow with the number of segments.
        first = bisect_left(self._sealed_timestamp_prefix(), timestamp)
        for seg in self._segments[first:]:
            if seg.largest_timestamp >= timestamp:
                limit = hw_position if seg is hw_segment else None
                found = seg.find_offset_for_timestamp(timestamp, self.local_log_start_offset, limit)
                if found is not None and found[0] < self._hw:
                    return found
            if seg is hw_segment:
                break
        return None

    def max_timestamp_record(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the log's largest timestamp, below the HW.

        ListOffsets -3 (KIP-734): the segment with the largest timestamp (the first
        such), then the first record there carrying it; None if the log is empty or
        that record is not yet below the high watermark, as Kafka answers.
        """
        self._check_usable()
        best: LogSegment | None = None
        for seg in self._segments:
            if seg.largest_timestamp >= 0 and (
                best is None or seg.largest_timestamp > best.largest_timestamp
            ):
                best = seg
        if best is None:
            return None
        found = best.find_offset_for_timestamp(best.largest_timestamp, self.local_log_start_offset)
        if found is None or found[0] >= self._hw:
            return None
        return found

    def _sealed_timestamp_prefix(self) -> list[int]:
        """Running maximum of the sealed segments' largest timestamps (cached until the list changes)."""
        key = (self._dir_gen, len(self._segments))
        if self._ts_prefix_key != key:
            prefix, running = [], -1
            for seg in self._segments[:-1]:
                running = max(running, seg.largest_timestamp)
                prefix.append(running)
            self._ts_prefix, self._ts_prefix_key = prefix, key
        return self._ts_prefix

    def iter_batch_headers(
        self, start_offset: int | None = None, end_offset: int | None = None
    ) -> Iterator[BatchHeader]:
        """Headers of the batches holding offsets in [start_offset, end_offset) (default: the whole log).

        ``BatchHeader.position`` is the byte position inside that batch's segment.
        For rebuilding producer state; no CRC check. Must run on the loop thread.
        """
        start = self.local_log_start_offset if start_offset is None else start_offset
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

    # -- transactions ------------------------------------------------------------------------

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction in the transaction index of the segment holding its marker.

        Call right after appending its ABORT marker (leader or follower): the
        marker at ``txn.last_offset`` is then in the active segment. `ValueError`
        if that offset is not in the log or ``txn`` does not end after the
        segment's previous entry. A failed write takes the log offline
        (`KafkaStorageError`): the index would miss a transaction the log has; the
        next open rebuilds it.
        """
        self._check_usable()
        if not self._log_start <= txn.last_offset < self._leo:
            raise ValueError(f"aborted transaction {txn} ends outside the log {self.directory}")
        seg = self._segments[self._segment_index(txn.last_offset)]
        try:
            if seg.append_aborted_txn(txn):
                self._dir_gen += 1  # a new file: the directory needs an fsync
        except OSError as exc:
            self._offline = exc
            raise self._io_error("append", exc, "transaction index append") from exc
        self._has_aborted = True

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), for a read_committed fetch.

        Kafka's collectAbortedTransactions: the indexes of the segment holding
        ``fetch_offset`` and the later ones, until an entry's lastStableOffset
        reaches ``upper_bound``. In-memory only; a log without aborted
        transactions answers at once.
        """
        if not self._has_aborted:
            return []
        out: list[AbortedTxn] = []
        for seg in self._segments[self._segment_index(fetch_offset) :]:
            if seg.txn_index.collect_into(out, fetch_offset, upper_bound):
                break
        return out

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
        if offset < self.local_log_start_offset:
            raise ValueError(
                f"cannot truncate to {offset}, below the local log start offset {self.local_log_start_offset}"
            )
        if self._swapping:
            raise ValueError(f"cannot truncate {self.directory} while a compaction swap is in progress")
        abort = getattr(self.cleaning, "abort", None)
        if abort is not None:
            abort()
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
            raise self._io_error("truncate", exc, "truncation") from exc
        self._leo = seg.next_offset
        # Truncation is by whole batches: a batch holding the log start offset can go, and the log
        # start offset never passes the log end offset (Kafka: min(target, log start offset)).
        self._log_start = min(self._log_start, self._leo)
        if self._hw > self._leo:
            self._hw = self._leo
        self._reposition_high_watermark()
        self._recovery_point = min(self._recovery_point, self._leo)
        self._epochs.truncate_from_end(self._leo)
        self._remove_snapshots_after(self._leo)
        self._recount_aborted()
        return self._leo

    def truncate_fully_and_start_at(
        self, offset: int, now_ms: int | None = None, log_start_offset: int | None = None
    ) -> None:
        """Drop every segment and start empty at ``offset`` (log start = HW = LEO = ``offset``).

        For a follower whose log ends below its leader's log start offset (the
        leader's retention removed what it would fetch next): nothing it holds
        can be extended, so it restarts where the leader's log starts, as Kafka
        does. Leader epochs and producer snapshots go with the segments.
        ``log_start_offset``: a tiered log's log start below ``offset`` (a follower rebuilding from
        the object store: [log start, ``offset``) is remote).
        """
        self._check_usable()
        if self._swapping:
            raise ValueError(f"cannot truncate {self.directory} while a compaction swap is in progress")
        abort = getattr(self.cleaning, "abort", None)
        if abort is not None:
            abort()
        removed = list(self._segments)
        try:
            for r in removed:
                r.remove_files()
            self._retire(removed)
            new = LogSegment.create(
                self._fs, self.directory, offset, self.config, _now_ms() if now_ms is None else now_ms
            )
        except OSError as exc:
            self._offline = exc
            raise self._io_error("truncate", exc, "truncation") from exc
        self._segments, self._bases = [new], [offset]
        self._dir_gen += 1
        self._leo = self._log_start = self._hw = self._recovery_point = self._last_roll_offset = offset
        if log_start_offset is not None and self.remote is not None:
            self._log_start = min(log_start_offset, offset)
        self._reposition_high_watermark()
        self._epochs.truncate_from_end(0)  # every entry
        self._remove_snapshots_after(-1)  # every snapshot
        self._has_aborted = False

    def _remove_snapshots_after(self, offset: int) -> None:
        """Producer-state snapshots above ``offset`` describe records that no longer exist."""
        self._remove_snapshots(lambda at: at > offset)

    def _remove_snapshots_before(self, offset: int) -> None:
        """Producer-state snapshots below ``offset`` (the local log start of a tiered log): their segments
        are gone from this disk, and a copy went to the object store with each of them."""
        self._remove_snapshots(lambda at: at < offset)

    def _remove_snapshots(self, doomed: Callable[[int], bool]) -> None:
        for name in self._fs.listdir(self.directory):
            parsed = naming.parse_segment_filename(name)
            if parsed is not None and parsed[1] == naming.SNAPSHOT_SUFFIX and doomed(parsed[0]):
                self._fs.remove_if_exists(os.path.join(self.directory, name))

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

    # -- retention -----------------------------------------------------------------------------

    def delete_records(self, offset: int, now_ms: int | None = None) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` and delete the segments below it.

        ``offset`` must be in [0, HW] (else OFFSET_OUT_OF_RANGE); an offset below the
        current log start offset changes nothing. Returns the new log start offset
        (the partition's low watermark). While the cleaner works on this log the
        segments are deleted at a later retention check, the offset moves at once.
        """
        self._check_usable()
        if offset < 0 or offset > self._hw:
            raise KafkaError(
                f"offset {offset} outside [0, {self._hw}] of {self.directory}",
                code=ErrorCode.OFFSET_OUT_OF_RANGE,
            )
        self.raise_log_start(offset, "DeleteRecords")
        if self.cleaning is None:
            self._delete_prefix(self._start_breached, "the log start offset", now_ms)
        return self._log_start

    def raise_log_start(self, offset: int, reason: str) -> None:
        """Move the log start offset up to ``offset`` (never past the HW, never down); the local segments
        below it go at the next retention check."""
        offset = min(offset, self._hw)
        if offset > self._log_start:
            self._log_start = offset
            log.info("%s: log start offset moved to %d by %s", self.directory, offset, reason)

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention (module docstring); return the number of segments deleted.

        Does nothing while the cleaner works on this log (the next check catches up).
        """
        self._check_usable()
        if self.cleaning is not None or self._swapping:
            return 0
        now = _now_ms() if now_ms is None else now_ms
        deleted = self._delete_prefix(self._start_breached, "the log start offset", now)
        if not self.config.delete:
            return deleted
        # a tiered log keeps local.retention.* locally; retention.* is the remote log manager's
        local = "local." if self._tiered_copy else ""
        cfg = self.config
        retention_bytes = cfg.effective_local_retention_bytes if local else cfg.retention_bytes
        retention_ms = cfg.effective_local_retention_ms if local else cfg.retention_ms
        if retention_bytes >= 0:
            excess = self.size - retention_bytes

            def over_size(seg: LogSegment, _: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size < 0:
                    return False
                excess -= seg.size
                return True

            deleted += self._delete_prefix(over_size, f"{local}retention.bytes {retention_bytes}", now)
        if retention_ms >= 0:
            deleted += self._delete_prefix(
                lambda seg, _: now - seg.retention_timestamp() > retention_ms,
                f"{local}retention.ms {retention_ms}",
                now,
            )
        return deleted

    def _start_breached(self, _: LogSegment, nxt: LogSegment | None) -> bool:
        return nxt is not None and nxt.base_offset <= self._log_start

    def _delete_prefix(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str, now_ms: int | None
    ) -> int:
        """Delete the leading segments for which ``predicate(segment, next segment)`` holds (Kafka's
        ``deletableSegments``): never past the HW, never the empty active segment.

        A tiered log (copy enabled) deletes only segments already in the object store (every offset
        at or below ``remote.highest_offset``, or below the log start offset); when the predicate
        holds for its non-empty active segment, that segment is rolled so it can be copied, as Kafka
        does.
        """
        segments = self._segments
        remote = self.remote if self._tiered_copy else None
        count = 0
        roll_active = False
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else self._leo
            if self._hw < upper or (nxt is None and seg.size == 0) or not predicate(seg, nxt):
                break
            if remote is not None and upper - 1 > remote.highest_offset and self._log_start < upper:
                roll_active = nxt is None
                break
            count += 1
        now = _now_ms() if now_ms is None else now_ms
        if roll_active:
            try:
                self._roll(now)
            except OSError as exc:
                raise self._io_error("roll", exc, "roll") from exc
        if not count:
            return 0
        try:
            if count == len(segments):
                self._roll(now)  # a log always has an active segment
            self._remove_leading_segments(count, reason, now)
        except OSError as exc:
            self._offline = exc
            raise self._io_error("delete", exc, "deleting segments") from exc
        return count

    def _remove_leading_segments(self, count: int, reason: str, now_ms: int) -> None:
        removed = self._segments[:count]
        del self._segments[:count]
        del self._bases[:count]
        if not self._tiered_copy:  # a tiered log's start stays: the records are in the object store
            self._log_start = max(self._log_start, self._segments[0].base_offset)
        else:
            self._remove_snapshots_before(self._segments[0].base_offset)
        paths: list[str] = []
        for seg in removed:
            paths.extend(seg.rename_files(naming.DELETED_SUFFIX))
        self._pending_deletes.append((now_ms + self.config.file_delete_delay_ms, paths))
        self._retire(removed)
        self._dir_gen += 1
        self._reposition_high_watermark()
        self._recount_aborted()
        log.info(
            "%s: deleted %d segment(s) [%d, %d) due to %s; log start offset %d, local log start %d",
            self.directory,
            count,
            removed[0].base_offset,
            self._segments[0].base_offset,
            reason,
            self._log_start,
            self.local_log_start_offset,
        )

    def take_expired_deletions(self, now_ms: int | None = None) -> list[str]:
        """Paths of `.deleted` files whose ``file.delete.delay.ms`` has passed (the caller removes them,
        e.g. in an executor); they are forgotten here."""
        now = _now_ms() if now_ms is None else now_ms
        due = [p for t, paths in self._pending_deletes if t <= now for p in paths]
        if due:
            self._pending_deletes = [(t, paths) for t, paths in self._pending_deletes if t > now]
        return due

    # -- compaction swap (see the module docstring; the cleaner drives these) -------------------

    def _contiguous_run(self, sources: Sequence[LogSegment], generations: Sequence[int]) -> int:
        """Index of ``sources`` in the segment list if they are still there, in order, unchanged and
        sealed; -1 otherwise."""
        if not sources or self._closed or self._offline is not None:
            return -1
        try:
            i = next(k for k, seg in enumerate(self._segments) if seg is sources[0])
        except StopIteration:
            return -1
        run = self._segments[i : i + len(sources)]
        if i + len(sources) >= len(self._segments) or len(run) != len(sources):
            return -1
        for seg, src, gen in zip(run, sources, generations, strict=True):
            if seg is not src or seg.generation != gen or seg.closed:
                return -1
        return i

    def swap_prepare(
        self, sources: Sequence[LogSegment], generations: Sequence[int], outputs: Sequence[int]
    ) -> bool:
        """Step 1: commit the cleaned segments (base offsets ``outputs``) by renaming them `.swap`.

        False (and nothing renamed) if the source segments changed since the cleaning
        started; the caller then deletes the `.cleaned` files.
        """
        if self._swapping or self._contiguous_run(sources, generations) < 0:
            return False
        fs, d = self._fs, self.directory
        wanted = set(outputs)
        for name in fs.listdir(d):
            parsed = naming.parse_stage_filename(name, naming.CLEANED_SUFFIX)
            if parsed is not None and parsed[0] not in wanted:
                fs.remove_if_exists(os.path.join(d, name))  # a stale leftover must not outlive this swap
        self._swapping = True
        try:
            for base in sorted(outputs, reverse=True):
                self._rename_stage(base, naming.CLEANED_SUFFIX, naming.SWAP_SUFFIX)
        except OSError:
            self.swap_abort(outputs)
            raise
        return True

    def swap_retire_old(self, sources: Sequence[LogSegment]) -> None:
        """Step 3: rename the replaced segments' files `.deleted` (descriptors stay open)."""
        try:
            for seg in sources:
                seg.rename_files(naming.DELETED_SUFFIX)
        except OSError as exc:
            self._offline = exc  # the next open finishes the swap from the `.swap` files
            raise self._io_error("compact", exc, "compaction swap") from exc

    def swap_install(
        self, sources: Sequence[LogSegment], outputs: Sequence[int], delete_horizon: int, now_ms: int
    ) -> list[LogSegment]:
        """Step 5: rename the `.swap` files into place and replace ``sources`` by the new segments."""
        fs, d = self._fs, self.directory
        new: list[LogSegment] = []
        try:
            for base in sorted(outputs):
                self._rename_stage(base, naming.SWAP_SUFFIX, "")
            for base in sorted(outputs):
                seg = LogSegment.open(fs, d, base, self.config, now_ms)
                new.append(seg)
                try:
                    seg.load()
                except CorruptIndexError as exc:
                    log.warning("%s: rebuilding indexes of cleaned segment %d: %s", d, base, exc)
                    seg.recover()
                    seg.seal()
        except OSError as exc:
            for seg in new:
                seg.close_without_seal()
            self._offline = exc
            self._swapping = False
            raise self._io_error("compact", exc, "compaction swap") from exc
        i = next(k for k, seg in enumerate(self._segments) if seg is sources[0])
        self._segments[i : i + len(sources)] = new
        self._bases = [seg.base_offset for seg in self._segments]
        self._pending_deletes.append(
            (
                now_ms + self.config.file_delete_delay_ms,
                [p for seg in sources for p in seg.file_paths(existing=True)],
            )
        )
        self._retire(list(sources))
        self._dir_gen += 1
        self._swapping = False
        self._reposition_high_watermark()
        self._recount_aborted()
        self.latest_delete_horizon = delete_horizon  # the cleaning rewrote every segment that can hold one
        return new

    def _rename_stage(self, base: int, old: str, new: str) -> None:
        """Rename the files of segment ``base`` from stage ``old`` to ``new``, the `.log` last; the
        `.txnindex` only if there is one."""
        fs = self._fs
        for suffix in naming.SEGMENT_RENAME_ORDER:
            path = naming.segment_file(self.directory, base, suffix)
            if suffix == naming.TXN_INDEX_SUFFIX and not fs.exists(path + old):
                continue
            fs.rename(path + old, path + new)

    def swap_abort(self, outputs: Sequence[int]) -> None:
        """Delete the `.cleaned`/`.swap` files of ``outputs`` (before step 3 only): the log stays as it was."""
        fs, d = self._fs, self.directory
        for base in outputs:
            for suffix in naming.SEGMENT_FILE_SUFFIXES:
                for stage in (naming.CLEANED_SUFFIX, naming.SWAP_SUFFIX):
                    with contextlib.suppress(OSError):
                        fs.remove_if_exists(naming.segment_file(d, base, suffix) + stage)
        self._swapping = False

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
            if self._closed_for_flush():
                return self.recovery_point
            leo = self._leo
            self._fsync_files(LogSegment.flush)
            self._recovery_point = max(self._recovery_point, leo)
            self._last_flush_ms = _now_ms()
            return leo

    def flush_data(self) -> None:
        """fsync what acknowledged writes need: the `.log` files written since their last fsync,
        and the directory if files came or went. Unlike `flush` the indexes are not fsynced and
        the recovery point does not move, so after a crash recovery rebuilds the indexes of every
        segment written since the last `flush` from their `.log` (Kafka's recovery point works the
        same way). Same threading and failure rules as `flush`."""
        with self._flush_lock:
            if not self._closed_for_flush():
                self._fsync_files(LogSegment.flush_log)

    def _closed_for_flush(self) -> bool:
        """Under the flush lock: `KafkaStorageError` if offline; True if closed (nothing to sync)."""
        if self._offline is not None:
            raise KafkaStorageError(f"{self.directory} is offline after an I/O error: {self._offline}")
        return self._closed

    def _fsync_files(self, sync_segment: Callable[[LogSegment], bool]) -> None:
        """Under the flush lock: ``sync_segment`` on every segment (each skips what it has synced
        already), then the directory if files came or went; segments retired meanwhile are closed.
        An `OSError` takes the log offline."""
        segments = list(self._segments)
        dir_gen = self._dir_gen
        try:
            for seg in segments:
                sync_segment(seg)
            if dir_gen != self._dir_flushed_gen:
                self._fs.fsync_dir(self.directory)
                self._dir_flushed_gen = dir_gen
        except OSError as exc:
            self._offline = exc
            raise self._io_error("fsync", exc, "fsync") from exc
        finally:
            while self._graveyard:
                self._graveyard.pop().close_without_seal()

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
        abort = getattr(self.cleaning, "abort", None)
        if abort is not None:
            abort()
        parent, name = os.path.split(os.path.abspath(self.directory))
        doomed = os.path.join(parent, naming.delete_dir_name(name, uuid.uuid4().hex))
        self._fs.rename(self.directory, doomed)
        self._fs.fsync_dir(parent)
        self._pending_deletes.clear()
        try:
            self._fs.rmtree(doomed)
        except OSError as exc:  # e.g. an aborting cleaner thread still writing there: removed at next open
            log.warning("could not remove %s yet: %s", doomed, exc)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.directory!r}, start={self._log_start}, hw={self._hw}, "
            f"leo={self._leo}, segments={len(self._segments)})"
        )
