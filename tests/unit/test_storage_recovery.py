"""Crash recovery over several seeds: torn tails, flipped bits, damaged indexes (TESTING.md "Torn tails").

Each seed builds a multi-segment log of random batches (random sizes, record
counts, codecs and non-monotonic timestamps), "crashes" it (no shutdown work),
damages it, and reopens it without a clean-shutdown marker. Afterwards the log
must end exactly at the last intact batch (for a flipped bit: just before the
damaged batch, later segments dropped), indexes must be rebuilt, and every
offset lookup and every timestamp lookup must agree with a model of what
survived.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, validate_batches
from storage import naming
from storage.config import LogConfig
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append

CONFIG = LogConfig(segment_bytes=6000, index_interval_bytes=500, segment_index_bytes=4096)
SEEDS = range(6)


@dataclass(frozen=True)
class Batch:
    base: int
    last: int
    timestamps: tuple[int, ...]
    segment: int  # base offset of the segment holding it
    position: int  # byte position in that segment
    size: int


def _build(directory: str, rng: random.Random, batches: int = 90) -> tuple[PartitionLog, list[Batch]]:
    log = PartitionLog(directory, CONFIG, now_ms=0)
    ts = 1_000_000
    for _ in range(batches):
        n = rng.randint(1, 6)
        deltas = [rng.randint(-50, 200) for _ in range(n)]
        recs = [
            Record(i, deltas[i], b"k%d" % rng.randint(0, 30), os.urandom(rng.randint(0, 300)))
            for i in range(n)
        ]
        ts += rng.randint(-100, 400)
        append(log, build_batch(recs, base_timestamp=ts, codec=rng.choice([0, 0, 1, 3, 4])), now_ms=0)
    model = []
    for h in log.iter_batch_headers():
        seg = max(s.base_offset for s in log.segments if s.base_offset <= h.base_offset)
        stamps = tuple(h.base_timestamp + d for d in _deltas(log, h.base_offset))
        model.append(Batch(h.base_offset, h.last_offset, stamps, seg, h.position, h.size))
    assert len(log.segments) >= 4
    return log, model


def _deltas(log: PartitionLog, offset: int) -> list[int]:
    from protocol.records import decode_batch

    data = log.read(offset, 1).data
    h, records = decode_batch(data)
    return [r.timestamp_delta for r in records]


def _check(log: PartitionLog, expected: list[Batch]) -> None:
    """Exact end offset; every offset and timestamp lookup against the surviving batches."""
    leo = expected[-1].last + 1 if expected else 0
    assert log.log_end_offset == leo == log.high_watermark
    assert [(h.base_offset, h.last_offset) for h in log.iter_batch_headers()] == [
        (b.base, b.last) for b in expected
    ]
    for b in expected:
        for offset in range(b.base, b.last + 1):
            (h,) = validate_batches(log.read(offset, 1).data)
            assert (h.base_offset, h.last_offset) == (b.base, b.last)
    with pytest.raises(KafkaError) as info:
        log.read(leo + 1, 1)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    stamps = sorted({t for b in expected for t in b.timestamps})
    probes = stamps + [t + 1 for t in stamps[::7]] + [0, stamps[-1] + 1 if stamps else 1]
    for t in probes:
        want = None
        for b in expected:
            hit = next((i for i, ts in enumerate(b.timestamps) if ts >= t), None)
            if hit is not None:
                want = (b.base + hit, b.timestamps[hit])
                break
        assert log.offset_for_timestamp(t) == want, t
    for s in log.segments[:-1]:
        assert s.offset_index.file_size == 8 * len(s.offset_index)  # rebuilt and trimmed
        s.offset_index.sanity_check(s.size)
        s.time_index.sanity_check()


def _reopen(directory: str, recovery_point: int | None) -> PartitionLog:
    return PartitionLog(directory, CONFIG, recover=True, recovery_point=recovery_point, now_ms=0)


def _seg_path(directory: str, base: int, suffix: str = naming.LOG_SUFFIX) -> str:
    return naming.segment_file(directory, base, suffix)


@pytest.mark.parametrize("seed", SEEDS)
def test_junk_appended_to_log_and_index(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    d = str(tmp_path / "t-0")
    log, model = _build(d, rng)
    active = log.active_segment.base_offset
    log.abandon()
    with open(_seg_path(d, active), "ab") as f:
        f.write(bytes(rng.randrange(256) for _ in range(rng.randint(1, 1024))))
    with open(_seg_path(d, active, naming.INDEX_SUFFIX), "ab") as f:
        f.write(bytes(rng.randrange(256) for _ in range(rng.randint(1, 1024))))
    reopened = _reopen(d, None)
    _check(reopened, model)
    reopened.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_truncation_inside_last_batch(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    d = str(tmp_path / "t-0")
    log, model = _build(d, rng)
    last = model[-1]
    log.abandon()
    os.truncate(_seg_path(d, last.segment), last.position + rng.randint(1, last.size - 1))
    reopened = _reopen(d, None)
    _check(reopened, model[:-1])
    reopened.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_zero_filled_tail(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    d = str(tmp_path / "t-0")
    log, model = _build(d, rng)
    active = log.active_segment.base_offset
    log.abandon()
    # As after a power loss with preallocated blocks: the last batch or two zeroed, then more zeros.
    keep = [b for b in model if b.segment == active]
    cut = rng.randint(max(0, len(keep) - 2), len(keep))
    path = _seg_path(d, active)
    size = os.path.getsize(path)
    pos = keep[cut].position if cut < len(keep) else size
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(b"\x00" * (size - pos + rng.randint(1, 4096)))
    reopened = _reopen(d, None)
    survivors = [b for b in model if b.segment != active] + keep[:cut]
    _check(reopened, survivors)
    assert os.path.getsize(path) == reopened.active_segment.size
    reopened.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_flipped_bit_in_batch_i(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    d = str(tmp_path / "t-0")
    log, model = _build(d, rng)
    i = rng.randrange(len(model))
    victim = model[i]
    log.abandon()
    with open(_seg_path(d, victim.segment), "r+b") as f:
        # batchLength, magic, the CRC or anything it covers (baseOffset and partitionLeaderEpoch are not checked)
        at = victim.position + rng.choice([rng.randrange(8, 12), rng.randrange(16, victim.size)])
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << rng.randrange(8))]))
    reopened = _reopen(d, 0)  # recovery point 0: every segment is checked
    _check(reopened, model[:i])
    later = sorted({b.segment for b in model if b.segment > victim.segment})
    for base in later:  # later segments dropped
        assert not os.path.exists(_seg_path(d, base))
    assert append(
        reopened, build_batch([Record(0, 0, b"k", b"v")], base_timestamp=5), now_ms=0
    ).base_offset == (victim.base)
    reopened.close()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("damage", ["delete", "garbage"])
def test_deleted_or_garbage_index_files(tmp_path, seed: int, damage: str) -> None:
    rng = random.Random(seed)
    d = str(tmp_path / "t-0")
    log, model = _build(d, rng)
    log.abandon()
    for name in os.listdir(d):
        if name.endswith((naming.INDEX_SUFFIX, naming.TIME_INDEX_SUFFIX)) and rng.random() < 0.7:
            path = os.path.join(d, name)
            if damage == "delete":
                os.remove(path)
            else:
                with open(path, "wb") as f:
                    f.write(os.urandom(rng.randint(1, 3000)))
    reopened = _reopen(d, rng.choice([None, 0]))
    _check(reopened, model)
    reopened.close()


def test_recovery_starts_at_the_recovery_point(tmp_path) -> None:
    """Segments below the checkpointed recovery point are trusted, not rescanned (so a bit flipped
    there, which only a full scan would notice, stays); the tail after it is checked."""
    d = tmp_path / "data"
    mgr = LogManager(str(d), CONFIG)
    mgr.create_topic("t", 1)
    log = mgr.get_log("t", 0)
    assert log is not None
    for i in range(60):
        append(log, build_batch([Record(0, 0, b"k", b"x" * 200)], base_timestamp=1000 + i), now_ms=0)
    mgr.flush_all()  # recovery point = 60, checkpointed
    for i in range(5):
        append(log, build_batch([Record(0, 0, b"k", b"y" * 200)], base_timestamp=2000 + i), now_ms=0)
    first = log.segments[0]
    active = log.active_segment.base_offset
    mgr.abandon()
    with open(naming.log_file(first.directory, 0), "r+b") as f:  # damage below the recovery point
        f.seek(100)
        b = f.read(1)[0]
        f.seek(100)
        f.write(bytes([b ^ 1]))
    with open(naming.log_file(first.directory, active), "ab") as f:  # and a torn tail after it
        f.write(b"\x00" * 50)
    again = LogManager(str(d), CONFIG)
    log = again.get_log("t", 0)
    assert log is not None and log.log_end_offset == 65
    assert len(validate_batches(log.read(0, 10**6, upto_leo=True).data, check_crc=False)) > 0
    assert (d / naming.RECOVERY_POINT_CHECKPOINT).read_text().endswith("t 0 65\n")  # written after recovery
    again.close()
