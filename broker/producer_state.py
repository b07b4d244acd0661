"""Producer state per partition: producer ids, epochs, sequence numbers and open transactions.

Rules (Kafka's, for idempotent and transactional producers):
- Per (producer id, partition) the broker remembers the epoch and the last five
  appended batches (first/last sequence, first/last offset).
- A batch whose epoch is older than the remembered one: INVALID_PRODUCER_EPOCH.
- A newer epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER.
- An unknown producer's first batch is taken at any sequence, as Kafka does
  since KIP-360 (2.5): its state may be gone with retention, DeleteRecords or
  ``producer.id.expiration.ms``, and the producer carries on from where it was.
- A batch equal (first and last sequence) to one of the last five: a duplicate,
  answered with success and the original base offset, not appended again.
- Otherwise its first sequence must follow the last one (int32 wrap to 0),
  else OUT_OF_ORDER_SEQUENCE_NUMBER.
- A known producer with no remembered batch (its epoch was bumped by a
  transaction marker) must restart at sequence 0.
- A producer not heard from for ``producer.id.expiration.ms`` is forgotten
  (`expire`), unless it has an open transaction.

Transactions: the first transactional batch of a producer opens its
transaction at that batch's offset (``txn_first_offset``); a non-transactional
batch while one is open is INVALID_TXN_STATE. A COMMIT or ABORT marker
(`check_marker`, `complete`) closes it: a marker with an older producer epoch
is INVALID_PRODUCER_EPOCH, one from an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED; a marker with a newer epoch bumps the
producer's epoch (the coordinator fenced it). The first unstable offset is the
smallest first offset of an open transaction, or of a closed one whose marker
is not yet below the high watermark (`first_unstable_offset`); the last stable
offset (LSO) is the smaller of it and the high watermark.

Persistence: the state of a partition is written to ``<offset>.snapshot`` in its
directory when a segment rolls (offset = the new segment's base offset) and at
shutdown (offset = log end offset); a snapshot at offset S describes the batches
below S. At start-up the newest readable snapshot at or below the log end offset
is loaded and the batch headers from S to the log end are replayed, so recovery
reads only the tail of the log (with no snapshot: the whole log). Snapshots above
the log end (a crash lost their records) are deleted; the two newest are kept.

Snapshot file format: Kafka's producer snapshot version 1, big-endian::

    0   INT16   version = 1
    2   UINT32  CRC-32C of bytes [6, end)
    6   INT32   entry count
    10  entries, 46 bytes each:
        INT64 producer id, INT16 epoch, INT32 last sequence, INT64 last offset,
        INT32 offset delta (last - first offset of the batch = last - first sequence),
        INT64 timestamp (ms; last activity of the producer),
        INT32 coordinator epoch (-1: none), INT64 first offset of the open transaction (-1: none)

Kafka writes one entry per producer (its last batch). minikafka writes one entry
per remembered batch, oldest first, so it can restore the five-batch duplicate
window; Kafka's reader keeps the last entry per producer id, i.e. exactly what
Kafka would have written. A file that is short, has another version or a bad
CRC is corrupt: it is deleted and the next older snapshot (or the log) is used.

Producer ids are unique across restarts: they are handed out in blocks whose
upper bound is written (atomically) to `producer-id-block` in the data dir
before any id of the block is used.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from protocol.control_records import read_marker
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader, crc32c
from storage import naming
from storage.fs import FileSystem
from storage.partition_log import PartitionLog

log = logging.getLogger("minikafka.producer_state")

MAX_CACHED_BATCHES = 5
INT32_MAX = 0x7FFFFFFF
ID_BLOCK = 1000
SNAPSHOT_VERSION = 1
SNAPSHOTS_KEPT = 2

_SNAPSHOT_HEADER = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
assert _SNAPSHOT_ENTRY.size == 46


class CorruptSnapshotError(ValueError):
    """A producer snapshot file does not follow the format above."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def _last_seq(base_sequence: int, last_offset_delta: int) -> int:
    s = base_sequence + last_offset_delta
    return s - INT32_MAX - 1 if s > INT32_MAX else s


