"""The log cleaner: latest value per key, offsets and batch metadata kept, tombstones, bounded memory,
segment grouping, log selection, the swap protocol and its crash recovery."""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    DELETE_HORIZON_BIT,
    BatchHeader,
    Record,
    build_batch,
    decode_batch,
    validate_batches,
)
from storage import naming
from storage.cleaner import ENTRY_COST, LogCleaner, check_keys
from storage.config import LogConfig
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, record_set

T0 = 1_700_000_000_000
COMPACT = LogConfig(
    segment_bytes=1500,
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
    timestamp: int


def _open(tmp_path, config: LogConfig = COMPACT, **kw) -> PartitionLog:
    return PartitionLog(str(tmp_path / "t-0"), config, now_ms=0, **kw)


def _records(log: PartitionLog) -> tuple[list[Rec], list[BatchHeader]]:
    """Everything readable, record by record, plus the batch headers, by reading as a consumer does."""
    out, headers = [], []
    offset = log.log_start_offset
    while offset < log.high_watermark:
        data = log.read(offset, 1 << 20).data
        if not data:
            break
        for h in validate_batches(data):
            headers.append(h)
            hh, recs = decode_batch(data, h.position)
            out.extend(Rec(hh.offset_of(r), r.key, r.value, hh.timestamp_of(r)) for r in recs)
            offset = h.last_offset + 1
    return out, headers


def _write(log: PartitionLog, rng: random.Random, n: int, keys: int, tombstones: float = 0.1) -> list[Rec]:
    """``n`` keyed records in batches of 1-4, some idempotent, some compressed; returns the model."""
    model = []
    i = 0
    seqs: dict[int, int] = {}
    while i < n:
        count = min(rng.randint(1, 4), n - i)
        recs = []
        for d in range(count):
            key = b"key-%d" % rng.randrange(keys)
            value = None if rng.random() < tombstones else b"v%d-" % (i + d) + os.urandom(rng.randint(0, 40))
            recs.append(Record(d, d * 3, key, value))
        pid = rng.choice([-1, 7, 8])
        seq = seqs.get(pid, 0) if pid >= 0 else -1
        batch = build_batch(
            recs,
            base_timestamp=T0 + i,
            codec=rng.choice([0, 0, 1, 4]),
            producer_id=pid,
            producer_epoch=2 if pid >= 0 else -1,
            base_sequence=seq,
        )
        if pid >= 0:
            seqs[pid] = seq + count
        result = append(log, batch, now_ms=0)
        model.extend(
            Rec(result.base_offset + r.offset_delta, r.key, r.value, T0 + i + r.timestamp_delta) for r in recs
        )
        i += count
    return model


def _clean_all(cleaner: LogCleaner, log: PartitionLog, now: int, **kw) -> int:
    passes = 0
    while cleaner.clean_once([(TP, log)], now, **kw) is not None:
        passes += 1
        assert passes < 100
    return passes


def _check_compacted(before: list[Rec], after: list[Rec], cleaned_below: int) -> None:
    """Below ``cleaned_below``: exactly the latest record of each key there (the active segment is
    not part of the offset map); from there on: untouched."""
    latest: dict[bytes | None, int] = {}
    for r in before:
        if r.offset < cleaned_below:
            latest[r.key] = r.offset
    expected = [r for r in before if r.offset >= cleaned_below or latest[r.key] == r.offset]
    assert after == expected


@pytest.mark.parametrize("seed", range(4))
def test_latest_value_per_key_offsets_and_metadata_kept(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    log = _open(tmp_path)
    before = _write(log, rng, 300, keys=25)
    _, old_headers = _records(log)
    active_base = log.active_segment.base_offset
    cleaner = LogCleaner(log.fs, str(tmp_path))
    assert _clean_all(cleaner, log, T0) >= 1
    assert cleaner.offsets[TP] == active_base
    after, headers = _records(log)
    _check_compacted(before, after, active_base)
    assert log.size < sum(h.size for h in old_headers)
    # Every surviving batch keeps base offset, last offset (hence last sequence) and producer fields.
    by_base = {h.base_offset: h for h in old_headers}
    for h in headers:
        o = by_base[h.base_offset]
        assert (h.last_offset, h.producer_id, h.producer_epoch, h.base_sequence, h.codec) == (
            o.last_offset,
            o.producer_id,
            o.producer_epoch,
            o.base_sequence,
            o.codec,
        )
    for seg in log.segments[:-1]:
        assert seg.size <= COMPACT.segment_bytes
        seg.offset_index.sanity_check(seg.size)
    # Offsets in the gaps read from the next surviving batch; timestamps lookups still work.
    for offset in range(0, log.log_end_offset):
        (h, *_) = validate_batches(log.read(offset, 1).data)
        assert h.last_offset >= offset
    for r in after[::17]:
        found = log.offset_for_timestamp(r.timestamp)
        assert found is not None and found[0] <= r.offset
    # Clean and crash reopen see the same records.
    log.close()
    reopened = _open(tmp_path)
    assert _records(reopened)[0] == after
    reopened.abandon()
    crashed = _open(tmp_path, recover=True, recovery_point=0)
    assert _records(crashed)[0] == after
    crashed.close()


def test_bounded_offset_map_cleans_in_passes(tmp_path) -> None:
    rng = random.Random(11)
    log = _open(tmp_path)
    before = _write(log, rng, 400, keys=60, tombstones=0)
    active_base = log.active_segment.base_offset
    cleaner = LogCleaner(log.fs, str(tmp_path), dedupe_buffer_bytes=ENTRY_COST * 20)
    assert cleaner.map_capacity == 20
    ends = []
    while (result := cleaner.clean_once([(TP, log)], T0)) is not None:
        assert result.stats.map_entries <= 20 + 4  # one batch may overshoot by its records
        ends.append(result.end_offset)
    assert len(ends) > 3 and ends == sorted(ends) and ends[-1] == active_base
    _check_compacted(before, _records(log)[0], active_base)
    log.close()


def test_tombstones_live_delete_retention_ms_after_the_cleaning_that_reached_them(tmp_path) -> None:
    log = _open(tmp_path)
    for i in range(30):
        append(
            log, build_batch([Record(0, 0, b"k%d" % (i % 5), b"v%d" % i)], base_timestamp=T0 + i), now_ms=0
        )
    for k in (1, 3):
        append(log, build_batch([Record(0, 7, b"k%d" % k, None)], base_timestamp=T0 + 100), now_ms=0)
    log.roll(now_ms=0)
    append(log, build_batch([Record(0, 0, b"other", b"x")], base_timestamp=T0 + 200), now_ms=0)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    now = T0 + 1_000
    _clean_all(cleaner, log, now)
    recs, headers = _records(log)
    assert [(r.key, r.value) for r in recs] == [
        (b"k0", b"v25"),
        (b"k2", b"v27"),
        (b"k4", b"v29"),
        (b"k1", None),
        (b"k3", None),
        (b"other", b"x"),
    ]
    assert [r.timestamp for r in recs if r.value is None] == [T0 + 107, T0 + 107]  # timestamps unchanged
    horizon = now + COMPACT.delete_retention_ms
    marked = [h for h in headers if h.attributes & DELETE_HORIZON_BIT]
    assert marked and all(h.base_timestamp == horizon for h in marked)
    assert log.latest_delete_horizon == horizon
    # Before the horizon nothing is due; at it, the expired-tombstone rule picks the log on its own.
    assert cleaner.clean_once([(TP, log)], horizon - 1) is None
    assert cleaner.clean_once([(TP, log)], horizon) is not None
    recs, _ = _records(log)
    assert [(r.key, r.value) for r in recs] == [
        (b"k0", b"v25"),
        (b"k2", b"v27"),
        (b"k4", b"v29"),
        (b"other", b"x"),
    ]
    assert log.latest_delete_horizon == -1
    assert cleaner.clean_once([(TP, log)], horizon + 10**9) is None
    log.close()


def test_emptied_last_batch_of_an_active_producer_is_kept_empty(tmp_path) -> None:
    log = _open(tmp_path)
    idem = build_batch(
        [Record(0, 0, b"a", b"1"), Record(1, 0, b"b", b"2")],
        base_timestamp=T0,
        producer_id=5,
        producer_epoch=1,
        base_sequence=0,
    )
    r = append(log, idem, now_ms=0)
    append(
        log, build_batch([Record(0, 0, b"a", b"3"), Record(1, 0, b"b", b"4")], base_timestamp=T0), now_ms=0
    )
    log.roll(now_ms=0)
    append(log, build_batch([Record(0, 0, b"z", b"z")], base_timestamp=T0), now_ms=0)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    cleaner.clean_once([(TP, log)], T0, producer_last_offsets=lambda tp: {5: r.last_offset})
    recs, headers = _records(log)
    assert [(r.offset, r.value) for r in recs] == [(2, b"3"), (3, b"4"), (4, b"z")]
    empty = headers[0]
    assert (empty.base_offset, empty.last_offset, empty.record_count) == (0, 1, 0)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (5, 1, 0)
    log.close()


def test_rebuilt_batches_keep_codec_timestamp_type_and_drop_keyless_records(tmp_path) -> None:
    config = LogConfig(
        segment_bytes=1500,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        message_timestamp_type="LogAppendTime",
    )
    log = _open(tmp_path, config)
    recs = [Record(0, 0, b"a", b"old"), Record(1, 1, None, b"keyless"), Record(2, 2, b"b", b"keep")]
    append(log, build_batch(recs, base_timestamp=T0, codec=3), now_ms=T0 + 50)
    append(log, build_batch([Record(0, 0, b"a", b"new")], base_timestamp=T0), now_ms=T0 + 60)
    log.roll(now_ms=0)
    append(log, build_batch([Record(0, 0, b"z", b"z")], base_timestamp=T0), now_ms=T0 + 70)
    LogCleaner(log.fs, str(tmp_path)).clean_once([(TP, log)], T0)
    got, headers = _records(log)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in got[:2]] == [
        (2, b"b", b"keep", T0 + 50),
        (3, b"a", b"new", T0 + 60),
    ]
    h = headers[0]
    assert (h.codec, h.timestamp_type, h.max_timestamp, h.base_offset, h.last_offset) == (3, 1, T0 + 50, 0, 2)
    log.close()


def test_check_keys_rejects_keyless_records() -> None:
    good = build_batch([Record(0, 0, b"k", b"v")], codec=1)
    bad = build_batch([Record(0, 0, b"k", b"v"), Record(1, 0, None, b"v")], codec=4)
    check_keys(*record_set(good))
    with pytest.raises(KafkaError) as info:
        check_keys(*record_set(good, bad))
    assert info.value.code == ErrorCode.INVALID_RECORD


def test_selection_by_dirty_ratio_and_policy(tmp_path) -> None:
    logs = {}
    for name, policy, rewrites in [
        ("a", "compact", 2),
        ("b", "compact", 8),
        ("c", "delete", 8),
        ("d", "compact,delete", 4),
    ]:
        config = LogConfig(segment_bytes=800, cleanup_policy=policy, min_cleanable_dirty_ratio=0.3)
        log = PartitionLog(str(tmp_path / f"{name}-0"), config, now_ms=0)
        for i in range(40 * rewrites):
            append(
                log, build_batch([Record(0, 0, b"k%d" % (i % 40), b"v" * 30)], base_timestamp=T0), now_ms=0
            )
        logs[(name, 0)] = log
    cleaner = LogCleaner(logs[("a", 0)].fs, str(tmp_path))
    ratios = {tp: cleaner.cleanable_range(tp, log, T0)[2] for tp, log in logs.items()}
    assert all(r > 0.9 for r in ratios.values())  # nothing cleaned yet: everything sealed is dirty
    order = []
    while (result := cleaner.clean_once(list(logs.items()), T0)) is not None:
        order.append(result.job.tp[0])
    assert "c" not in order and set(order) == {"a", "b", "d"}
    for tp, log in logs.items():
        if tp[0] != "c":
            first_dirty, first_uncleanable, ratio = cleaner.cleanable_range(tp, log, T0)
            assert first_dirty == first_uncleanable == log.active_segment.base_offset and ratio == 0.0
    for log in logs.values():
        log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path) -> None:
    config = LogConfig(
        segment_bytes=800,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        min_compaction_lag_ms=60_000,
    )
    log = _open(tmp_path, config)
    for i in range(60):
        ts = T0 if i < 30 else T0 + 100_000
        append(log, build_batch([Record(0, 0, b"k%d" % (i % 3), b"v" * 30)], base_timestamp=ts), now_ms=0)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    _, first_uncleanable, _ = cleaner.cleanable_range(TP, log, T0 + 120_000)
    young = next(s for s in log.segments if s.largest_timestamp >= T0 + 100_000)
    assert first_uncleanable == young.base_offset
    cleaner.clean_once([(TP, log)], T0 + 120_000)
    assert cleaner.offsets[TP] <= young.base_offset
    log.close()


