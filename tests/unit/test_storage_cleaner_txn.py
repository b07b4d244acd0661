"""The cleaner and transactions: aborted data dropped (and never used as a newer value), markers
kept while their transaction has data and removed after delete.retention.ms once it has none,
committed transactional batches compacted with their flags, index entries carried into the
cleaned segments, nothing cleaned at or past the first unstable offset."""

from __future__ import annotations

import dataclasses
import os
import random
from dataclasses import dataclass

from protocol.control_records import ABORT, marker_type
from protocol.records import DELETE_HORIZON_BIT, BatchHeader, decode_batch, validate_batches
from storage import naming
from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from tests.unit.txn_support import T0, TxnWriter, all_entries

COMPACT = LogConfig(
    segment_bytes=900,
    index_interval_bytes=200,
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=10_000,
)
TP = ("t", 0)


@dataclass(frozen=True)
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None


def _open(tmp_path, **kw) -> PartitionLog:  # type: ignore[no-untyped-def]
    return PartitionLog(str(tmp_path / "t-0"), COMPACT, now_ms=0, **kw)


def _batches(log: PartitionLog) -> list[tuple[BatchHeader, bytes]]:
    out = []
    offset = log.log_start_offset
    while offset < log.high_watermark:
        data = bytes(log.read(offset, 1 << 20).data)
        if not data:
            break
        for h in validate_batches(data):
            out.append((h, data[h.position : h.end]))
            offset = h.last_offset + 1
    return out


def _read_committed(log: PartitionLog) -> list[Rec]:
    """What a read_committed consumer sees (Kafka's client rule): a producer's transactional batches
    are skipped from the first offset of one of its aborted transactions to its ABORT marker."""
    aborted = sorted(
        log.aborted_transactions(log.log_start_offset, log.high_watermark), key=lambda t: t.first_offset
    )
    skipping: set[int] = set()
    out = []
    for h, data in _batches(log):
        while aborted and aborted[0].first_offset <= h.last_offset:
            skipping.add(aborted.pop(0).producer_id)
        if h.is_control:
            if marker_type(data, dataclasses.replace(h, position=0)) == ABORT:
                skipping.discard(h.producer_id)
            continue
        if h.is_transactional and h.producer_id in skipping:
            continue
        _, records = decode_batch(data)
        out.extend(Rec(h.offset_of(r), r.key, r.value) for r in records)
    return out


def _read_uncommitted(log: PartitionLog) -> list[Rec]:
    out = []
    for h, data in _batches(log):
        if not h.is_control:
            _, records = decode_batch(data)
            out.extend(Rec(h.offset_of(r), r.key, r.value) for r in records)
    return out


def _mixed_workload(w: TxnWriter, rng: random.Random, steps: int) -> None:
    for i in range(steps):
        pid = rng.randint(1, 3)
        roll = rng.random()
        keys = [b"k%d" % rng.randint(0, 6) for _ in range(rng.randint(1, 3))]
        if roll < 0.4:
            w.data(pid, keys, value=b"t%d" % i)
        elif roll < 0.6 and pid in w.open:
            w.end(pid, commit=rng.random() < 0.5)
        else:
            w.plain(keys, value=b"p%d" % i)
    for pid in list(w.open):
        w.end(pid, commit=False)


def _latest_committed(before: list[Rec], aborted: set[int], below: int) -> list[Rec]:
    """The expected read_committed view after compaction below ``below``."""
    committed = [r for r in before if r.offset not in aborted]
    latest = {r.key: r.offset for r in committed if r.offset < below}
    return [r for r in committed if r.offset >= below or latest[r.key] == r.offset]


