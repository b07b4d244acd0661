"""Writing transactions to a `PartitionLog` the way the broker does (no tests here).

`TxnWriter` appends transactional data batches and COMMIT/ABORT markers and, for an
ABORT that closed a transaction with data, calls `append_aborted_txn` with Kafka's
last stable offset (first offset of the oldest other open transaction, else the
marker offset + 1). It keeps its own model of the entries and of which offsets
hold aborted records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.control_records import build_marker_batch
from protocol.records import Record, build_batch, validate_batches
from storage.partition_log import PartitionLog
from storage.txn_index import AbortedTxn

T0 = 1_700_000_000_000


@dataclass
class TxnWriter:
    log: PartitionLog
    now_ms: int = 0
    open: dict[int, int] = field(default_factory=dict)  # producer id -> first offset of its transaction
    sequences: dict[int, int] = field(default_factory=dict)
    entries: list[AbortedTxn] = field(default_factory=list)
    aborted_offsets: set[int] = field(default_factory=set)
    pending: dict[int, list[int]] = field(default_factory=dict)  # offsets of each open transaction
    record_index: bool = True  # call append_aborted_txn (False: as if the index write was lost)

    def _append(self, batch: bytes | bytearray) -> int:
        buf = bytearray(batch)
        headers = validate_batches(buf)
        result = self.log.append(buf, headers, leader_epoch=0, now_ms=self.now_ms)
        self.log.advance_high_watermark(result.last_offset + 1)
        return result.base_offset

    def data(
        self, pid: int, keys: list[bytes], *, value: bytes = b"v", transactional: bool = True, ts: int = T0
    ) -> int:
        """Append one batch of ``pid`` with a record per key; returns its base offset."""
        seq = self.sequences.get(pid, 0)
        records = [Record(i, i, k, value + b"-%d" % i) for i, k in enumerate(keys)]
        base = self._append(
            build_batch(
                records,
                base_timestamp=ts,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=seq,
                is_transactional=transactional,
            )
        )
        self.sequences[pid] = seq + len(keys)
        if transactional:
            self.open.setdefault(pid, base)
            self.pending.setdefault(pid, []).extend(range(base, base + len(keys)))
        return base

    def plain(self, keys: list[bytes], value: bytes = b"p", ts: int = T0) -> int:
        """A non-transactional, non-idempotent batch."""
        return self._append(
            build_batch([Record(i, i, k, value) for i, k in enumerate(keys)], base_timestamp=ts)
        )

    def end(self, pid: int, commit: bool) -> int:
        """Append ``pid``'s marker; returns its offset."""
        offset = self._append(build_marker_batch(pid, 0, commit, 3, T0))
        first = self.open.pop(pid, None)
        offsets = self.pending.pop(pid, [])
        if not commit and first is not None:
            lso = min(self.open.values(), default=offset + 1)
            txn = AbortedTxn(pid, first, offset, lso)
            self.entries.append(txn)
            self.aborted_offsets.update(offsets)
            if self.record_index:
                self.log.append_aborted_txn(txn)
        return offset


def all_entries(log: PartitionLog) -> list[AbortedTxn]:
    """Every transaction-index entry of ``log``, segment by segment."""
    return [t for seg in log.segments for t in seg.txn_index.entries]