# -- the swap and crashes ----------------------------------------------------------------------


def _prepared(tmp_path):  # type: ignore[no-untyped-def]
    rng = random.Random(5)
    log = _open(tmp_path)
    before = _write(log, rng, 200, keys=15, tombstones=0)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    job = cleaner.grab_filthiest([(TP, log)], T0)
    assert job is not None and log.cleaning is job
    result = cleaner.clean(job)
    return log, cleaner, result, before


def _post(before: list[Rec], log_end: int, active_base: int) -> list[Rec]:
    latest = {r.key: r.offset for r in before if r.offset < active_base}
    return [r for r in before if r.offset >= active_base or latest[r.key] == r.offset]


@pytest.mark.parametrize(
    "crash_after", ["clean", "half_commit", "commit", "retire", "half_install", "commit_then_clean_close"]
)
def test_crash_during_swap_loses_nothing(tmp_path, crash_after: str) -> None:
    log, cleaner, result, before = _prepared(tmp_path)
    d = log.directory
    active_base = log.active_segment.base_offset
    expected_post = _post(before, log.log_end_offset, active_base)
    outputs = result.outputs
    if crash_after == "half_commit":  # step 1 cut short: only the highest output renamed (descending order)
        top = max(outputs)
        for suffix in naming.SEGMENT_FILE_SUFFIXES:
            path = naming.segment_file(d, top, suffix)
            if os.path.exists(path + naming.CLEANED_SUFFIX):  # no `.txnindex` without entries
                os.rename(path + naming.CLEANED_SUFFIX, path + naming.SWAP_SUFFIX)
    elif crash_after != "clean":
        assert cleaner.commit(result)
        if crash_after in ("retire", "half_install"):
            cleaner.retire(result)
        if crash_after == "half_install":
            low = min(outputs)
            for suffix in naming.SEGMENT_FILE_SUFFIXES:
                path = naming.segment_file(d, low, suffix)
                if os.path.exists(path + naming.SWAP_SUFFIX):
                    os.rename(path + naming.SWAP_SUFFIX, path)
    if crash_after == "commit_then_clean_close":
        log.close()
    else:
        log.abandon()
    reopened = _open(tmp_path, recover=crash_after != "commit_then_clean_close", recovery_point=0)
    got = _records(reopened)[0]
    if crash_after in ("clean", "half_commit"):
        assert got == before
    else:
        assert got == expected_post
    leftovers = [
        n
        for n in os.listdir(d)
        if n.endswith((naming.CLEANED_SUFFIX, naming.SWAP_SUFFIX, naming.DELETED_SUFFIX))
    ]
    assert leftovers == []
    assert reopened.log_end_offset == before[-1].offset + 1
    reopened.close()