def test_aborted_data_dropped_markers_kept_entries_carried(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _mixed_workload(w, random.Random(1), 160)
    log.roll(now_ms=0)
    w.plain([b"tail"])
    before = _read_uncommitted(log)
    expected = _latest_committed(before, w.aborted_offsets, log.active_segment.base_offset)
    markers_before = [h.base_offset for h, _ in _batches(log) if h.is_control]
    assert _read_committed(log) == [r for r in before if r.offset not in w.aborted_offsets]
    assert len(w.entries) >= 5 and len(log.segments) > 4

    cleaner = LogCleaner(log.fs, str(tmp_path))
    while cleaner.clean_once([(TP, log)], T0) is not None:
        pass
    after = _read_uncommitted(log)
    assert not {r.offset for r in after} & w.aborted_offsets  # aborted records are gone
    assert after == expected  # and never superseded a committed record of their key
    assert _read_committed(log) == expected
    batches = _batches(log)
    assert [h.base_offset for h, _ in batches if h.is_control] == markers_before
    for h, _ in batches:
        if h.producer_id in (1, 2, 3) and not h.is_control:
            assert h.is_transactional and h.producer_epoch == 0
    assert all_entries(log) == w.entries
    for seg in log.segments:
        assert all(seg.base_offset <= t.last_offset < seg.next_offset for t in seg.txn_index.entries)
    log.close()
    reopened = _open(tmp_path)
    assert all_entries(reopened) == w.entries
    assert _read_committed(reopened) == expected
    reopened.abandon()
    # Rebuilt from the log, the indexes only know the aborted data that is left (none here):
    # read_committed consumers see the same records.
    rebuilt = _open(tmp_path, recover=True, recovery_point=0)
    assert {(t.producer_id, t.last_offset) for t in all_entries(rebuilt)} <= {
        (t.producer_id, t.last_offset) for t in w.entries
    }
    assert _read_committed(rebuilt) == expected
    rebuilt.close()


def test_last_batch_of_an_active_producer_stays_as_an_empty_batch(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    w.plain([b"a"], value=b"committed")
    last = w.data(5, [b"a", b"b"], value=b"aborted")
    w.end(5, commit=False)
    log.roll(now_ms=0)
    w.plain([b"z"])
    cleaner = LogCleaner(log.fs, str(tmp_path))
    cleaner.clean_once([(TP, log)], T0, producer_last_offsets=lambda tp: {5: last + 1})
    kept = [h for h, _ in _batches(log) if h.base_offset == last]
    assert len(kept) == 1 and kept[0].record_count == 0 and kept[0].last_offset == last + 1
    assert kept[0].is_transactional and kept[0].producer_id == 5
    assert [(r.key, r.value) for r in _read_committed(log)] == [(b"a", b"committed"), (b"z", b"p")]
    log.close()


def test_never_cleans_at_or_past_the_first_unstable_offset(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    for i in range(40):
        w.plain([b"k%d" % (i % 3)], value=b"old-%d" % i)
    unstable = w.data(9, [b"k0"], value=b"undecided")
    for i in range(40):
        w.plain([b"k%d" % (i % 3)], value=b"new-%d" % i)
    log.roll(now_ms=0)
    w.plain([b"tail"])
    log.first_unstable_offset = unstable
    holder = next(s for s in log.segments if s.base_offset <= unstable < s.next_offset)
    assert holder is not log.segments[0]
    untouched = {
        s.base_offset: open_bytes(naming.log_file(log.directory, s.base_offset))
        for s in log.segments
        if s.base_offset >= holder.base_offset
    }
    cleaner = LogCleaner(log.fs, str(tmp_path))
    assert cleaner.cleanable_range(TP, log, T0)[1] == holder.base_offset
    while cleaner.clean_once([(TP, log)], T0) is not None:
        pass
    assert cleaner.offsets[TP] <= holder.base_offset
    for base, data in untouched.items():
        assert open_bytes(naming.log_file(log.directory, base)) == data
    records = _read_uncommitted(log)
    assert (unstable, b"k0", b"undecided-0") in [(r.offset, r.key, r.value) for r in records]
    below = [r for r in records if r.offset < holder.base_offset]
    assert len({r.key for r in below}) == len(below)  # compacted below the holder segment
    # Once the transaction is decided the rest can be cleaned.
    w.end(9, commit=True)
    log.first_unstable_offset = None
    log.roll(now_ms=0)
    w.plain([b"tail2"])
    while cleaner.clean_once([(TP, log)], T0) is not None:
        pass
    values = {r.key: r.value for r in _read_committed(log)}
    assert values[b"k0"] == b"new-39" and values[b"k1"] == b"new-37"
    assert b"undecided-0" not in [r.value for r in _read_uncommitted(log)]  # superseded by new-*
    log.close()


def test_crash_after_the_swap_commit_keeps_the_entries(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    _mixed_workload(w, random.Random(4), 120)
    log.roll(now_ms=0)
    w.plain([b"tail"])
    expected = _latest_committed(_read_uncommitted(log), w.aborted_offsets, log.active_segment.base_offset)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    job = cleaner.grab_filthiest([(TP, log)], T0)
    assert job is not None
    result = cleaner.clean(job)
    assert result.end_offset == log.active_segment.base_offset
    assert cleaner.commit(result)
    swaps = [n for n in os.listdir(log.directory) if n.endswith(naming.TXN_INDEX_SUFFIX + naming.SWAP_SUFFIX)]
    assert swaps
    log.abandon()
    reopened = _open(tmp_path, recover=True, recovery_point=log.active_segment.base_offset)
    assert all_entries(reopened) == w.entries  # the `.txnindex.swap` files were put in place
    assert _read_committed(reopened) == expected
    reopened.close()


def _markers(log: PartitionLog) -> dict[int, int | None]:
    """Offset of each marker -> its delete horizon (None: none set)."""
    return {
        h.base_offset: (h.base_timestamp if h.attributes & DELETE_HORIZON_BIT else None)
        for h, _ in _batches(log)
        if h.is_control
    }


def test_markers_go_after_delete_retention_once_their_transaction_has_no_data(tmp_path) -> None:
    log = _open(tmp_path)
    w = TxnWriter(log)
    w.data(1, [b"a"], value=b"superseded")
    gone_commit = w.end(1, commit=True)
    w.data(2, [b"b"], value=b"aborted")
    gone_abort = w.end(2, commit=False)
    w.data(3, [b"c"], value=b"kept")
    kept_commit = w.end(3, commit=True)
    w.data(4, [b"d"], value=b"aborted too")
    active_abort = w.end(4, commit=False)  # producer 4 stays active with no data batch left
    w.plain([b"a"], value=b"newer")
    log.roll(now_ms=0)
    w.plain([b"tail"])
    expected = [(b"c", b"kept-0"), (b"a", b"newer"), (b"tail", b"p")]
    active = {4: -1}
    cleaner = LogCleaner(log.fs, str(tmp_path))
    retention = COMPACT.delete_retention_ms

    # Pass 1: the data of both aborted transactions and the superseded committed record go; every
    # marker saw data of its transaction in this pass, so all stay, with no horizon.
    assert cleaner.clean_once([(TP, log)], T0, producer_last_offsets=lambda tp: active) is not None
    assert _markers(log) == {o: None for o in (gone_commit, gone_abort, kept_commit, active_abort)}
    assert [(t.producer_id, t.last_offset) for t in all_entries(log)] == [(2, gone_abort), (4, active_abort)]
    assert [(r.key, r.value) for r in _read_committed(log)] == expected

    # Pass 2 (more dirty data): markers found alone get a horizon; the active producer's stays as is.
    w.plain([b"tail"], value=b"again")
    log.roll(now_ms=0)
    w.plain([b"tail2"])
    expected = [(b"c", b"kept-0"), (b"a", b"newer"), (b"tail", b"again"), (b"tail2", b"p")]
    assert cleaner.clean_once([(TP, log)], T0 + 1, producer_last_offsets=lambda tp: active) is not None
    horizon = T0 + 1 + retention
    assert _markers(log) == {gone_commit: horizon, gone_abort: horizon, kept_commit: None, active_abort: None}
    assert [(t.producer_id, t.last_offset) for t in all_entries(log)] == []
    assert [(r.key, r.value) for r in _read_committed(log)] == expected
    assert log.latest_delete_horizon == horizon

    # Before the horizon nothing more happens; after it, a pass (chosen for the passed horizon alone)
    # removes the two markers.
    assert cleaner.clean_once([(TP, log)], horizon - 1, producer_last_offsets=lambda tp: active) is None
    assert cleaner.clean_once([(TP, log)], horizon, producer_last_offsets=lambda tp: active) is not None
    assert _markers(log) == {kept_commit: None, active_abort: None}
    assert [(r.key, r.value) for r in _read_committed(log)] == expected
    log.close()

    # Rebuilt from the log alone, no transaction is left open and the view is the same.
    rebuilt = _open(tmp_path, recover=True, recovery_point=0)
    assert [(r.key, r.value) for r in _read_committed(rebuilt)] == expected
    rebuilt.close()


def open_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