@dataclass(slots=True)
class _Batch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class _Producer:
    epoch: int
    batches: deque[_Batch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1  # wall-clock ms of the last append (for expiry)
    coordinator_epoch: int = -1  # of the last transaction marker
    txn_first_offset: int = -1  # first offset of the open transaction, -1: none


class PartitionProducers:
    """Producer state of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, _Producer] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # (first offset, marker offset) of closed transactions whose marker may be above the HW
        self.unreplicated: deque[tuple[int, int]] = deque()

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The smallest first offset of a transaction not yet decided below ``high_watermark``, or None."""
        unreplicated = self.unreplicated
        while unreplicated and unreplicated[0][1] < high_watermark:
            unreplicated.popleft()
        if not self.ongoing and not unreplicated:
            return None
        firsts = list(self.ongoing.values())
        firsts.extend(first for first, _ in unreplicated)
        return min(firsts)

    def check(self, h: BatchHeader) -> int | None:
        """Validate batch `h`; return the original base offset if it is a duplicate, else None.

        Raises KafkaError with Kafka's code when the batch must be rejected.
        """
        state = self.producers.get(h.producer_id)
        last = _last_seq(h.base_sequence, h.last_offset_delta)
        if state is None:
            return None
        if h.producer_epoch < state.epoch:
            raise KafkaError(
                f"epoch {h.producer_epoch} older than {state.epoch}", ErrorCode.INVALID_PRODUCER_EPOCH
            )
        if state.txn_first_offset >= 0 and not h.is_transactional:
            raise KafkaError(
                f"non-transactional batch from producer {h.producer_id} inside its open transaction",
                ErrorCode.INVALID_TXN_STATE,
            )
        if h.producer_epoch > state.epoch or not state.batches:
            if h.base_sequence != 0:
                raise KafkaError(
                    f"epoch {h.producer_epoch} must start at sequence 0, got {h.base_sequence}",
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                )
            return None
        for b in state.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last:
                return b.first_offset
        if state.batches and h.base_sequence != _next_seq(state.batches[-1].last_seq):
            raise KafkaError(
                f"sequence {h.base_sequence} does not follow {state.batches[-1].last_seq}",
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            )
        return None

    def update(self, h: BatchHeader, base_offset: int, now_ms: int | None = None) -> None:
        """Record an appended batch (header fields as sent, offsets as assigned)."""
        state = self.producers.get(h.producer_id)
        if state is None:
            state = self.producers[h.producer_id] = _Producer(h.producer_epoch)
        elif h.producer_epoch > state.epoch:
            state.epoch = h.producer_epoch
            state.batches.clear()
        if h.is_transactional and state.txn_first_offset < 0:
            state.txn_first_offset = base_offset
            self.ongoing[h.producer_id] = base_offset
        state.batches.append(
            _Batch(
                h.base_sequence,
                _last_seq(h.base_sequence, h.last_offset_delta),
                base_offset,
                base_offset + h.last_offset_delta,
            )
        )
        state.last_timestamp = _now_ms() if now_ms is None else now_ms

    def check_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """INVALID_PRODUCER_EPOCH if ``producer_epoch`` is older than the producer's (a fenced producer)."""
        state = self.producers.get(producer_id)
        if state is not None and producer_epoch < state.epoch:
            raise KafkaError(
                f"producer epoch {producer_epoch} older than {state.epoch}", ErrorCode.INVALID_PRODUCER_EPOCH
            )

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Raise KafkaError if a COMMIT/ABORT marker of this producer must be refused (module docstring)."""
        self.check_epoch(producer_id, producer_epoch)
        state = self.producers.get(producer_id)
        if state is None:
            return
        if coordinator_epoch < state.coordinator_epoch:
            raise KafkaError(
                f"coordinator epoch {coordinator_epoch} older than {state.coordinator_epoch}",
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
            )

    def complete(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        marker_offset: int,
        now_ms: int | None = None,
    ) -> int:
        """Record a marker appended at ``marker_offset``; returns the first offset of the transaction it
        closed (-1 if the producer had none open)."""
        state = self.producers.get(producer_id)
        if state is None:
            state = self.producers[producer_id] = _Producer(producer_epoch)
        elif producer_epoch > state.epoch:
            state.epoch = producer_epoch
            state.batches.clear()
        state.coordinator_epoch = max(state.coordinator_epoch, coordinator_epoch)
        state.last_timestamp = _now_ms() if now_ms is None else now_ms
        first = state.txn_first_offset
        if first >= 0:
            state.txn_first_offset = -1
            self.ongoing.pop(producer_id, None)
            self.unreplicated.append((first, marker_offset))
        return first

    def rebuild(
        self,
        headers: Iterable[BatchHeader],
        now_ms: int | None = None,
        coordinator_epoch: Callable[[BatchHeader], int] | None = None,
    ) -> None:
        """Replay batch headers read from the log (an idle producer's expiry clock starts now);
        ``coordinator_epoch`` reads a marker's coordinator epoch (-1 for every marker without it)."""
        now = _now_ms() if now_ms is None else now_ms
        for h in headers:
            if h.producer_id < 0:
                continue
            if h.is_control:
                epoch = coordinator_epoch(h) if coordinator_epoch is not None else -1
                self.complete(h.producer_id, h.producer_epoch, epoch, h.base_offset, now)
            else:
                self.update(h, h.base_offset, now)

    def last_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last data batch (the cleaner keeps those batches), for
        every producer still active; -1 for one with no data batch left (only markers)."""
        return {pid: p.batches[-1].last_offset if p.batches else -1 for pid, p in self.producers.items()}

    def describe(self) -> list[tuple[int, int, int, int, int, int]]:
        """DescribeProducers: ``(producer id, epoch, last sequence (-1: none), last append ms,
        coordinator epoch, first offset of the open transaction)`` per producer."""
        return [
            (
                pid,
                p.epoch,
                p.batches[-1].last_seq if p.batches else -1,
                p.last_timestamp,
                p.coordinator_epoch,
                p.txn_first_offset,
            )
            for pid, p in sorted(self.producers.items())
        ]

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` or more with no open transaction; returns how many."""
        doomed = [
            pid
            for pid, p in self.producers.items()
            if now_ms - p.last_timestamp >= expiration_ms and p.txn_first_offset < 0
        ]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)

    # -- snapshots -----------------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        """The state in the snapshot file format (module docstring)."""
        entries = bytearray()
        count = 0
        for pid, p in self.producers.items():
            txn = p.coordinator_epoch, p.txn_first_offset
            if not p.batches:
                entries += _SNAPSHOT_ENTRY.pack(pid, p.epoch, -1, -1, 0, p.last_timestamp, *txn)
                count += 1
            for b in p.batches:
                delta = b.last_offset - b.first_offset
                entries += _SNAPSHOT_ENTRY.pack(
                    pid, p.epoch, b.last_seq, b.last_offset, delta, p.last_timestamp, *txn
                )
                count += 1
        body = struct.pack(">i", count) + entries
        return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> PartitionProducers:
        """Parse a snapshot; `CorruptSnapshotError` if it is not one."""
        if len(data) < _SNAPSHOT_HEADER.size:
            raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is too short")
        version, crc, count = _SNAPSHOT_HEADER.unpack_from(data)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"unknown snapshot version {version}")
        if crc32c(memoryview(data)[6:]) != crc:
            raise CorruptSnapshotError("snapshot CRC mismatch")
        if count < 0 or len(data) != _SNAPSHOT_HEADER.size + count * _SNAPSHOT_ENTRY.size:
            raise CorruptSnapshotError(f"snapshot says {count} entries but holds {len(data)} bytes")
        state = cls()
        for pid, epoch, last_seq, last_offset, delta, ts, coord, first in _SNAPSHOT_ENTRY.iter_unpack(
            memoryview(data)[_SNAPSHOT_HEADER.size :]
        ):
            p = state.producers.get(pid)
            if p is None or epoch > p.epoch:
                p = state.producers[pid] = _Producer(epoch)
            p.last_timestamp = max(p.last_timestamp, ts)
            p.coordinator_epoch = coord
            p.txn_first_offset = first
            if first >= 0:
                state.ongoing[pid] = first
            else:
                state.ongoing.pop(pid, None)
            if last_offset >= 0:
                first_seq = last_seq - delta
                if first_seq < 0:
                    first_seq += INT32_MAX + 1
                p.batches.append(_Batch(first_seq, last_seq, last_offset - delta, last_offset))
        return state


