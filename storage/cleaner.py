"""The log cleaner: compaction of ``cleanup.policy=compact`` logs, off the event loop.

What it does (Kafka's design, LogCleaner / LogCleanerManager):

- Each log has a *cleaner offset* (``cleaner-offset-checkpoint``): records below it
  have been cleaned at least once (the *clean* section); from it to the first
  uncleanable offset (the active segment's base offset, or the first segment
  younger than ``min.compaction.lag.ms``) lies the *dirty* section. The log with
  the largest dirty ratio ``dirty bytes / (clean + dirty bytes)`` at or above
  ``min.cleanable.dirty.ratio`` is cleaned next; if none qualifies, a log whose
  tombstones' delete horizon has passed is (so tombstones disappear on quiet
  topics too).
- An `OffsetMap` of key -> latest offset is built over the dirty section. Its
  memory is bounded: keys are stored as at most 16 bytes (longer keys by their
  16-byte BLAKE2b digest, as Kafka's SkimpyOffsetMap stores MD5s), at most
  ``capacity`` of them (``dedupe buffer bytes / ENTRY_COST``). When the map is full the pass stops at a batch boundary;
  the cleaner offset moves only that far and the next pass continues from there.
- Every sealed segment from the start of the log up to where the map ends is
  rewritten, keeping a record unless a later offset of its key is in the map, or it
  is a tombstone (null value) whose batch's delete horizon has passed. Records past
  the map's end are kept. Keyless records are dropped (Kafka does the same; new
  ones are refused at produce time, see `check_keys`).
- Batches are re-encoded only when some of their records go or a delete horizon
  must be set, otherwise copied byte for byte. A rebuilt batch keeps its base
  offset, lastOffsetDelta (so the producer's last sequence survives), producer id,
  epoch, base sequence, partition leader epoch, codec, timestamp type and the
  transactional/control bits; its maxTimestamp is recomputed over the kept
  records (CreateTime). When only records go, the kept records' bytes are
  spliced into a new payload (their deltas stay valid: same base offset and base
  timestamp) and recompressed. A batch that keeps a tombstone and has no delete
  horizon yet gets one: attribute bit 6 set and baseTimestamp = now +
  ``delete.retention.ms``; its records are re-encoded with rebased timestamp
  deltas (`protocol.records.build_batch`), so record timestamps do not change. A batch emptied by cleaning disappears, except the
  last batch of a producer that is still active, which is kept as an empty batch
  (header only, recordCount 0), so producer state rebuilt from the log still knows
  the producer's last sequence (Kafka's RETAIN_EMPTY).
- Transactions (Kafka's rules): the dirty section ends below the log's
  ``first_unstable_offset`` (the first offset of the oldest undecided
  transaction), at the start of the segment holding it, so only decided
  transactions are cleaned. Data batches of aborted transactions (transactional,
  not control, producer P at an offset inside an `AbortedTxn` of P in the log's
  transaction indexes) are dropped whole and never enter the offset map (so
  they neither survive nor supersede committed records), except that the last
  batch of a still-active producer stays as an empty batch, as above.
  Committed transactional batches are compacted like any others and keep their
  transactional bit and producer fields. A control batch (COMMIT/ABORT marker)
  stays while any batch of its transaction is left; once a pass finds it alone
  (`storage.cleaner_txns`) it gets a delete horizon of ``delete.retention.ms``
  and goes in the first pass after that, as in Kafka. The marker of an active
  producer with no later data batch stays (it carries the producer's epoch).
  Each cleaned segment gets the transaction-index entries of its source
  segments (each in the output segment holding its marker), except those of
  aborted transactions found with no data left, so aborted records never
  resurface to read_committed consumers.
- Offsets are preserved; consumers read across the gaps.
- The rewritten segments are grouped so that a group's original size is at most
  ``segment.bytes`` (and its offsets fit int32 relative offsets, its index entries
  the index size); each group becomes one new segment named after the group's
  first base offset. Should re-encoding make it larger (delete horizons widen
  timestamp deltas), the output is split at a batch boundary, so no cleaned segment
  exceeds ``segment.bytes``.
- The active segment is never cleaned, nor anything from the segment holding the
  high watermark or the first unstable offset on.

Threading: `LogCleaner.grab_filthiest` (choose a log, snapshot its segment list)
and the swap steps run on the event loop thread; `LogCleaner.clean` runs in a
worker thread and touches no shared state: it opens its own descriptors on the
source `.log` files and writes ``.cleaned`` files. While a job is in flight the
log's retention waits (``PartitionLog.cleaning`` is set) and appends only touch
the active segment, so nothing races; truncation and topic deletion abort the
job (`CleaningJob.abort`), and the swap re-checks that the sources are unchanged.
The swap protocol and its crash recovery are in `storage.partition_log`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from protocol.errors import CorruptRecordError, ErrorCode, KafkaError, ProtocolError
from protocol.records import (
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    decode_batch,
    scan_valid_prefix,
)
from storage import naming
from storage.checkpoint import CorruptCheckpointError, read_offsets, write_offsets
from storage.cleaner_batches import delete_horizon, empty_batch, rebuild_batch, splice_batch
from storage.cleaner_txns import CleanedTransactions, is_aborted_batch
from storage.config import LogConfig
from storage.fs import File, FileSystem
from storage.index import INT32_MAX
from storage.partition_log import PartitionLog
from storage.record_scan import Scanned, batch_payload, scan_records
from storage.segment import LogSegment
from storage.txn_index import AbortedRanges, AbortedTxn

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

KEY_DIGEST_BYTES = 16
# Estimated bytes per OffsetMap entry: a 16-byte bytes object (49), an int (32) and a dict slot (~40).
ENTRY_COST = 128
DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024
_READ_CHUNK = 1024 * 1024
_WRITE_CHUNK = 1024 * 1024

_INT32 = struct.Struct(">i")


class CleanerAborted(Exception):
    """The job was aborted (truncation, topic deletion or shutdown); nothing was changed."""


class CorruptLogError(Exception):
    """A batch in the range to clean is not valid: the log is left alone (marked uncleanable)."""


def key_digest(key: bytes) -> bytes:
    """The stand-in for a key in the `OffsetMap`, at most 16 bytes: keys shorter than 16 bytes
    stand for themselves (no hashing cost), longer ones by their 16-byte BLAKE2b digest (the
    lengths differ, so the two kinds never collide)."""
    if len(key) < KEY_DIGEST_BYTES:
        return key
    return hashlib.blake2b(key, digest_size=KEY_DIGEST_BYTES).digest()


class OffsetMap:
    """Key digest -> latest offset, with at most ``capacity`` entries (bounded memory)."""

    __slots__ = ("capacity", "_map")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._map: dict[bytes, int] = {}

    def put(self, digest: bytes, offset: int) -> None:
        self._map[digest] = offset

    def get(self, digest: bytes) -> int:
        """The latest offset recorded for ``digest``, -1 if none."""
        return self._map.get(digest, -1)

    def room_for(self, entries: int) -> bool:
        return len(self._map) + entries <= self.capacity

    def __len__(self) -> int:
        return len(self._map)


def check_keys(record_set: bytes | bytearray | memoryview, headers: Sequence[BatchHeader]) -> None:
    """Produce to a compacted topic: every record needs a key (Kafka's LogValidator rule).

    Decodes each batch (decompressing it): `KafkaError` INVALID_RECORD for a keyless
    record, `CorruptRecordError` (CORRUPT_MESSAGE) if the records do not decode.
    """
    for h in headers:
        try:
            _, records = decode_batch(record_set, h.position, check_crc=False)
        except ProtocolError as exc:
            raise CorruptRecordError(str(exc)) from exc
        for record in records:
            if record.key is None:
                raise KafkaError(
                    "Compacted topic cannot accept message without key", ErrorCode.INVALID_RECORD
                )


# -- jobs and results --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """A sealed segment as it was when the job was created (the object is only touched on the loop)."""

    segment: LogSegment
    generation: int
    base_offset: int
    next_offset: int
    size: int
    index_entries: int
    log_path: str
    aborted_txns: tuple[AbortedTxn, ...] = ()  # its transaction index's entries


@dataclass(eq=False)  # hashed by identity: the log tasks keep the running jobs in a set
class CleaningJob:
    """Everything the worker thread needs, captured on the loop thread."""

    tp: TopicPartition
    log: PartitionLog
    directory: str
    config: LogConfig
    fs: FileSystem
    sources: list[SourceSegment]  # every sealed segment below first_uncleanable, in order
    first_dirty: int
    first_uncleanable: int
    now_ms: int
    map_capacity: int
    producer_last_offsets: Mapping[int, int] = field(default_factory=dict)
    aborted: threading.Event = field(default_factory=threading.Event)
    # Every aborted transaction that may have data in the sources (from all segments' indexes).
    aborted_txns: tuple[AbortedTxn, ...] = ()

    def abort(self) -> None:
        """Ask the worker to stop (thread-safe); it raises `CleanerAborted` at the next batch."""
        self.aborted.set()


@dataclass
class CleaningStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    batches_rewritten: int = 0
    map_entries: int = 0
    seconds: float = 0.0


@dataclass
class CleaningResult:
    job: CleaningJob
    end_offset: int  # the new cleaner offset: the offset map covered [first_dirty, end_offset)
    replaced: list[SourceSegment]  # the segments the outputs replace (a prefix of job.sources)
    outputs: list[int]  # base offsets of the `.cleaned` segments written, ascending
    delete_horizon: int  # largest delete horizon left in the cleaned segments, -1 if none
    stats: CleaningStats


# -- the worker side ---------------------------------------------------------------------------


def _iter_batches(file: File, size: int, job: CleaningJob) -> Iterator[tuple[BatchHeader, bytes]]:
    """CRC-checked batches of a `.log` (position = byte position in the file); `CorruptLogError` at
    anything else before ``size``."""
    pos = 0
    want = _READ_CHUNK
    while pos < size:
        chunk = file.pread(min(want, size - pos), pos)
        want = _READ_CHUNK
        headers, valid = scan_valid_prefix(chunk)
        if not headers:
            if len(chunk) >= LOG_OVERHEAD:
                (length,) = _INT32.unpack_from(chunk, 8)
                need = LOG_OVERHEAD + length
                if length >= MIN_BATCH_LENGTH and need > len(chunk) and pos + need <= size:
                    want = need
                    continue
            raise CorruptLogError(f"{file.path}: no valid batch at byte {pos}")
        for h in headers:
            if job.aborted.is_set():
                raise CleanerAborted(job.directory)
            yield h, chunk[h.position : h.end]
        pos += valid


def _build_offset_map(
    job: CleaningJob, offset_map: OffsetMap, stats: CleaningStats, aborted: AbortedRanges
) -> int:
    """Fill ``offset_map`` from the dirty section; return where it stops (the new cleaner offset).

    Aborted transactions' records are left out: they must not supersede anything."""
    end = job.first_dirty
    for src in job.sources:
        if src.next_offset <= job.first_dirty:
            continue
        file = job.fs.open(src.log_path, create=False)
        try:
            for h, data in _iter_batches(file, src.size, job):
                if h.last_offset < job.first_dirty:
                    continue
                if h.is_control or is_aborted_batch(h, aborted):
                    end = h.last_offset + 1
                    continue
                if len(offset_map) and not offset_map.room_for(h.record_count):
                    return end  # full: this pass ends at a batch boundary
                try:
                    records = scan_records(batch_payload(data, h), h.record_count)
                except ProtocolError as exc:
                    raise CorruptLogError(f"{src.log_path}: batch at byte {h.position}: {exc}") from exc
                base, first_dirty, put = h.base_offset, job.first_dirty, offset_map.put
                for offset_delta, _, key, _, _, _ in records:
                    if key is not None and base + offset_delta >= first_dirty:
                        put(key_digest(key), base + offset_delta)
                end = h.last_offset + 1
        finally:
            file.close()
    return max(end, job.first_dirty)


def _group(sources: Sequence[SourceSegment], config: LogConfig) -> list[list[SourceSegment]]:
    """Consecutive segments whose total size fits ``segment.bytes``, offsets fit int32 relative
    offsets and index entries fit ``segment.index.bytes`` (Kafka's groupSegmentsBySize)."""
    max_entries = max(1, config.segment_index_bytes // 8)
    groups: list[list[SourceSegment]] = []
    for src in sources:
        if groups:
            g = groups[-1]
            if (
                sum(s.size for s in g) + src.size <= config.segment_bytes
                and sum(s.index_entries for s in g) + src.index_entries <= max_entries
                and src.next_offset - 1 - g[0].base_offset <= INT32_MAX
            ):
                g.append(src)
                continue
        groups.append([src])
    return groups


class _Output:
    """The `.cleaned` segments one group is written to (normally one), with buffered appends."""

    def __init__(self, job: CleaningJob, stats: CleaningStats, txns: CleanedTransactions) -> None:
        self.job = job
        self.stats = stats
        self.bases: list[int] = []
        self._seg: LogSegment | None = None
        self._buf = bytearray()
        self._batches: list[tuple[int, int, int]] = []
        self._first = self._last = self._max_ts = self._offset_of_max = -1
        self._txns: list[AbortedTxn] = []  # the group's transaction-index entries not yet written
        self._txn_pos = 0
        self._cleaned_txns = txns  # which entries go with their markers

    def start(self, base: int, txns: list[AbortedTxn] | None = None) -> None:
        """Start an output segment at ``base``; ``txns`` (a new group's index entries) if a group starts."""
        self.finish()
        self._seg = LogSegment.create(
            self.job.fs, self.job.directory, base, self.job.config, self.job.now_ms, naming.CLEANED_SUFFIX
        )
        self.bases.append(base)
        if txns is not None:
            self._txns, self._txn_pos = txns, 0

    def _add_txns(self, upto: int) -> None:
        """Write the pending index entries whose marker offset is <= ``upto`` to the current segment."""
        seg, txns = self._seg, self._txns
        assert seg is not None
        while self._txn_pos < len(txns) and txns[self._txn_pos].last_offset <= upto:
            if not self._cleaned_txns.drops_index_entry(txns[self._txn_pos]):
                seg.append_aborted_txn(txns[self._txn_pos])
            self._txn_pos += 1

    def add(self, data: bytes, base_offset: int, last_offset: int, max_ts: int) -> None:
        seg = self._seg
        assert seg is not None
        if seg.size + len(self._buf) + len(data) > self.job.config.segment_bytes and (seg.size or self._buf):
            self._add_txns(base_offset - 1)
            self.start(base_offset)
            seg = self._seg
        if len(self._buf) >= _WRITE_CHUNK:
            self._write()
        if not self._buf:
            self._first = base_offset
        self._batches.append((len(self._buf), last_offset, max_ts))
        self._buf += data
        self._last = last_offset
        self._add_txns(last_offset)
        if max_ts > self._max_ts:
            self._max_ts, self._offset_of_max = max_ts, last_offset

    def _write(self) -> None:
        if self._buf and self._seg is not None:
            self._seg.append(
                self._first, self._last, self._max_ts, self._offset_of_max, self._buf, batches=self._batches
            )
            self.stats.bytes_written += len(self._buf)
        self._buf = bytearray()
        self._batches = []
        self._max_ts = self._offset_of_max = -1

    def finish(self) -> None:
        seg = self._seg
        if seg is None:
            return
        try:
            self._write()
            seg.seal()
            seg.flush()
        finally:
            self._seg = None
            seg.close_without_seal()

    def finish_group(self) -> None:
        """End the group: its remaining index entries go to the last segment, which is completed."""
        if self._seg is not None:
            self._add_txns(2**63 - 1)
        self._txns, self._txn_pos = [], 0
        self.finish()

    def remove(self) -> None:
        """Delete every `.cleaned` file written (on failure)."""
        if self._seg is not None:
            self._seg.close_without_seal()
            self._seg = None
        for base in self.bases:
            for suffix in naming.SEGMENT_FILE_SUFFIXES:
                self.job.fs.remove_if_exists(
                    naming.segment_file(self.job.directory, base, suffix) + naming.CLEANED_SUFFIX
                )


def _clean_marker(job: CleaningJob, h: BatchHeader, data: bytes, alone: bool, out: _Output) -> int | None:
    """Write (or drop) the control batch ``h``; returns the delete horizon it is left with, if any.

    ``alone``: its transaction has no data left (`CleanedTransactions.on_marker`) and it
    lies inside the offset map. Such a marker gets a delete horizon (``delete.retention.ms``
    from now) the first time and goes in a pass after the horizon, unless it carries the
    epoch of a producer that is still active and has no later data batch."""
    horizon = delete_horizon(h)
    last_data = job.producer_last_offsets.get(h.producer_id)
    if not alone or (last_data is not None and last_data < h.last_offset):
        out.add(data, h.base_offset, h.last_offset, h.max_timestamp)
        return None
    if horizon is not None and job.now_ms >= horizon:
        return None  # gone
    if h.record_count == 0:
        return None  # an emptied marker: nothing to keep
    if horizon is None:
        try:
            _, records = decode_batch(data, check_crc=False)
        except ProtocolError as exc:
            raise CorruptLogError(f"marker at offset {h.base_offset}: {exc}") from exc
        horizon = job.now_ms + job.config.delete_retention_ms
        data, _ = rebuild_batch(h, records, horizon)
    out.add(data, h.base_offset, h.last_offset, h.max_timestamp)
    return horizon


def _clean_group(
    job: CleaningJob,
    group: Sequence[SourceSegment],
    offset_map: OffsetMap,
    end: int,
    out: _Output,
    stats: CleaningStats,
    txns: CleanedTransactions,
) -> int:
    """Write the cleaned form of ``group``; returns the largest delete horizon written (-1 if none)."""
    now = job.now_ms
    new_horizon = now + job.config.delete_retention_ms
    horizon_out = -1
    out.start(group[0].base_offset, [t for src in group for t in src.aborted_txns])
    for src in group:
        file = job.fs.open(src.log_path, create=False)
        try:
            for h, data in _iter_batches(file, src.size, job):
                stats.bytes_read += len(data)
                stats.records_read += h.record_count
                if h.is_control:
                    horizon = _clean_marker(job, h, data, txns.on_marker(h) and h.last_offset < end, out)
                    if horizon is not None:
                        horizon_out = max(horizon_out, horizon)
                    continue
                txns.on_data(h)
                if txns.is_aborted(h):
                    if h.producer_id >= 0 and job.producer_last_offsets.get(h.producer_id) == h.last_offset:
                        out.add(empty_batch(h), h.base_offset, h.last_offset, h.max_timestamp)
                    continue
                if h.base_offset >= end:
                    # Past the offset map: kept as is.
                    out.add(data, h.base_offset, h.last_offset, h.max_timestamp)
                    stats.records_kept += h.record_count
                    continue
                try:
                    payload = batch_payload(data, h)
                    records = scan_records(payload, h.record_count)
                except ProtocolError as exc:
                    raise CorruptLogError(f"{src.log_path}: batch at byte {h.position}: {exc}") from exc
                horizon = delete_horizon(h)
                expired = horizon is not None and now >= horizon
                kept: list[Scanned] = []
                tombstones = False
                base, get = h.base_offset, offset_map.get
                for rec in records:
                    offset_delta, _, key, null, _, _ = rec
                    offset = base + offset_delta
                    if offset >= end:
                        keep = True
                    elif key is None:
                        keep = False
                    else:
                        keep = offset >= get(key_digest(key)) and (not null or not expired)
                    if keep:
                        kept.append(rec)
                        tombstones = tombstones or null
                stats.records_kept += len(kept)
                if not kept:
                    if h.producer_id >= 0 and job.producer_last_offsets.get(h.producer_id) == h.last_offset:
                        out.add(empty_batch(h), h.base_offset, h.last_offset, h.max_timestamp)
                    continue
                set_horizon = tombstones and horizon is None
                if len(kept) == len(records) and not set_horizon:
                    out.add(data, h.base_offset, h.last_offset, h.max_timestamp)
                    if horizon is not None and tombstones:
                        horizon_out = max(horizon_out, horizon)
                    continue
                if set_horizon:
                    try:
                        _, full = decode_batch(data, check_crc=False)
                    except ProtocolError as exc:
                        raise CorruptLogError(f"{src.log_path}: batch at byte {h.position}: {exc}") from exc
                    wanted = {r[0] for r in kept}
                    rebuilt, max_ts = rebuild_batch(
                        h, [r for r in full if r.offset_delta in wanted], new_horizon
                    )
                    horizon_out = max(horizon_out, new_horizon)
                else:
                    rebuilt, max_ts = splice_batch(h, data, payload, kept)
                    if tombstones and horizon is not None:
                        horizon_out = max(horizon_out, horizon)
                stats.batches_rewritten += 1
                out.add(rebuilt, h.base_offset, h.last_offset, max_ts)
        finally:
            file.close()
    out.finish_group()
    return horizon_out


# -- the manager of cleaning -------------------------------------------------------------------


class LogCleaner:
    """Cleaner offsets, log selection (loop thread), cleaning (worker thread), swap (loop + executor).

    ``cleaner-offset-checkpoint`` (Kafka's text checkpoint, entries ``topic partition offset``)
    holds each compacted partition's cleaner offset; it is read at construction and
    written with `checkpoint` (atomically). Losing it only means re-cleaning from the
    log start offset.
    """

    def __init__(
        self, fs: FileSystem, data_dir: str, dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES
    ) -> None:
        self._fs = fs
        self.path = os.path.join(data_dir, naming.CLEANER_OFFSET_CHECKPOINT)
        self.map_capacity = max(1, dedupe_buffer_bytes // ENTRY_COST)
        try:
            self.offsets: dict[TopicPartition, int] = read_offsets(fs, self.path)
        except CorruptCheckpointError as exc:
            log.warning("ignoring %s", exc)
            self.offsets = {}

    # -- loop thread -----------------------------------------------------------------------------

    def set_dedupe_buffer(self, dedupe_buffer_bytes: int) -> None:
        """The memory of one cleaning's offset map from the next cleaning on (Kafka gives each
        cleaner thread ``log.cleaner.dedupe.buffer.size`` / ``log.cleaner.threads``)."""
        self.map_capacity = max(1, dedupe_buffer_bytes // ENTRY_COST)

    def forget(self, tp: TopicPartition) -> None:
        self.offsets.pop(tp, None)

    def checkpoint_data(self, live: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, int]:
        """The offsets to write (only partitions in ``live`` if given)."""
        if live is None:
            return dict(self.offsets)
        keep = set(live)
        return {tp: o for tp, o in self.offsets.items() if tp in keep}

    def checkpoint(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Atomically write ``cleaner-offset-checkpoint`` (any thread; callers serialise writes)."""
        write_offsets(self._fs, self.path, self.offsets if offsets is None else offsets)

    def cleanable_range(self, tp: TopicPartition, plog: PartitionLog, now_ms: int) -> tuple[int, int, float]:
        """``(first dirty offset, first uncleanable offset, dirty ratio)`` of a log."""
        start = plog.log_start_offset
        first_dirty = self.offsets.get(tp, start)
        if first_dirty < start or first_dirty > plog.log_end_offset:
            first_dirty = start
        segments = plog.segments
        first_uncleanable = segments[-1].base_offset
        hw = plog.high_watermark
        lag = plog.config.min_compaction_lag_ms
        for i, seg in enumerate(segments[:-1]):
            nxt = segments[i + 1].base_offset
            if nxt > hw or (lag > 0 and nxt > first_dirty and now_ms - seg.retention_timestamp() < lag):
                first_uncleanable = min(first_uncleanable, seg.base_offset)
                break
        first_uncleanable = max(first_uncleanable, first_dirty)
        unstable = plog.first_unstable_offset
        if unstable is not None:
            # Nothing from the segment holding the first undecided transaction's start on.
            for i, seg in enumerate(segments[:-1]):
                if segments[i + 1].base_offset > unstable:
                    first_uncleanable = min(first_uncleanable, seg.base_offset)
                    break
        clean = dirty = 0
        for i, seg in enumerate(segments[:-1]):
            nxt = segments[i + 1].base_offset
            if nxt <= first_dirty:
                clean += seg.size
            elif seg.base_offset < first_uncleanable:
                dirty += seg.size
        total = clean + dirty
        return first_dirty, first_uncleanable, (dirty / total if total else 0.0)

    def grab_filthiest(
        self,
        logs: Iterable[tuple[TopicPartition, PartitionLog]],
        now_ms: int | None = None,
        producer_last_offsets: Callable[[TopicPartition], Mapping[int, int]] | None = None,
    ) -> CleaningJob | None:
        """Pick the compacted log most in need of cleaning and start a job on it (sets ``log.cleaning``)."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        best: tuple[float, TopicPartition, PartitionLog, int, int] | None = None
        expired: tuple[TopicPartition, PartitionLog, int, int] | None = None
        for tp, plog in logs:
            if (
                not plog.config.compact
                or plog.offline
                or plog.closed
                or plog.cleaning is not None
                or plog.swapping
                or plog.uncleanable
                or len(plog.segments) < 2
            ):
                continue
            first_dirty, first_uncleanable, ratio = self.cleanable_range(tp, plog, now)
            if ratio > 0 and ratio >= plog.config.min_cleanable_dirty_ratio:
                if best is None or ratio > best[0]:
                    best = (ratio, tp, plog, first_dirty, first_uncleanable)
            elif 0 <= plog.latest_delete_horizon <= now and expired is None:
                expired = (tp, plog, first_dirty, first_uncleanable)
        if best is not None:
            _, tp, plog, first_dirty, first_uncleanable = best
        elif expired is not None:
            tp, plog, first_dirty, first_uncleanable = expired
        else:
            return None
        sources = [
            SourceSegment(
                seg,
                seg.generation,
                seg.base_offset,
                plog.segments[i + 1].base_offset,
                seg.size,
                len(seg.offset_index),
                seg.file_paths()[0],
                tuple(seg.txn_index.entries),
            )
            for i, seg in enumerate(plog.segments[:-1])
            if seg.base_offset < first_uncleanable
        ]
        if not sources:
            return None
        job = CleaningJob(
            tp=tp,
            log=plog,
            directory=plog.directory,
            config=plog.config,
            fs=plog.fs,
            sources=sources,
            first_dirty=first_dirty,
            first_uncleanable=first_uncleanable,
            now_ms=now,
            map_capacity=self.map_capacity,
            producer_last_offsets=dict(producer_last_offsets(tp)) if producer_last_offsets else {},
            aborted_txns=tuple(
                t
                for seg in plog.segments
                for t in seg.txn_index.entries
                if t.first_offset < first_uncleanable
            ),
        )
        plog.cleaning = job
        return job

    def release(self, job: CleaningJob) -> None:
        if job.log.cleaning is job:
            job.log.cleaning = None

    # -- worker thread ---------------------------------------------------------------------------

    def clean(self, job: CleaningJob) -> CleaningResult:
        """Build the offset map and write the `.cleaned` segments (worker thread; fsyncs them).

        Raises `CleanerAborted` or `CorruptLogError` (no `.cleaned` file is left behind then).
        """
        started = time.monotonic()
        stats = CleaningStats()
        offset_map = OffsetMap(job.map_capacity)
        aborted = AbortedRanges(job.aborted_txns)
        txns = CleanedTransactions(aborted)
        out = _Output(job, stats, txns)
        try:
            end = _build_offset_map(job, offset_map, stats, aborted)
            stats.map_entries = len(offset_map)
            replaced = [s for s in job.sources if s.base_offset < end]
            horizon = -1
            for group in _group(replaced, job.config):
                horizon = max(horizon, _clean_group(job, group, offset_map, end, out, stats, txns))
        except BaseException:
            out.remove()
            raise
        stats.seconds = time.monotonic() - started
        return CleaningResult(job, end, replaced, out.bases, horizon, stats)

    # -- the swap (see storage.partition_log) ---------------------------------------------------

    def commit(self, result: CleaningResult) -> bool:
        """Swap step 1 (loop). False if the log changed meanwhile: the job is dropped."""
        job = result.job
        ok = False
        if result.replaced and not job.aborted.is_set():
            try:
                ok = job.log.swap_prepare(
                    [s.segment for s in result.replaced],
                    [s.generation for s in result.replaced],
                    result.outputs,
                )
            except OSError as exc:
                log.error("%s: compaction swap failed: %s", job.directory, exc)
        if not ok:
            job.log.swap_abort(result.outputs)
            self.release(job)
        return ok

    @staticmethod
    def sync_dir(result: CleaningResult) -> None:
        """Swap steps 2 and 4 (executor): make the renames durable."""
        result.job.fs.fsync_dir(result.job.directory)

    def retire(self, result: CleaningResult) -> None:
        """Swap step 3 (loop)."""
        result.job.log.swap_retire_old([s.segment for s in result.replaced])

    def install(self, result: CleaningResult, now_ms: int | None = None) -> None:
        """Swap step 5 (loop): the cleaned segments go live and the cleaner offset moves."""
        job = result.job
        try:
            if job.log.closed:
                return  # deleted or shutting down: the next open finishes the swap
            now = int(time.time() * 1000) if now_ms is None else now_ms
            job.log.swap_install(
                [s.segment for s in result.replaced], result.outputs, result.delete_horizon, now
            )
            self.offsets[job.tp] = result.end_offset
            s = result.stats
            log.info(
                "%s: cleaned [%d, %d) in %.2fs: %d -> %d bytes, %d of %d records kept, %d keys",
                job.directory,
                result.replaced[0].base_offset,
                result.end_offset,
                s.seconds,
                s.bytes_read,
                s.bytes_written,
                s.records_kept,
                s.records_read,
                s.map_entries,
            )
        finally:
            self.release(job)

    def fail(self, job: CleaningJob, exc: BaseException) -> None:
        """After `clean` raised (loop)."""
        self.release(job)
        if isinstance(exc, CleanerAborted):
            log.info("%s: cleaning aborted", job.directory)
        elif isinstance(exc, CorruptLogError):
            job.log.uncleanable = str(exc)
            log.error("%s: not cleaning this log any more: %s", job.directory, exc)
        else:
            log.error("%s: cleaning failed: %r", job.directory, exc)

    def clean_once(
        self,
        logs: Iterable[tuple[TopicPartition, PartitionLog]],
        now_ms: int | None = None,
        producer_last_offsets: Callable[[TopicPartition], Mapping[int, int]] | None = None,
    ) -> CleaningResult | None:
        """One whole cleaning, every step in the calling thread (tests, benchmarks, tools)."""
        job = self.grab_filthiest(logs, now_ms, producer_last_offsets)
        if job is None:
            return None
        try:
            result = self.clean(job)
        except BaseException as exc:
            self.fail(job, exc)
            if isinstance(exc, (CleanerAborted, CorruptLogError)):
                return None
            raise
        if not self.commit(result):
            return None
        self.sync_dir(result)
        self.retire(result)
        self.sync_dir(result)
        self.install(result, now_ms)
        return result