def test_truncation_aborts_the_swap_and_appends_go_on_during_cleaning(tmp_path) -> None:
    rng = random.Random(3)
    log = _open(tmp_path)
    before = _write(log, rng, 200, keys=10, tombstones=0)
    cleaner = LogCleaner(log.fs, str(tmp_path))
    job = cleaner.grab_filthiest([(TP, log)], T0)
    assert job is not None
    # Appends to the active segment while the worker cleans are fine.
    worker = threading.Thread(target=lambda: results.append(cleaner.clean(job)))
    results: list = []
    worker.start()
    more = [
        append(log, build_batch([Record(0, 0, b"key-1", b"late")], base_timestamp=T0), now_ms=0)
        for _ in range(5)
    ]
    worker.join()
    (result,) = results
    assert cleaner.commit(result)
    cleaner.sync_dir(result)
    cleaner.retire(result)
    cleaner.install(result, T0)
    got = _records(log)[0]
    assert [r.offset for r in got[-5:]] == [m.base_offset for m in more]
    # A truncation while a job is in flight aborts it; the swap is refused and nothing changes.
    job = cleaner.grab_filthiest([(TP, log)], T0)
    if job is None:  # nothing dirty enough: force another job
        for _ in range(30):
            append(log, build_batch([Record(0, 0, b"key-2", b"x" * 50)], base_timestamp=T0), now_ms=0)
        job = cleaner.grab_filthiest([(TP, log)], T0)
    assert job is not None
    result = cleaner.clean(job)
    snapshot = _records(log)[0]
    log.truncate_to(log.log_end_offset - 1)
    assert job.aborted.is_set()
    assert not cleaner.commit(result)
    assert log.cleaning is None
    assert _records(log)[0] == snapshot[:-1]
    assert not [
        n for n in os.listdir(log.directory) if n.endswith((naming.CLEANED_SUFFIX, naming.SWAP_SUFFIX))
    ]
    assert before[0].offset == 0
    log.close()


def test_cleaner_checkpoint_through_the_log_manager(tmp_path) -> None:
    d = tmp_path / "data"
    mgr = LogManager(str(d), LogConfig(segment_bytes=1000))
    mgr.create_topic("c", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    log = mgr.get_log("c", 0)
    assert log is not None
    for i in range(80):
        append(log, build_batch([Record(0, 0, b"k%d" % (i % 7), b"v" * 40)], base_timestamp=T0), now_ms=0)
    assert mgr.cleaner.clean_once(mgr.logs(), T0) is not None
    end = mgr.cleaner.offsets[("c", 0)]
    mgr.close()
    assert (d / naming.CLEANER_OFFSET_CHECKPOINT).read_text() == f"0\n1\nc 0 {end}\n"
    again = LogManager(str(d), LogConfig(segment_bytes=1000))
    assert again.cleaner.offsets == {("c", 0): end}
    again.delete_topic("c")
    assert again.cleaner_offsets() == {}
    again.close()