def snapshot_offsets(fs: FileSystem, directory: str) -> list[int]:
    """Offsets of the ``<offset>.snapshot`` files in a partition directory, ascending."""
    out = []
    for name in fs.listdir(directory):
        parsed = naming.parse_segment_filename(name)
        if parsed is not None and parsed[1] == naming.SNAPSHOT_SUFFIX:
            out.append(parsed[0])
    return sorted(out)


def write_snapshot(
    fs: FileSystem, directory: str, offset: int, data: bytes, keep_above: int | None = None
) -> None:
    """Atomically write ``<offset>.snapshot`` and delete all but the newest `SNAPSHOTS_KEPT` (any thread).

    ``keep_above``: snapshots at offsets above it stay too. A tiered log passes its highest remote
    offset + 1: each segment not yet in the object store keeps the snapshot at its end, which is
    copied with it (Kafka keeps one snapshot per segment for this).
    """
    fs.atomic_write(naming.snapshot_file(directory, offset), data)
    for old in snapshot_offsets(fs, directory)[:-SNAPSHOTS_KEPT]:
        if keep_above is None or old <= keep_above:
            fs.remove_if_exists(naming.snapshot_file(directory, old))


def load_producer_state(
    plog: PartitionLog, now_ms: int | None = None, expiration_ms: int | None = None
) -> tuple[PartitionProducers, int]:
    """The producer state of ``plog`` from its newest usable snapshot plus the log after it.

    Returns the state and the offset of the snapshot used (-1 if none). Expired
    producers are dropped; bad and too-new snapshots are deleted.
    """
    fs, d = plog.fs, plog.directory
    now = _now_ms() if now_ms is None else now_ms
    leo = plog.log_end_offset
    state, used = PartitionProducers(), -1
    for offset in reversed(snapshot_offsets(fs, d)):
        path = naming.snapshot_file(d, offset)
        if offset > leo:
            log.info("%s: deleting producer snapshot %d above the log end offset %d", d, offset, leo)
            fs.remove_if_exists(path)
            continue
        try:
            state, used = PartitionProducers.from_snapshot(fs.read_bytes(path)), offset
            break
        except (CorruptSnapshotError, OSError) as exc:
            log.warning("%s: deleting unusable producer snapshot %d: %s", d, offset, exc)
            fs.remove_if_exists(path)
    start = max(used, plog.log_start_offset)
    if start < leo:
        state.rebuild(plog.iter_batch_headers(start_offset=start), now, partial(_marker_epoch, plog))
    if expiration_ms is not None:
        state.expire(now, expiration_ms)
    return state, used


def _marker_epoch(plog: PartitionLog, h: BatchHeader) -> int:
    """The coordinator epoch of the marker ``h`` of ``plog`` (a follower or a restart keeps it, so a
    marker from an older coordinator is still refused); -1 if it cannot be read."""
    try:
        data = plog.read(h.base_offset, h.size, upto_leo=True).data
    except (KafkaError, OSError):
        return -1
    return read_marker(data, dataclasses.replace(h, position=0))[1]


class BlockProducerIds:
    """Producer ids from blocks claimed cluster-wide (``claim`` returns a block's first id; cluster mode)."""

    def __init__(self, claim: Callable[[], int], block_size: int = ID_BLOCK) -> None:
        self._claim = claim
        self._block = block_size
        self._next = 0
        self._limit = 0

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._next = self._claim()
            self._limit = self._next + self._block
        pid = self._next
        self._next += 1
        return pid


class ProducerIdAllocator(BlockProducerIds):
    """Producer ids unique across restarts of one broker: blocks claimed in ``producer-id-block`` (module doc).

    The file holds the first id after the newest claimed block, written
    atomically before any id of the block is handed out. An unreadable file
    raises RuntimeError at construction (the broker refuses to start).
    """

    FILE = "producer-id-block"

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / self.FILE
        try:
            self._claimed_up_to = int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            self._claimed_up_to = 0
        except ValueError:
            raise RuntimeError(f"{self.path} is corrupt; cannot hand out unique producer ids") from None
        super().__init__(self._claim_from_file)

    def _claim_from_file(self) -> int:
        start = self._claimed_up_to
        limit = start + ID_BLOCK
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"{limit}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._claimed_up_to = limit
        return start
