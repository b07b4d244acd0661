"""Random operation sequences on a compacted PartitionLog against a model (Hypothesis).

Operations: append keyed records (some tombstones, some idempotent batches, some
compressed), roll, run the cleaner to completion (with a random offset-map
capacity and a clock that may pass tombstones' delete horizons), crash in the
middle of a cleaning at a random swap step, crash and clean reopen, reads.

Invariants after every step: the log end offset is the model's; every readable
record is one that was appended, at its original offset, with its key and
value (compaction only removes); the latest record of each key is still there
unless it is a tombstone past its delete horizon; records of the active segment
are all there; segments stay within segment.bytes and well formed; and right
after a complete cleaning, below the cleaner offset each key appears once.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from protocol.records import Record, build_batch, decode_batch, validate_batches
from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append

T0 = 1_700_000_000_000
CONFIG = LogConfig(
    segment_bytes=900,
    index_interval_bytes=150,
    segment_index_bytes=64,
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=5_000,
)
TP = ("t", 0)
KEYS = [b"k%d" % i for i in range(8)] + [b"a-much-longer-key-%d-to-be-hashed" % i for i in range(4)]


class CompactionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="compaction-sm-")
        self.directory = os.path.join(self.tmp, "t-0")
        self.log = PartitionLog(self.directory, CONFIG, now_ms=0)
        self.cleaner = LogCleaner(self.log.fs, self.tmp)
        self.model: dict[int, tuple[bytes, bytes | None]] = {}  # offset -> (key, value), everything appended
        self.leo = 0
        self.now = T0
        self.seq = 0
        self.just_cleaned = False

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _read(self) -> dict[int, tuple[bytes | None, bytes | None]]:
        out: dict[int, tuple[bytes | None, bytes | None]] = {}
        offset = self.log.log_start_offset
        while offset < self.log.high_watermark:
            data = self.log.read(offset, 1 << 20).data
            if not data:
                break
            for h in validate_batches(data):
                hh, recs = decode_batch(data, h.position)
                for r in recs:
                    out[hh.offset_of(r)] = (r.key, r.value)
                offset = h.last_offset + 1
        return out

    # -- rules -----------------------------------------------------------------------------------

    @rule(
        recs=st.lists(
            st.tuples(st.sampled_from(KEYS), st.booleans(), st.integers(0, 60)), min_size=1, max_size=5
        ),
        codec=st.sampled_from([0, 0, 1, 3]),
        idempotent=st.booleans(),
    )
    def append(self, recs: list[tuple[bytes, bool, int]], codec: int, idempotent: bool) -> None:
        records = [
            Record(i, i, key, None if tomb else b"%d-" % (self.leo + i) + b"x" * size)
            for i, (key, tomb, size) in enumerate(recs)
        ]
        kw = {"producer_id": 1, "producer_epoch": 0, "base_sequence": self.seq} if idempotent else {}
        result = append(self.log, build_batch(records, base_timestamp=self.now, codec=codec, **kw), now_ms=0)
        assert result.base_offset == self.leo
        if idempotent:
            self.seq += len(records)
        for r in records:
            self.model[self.leo + r.offset_delta] = (r.key, r.value)  # type: ignore[assignment]
        self.leo += len(records)
        self.just_cleaned = False

    @rule()
    def roll(self) -> None:
        self.log.roll(now_ms=0)
        self.just_cleaned = False

    @rule(capacity=st.integers(3, 40), advance=st.sampled_from([0, 1_000, 6_000]))
    def clean(self, capacity: int, advance: int) -> None:
        self.now += advance
        self.cleaner.map_capacity = capacity
        passes = 0
        while self.cleaner.clean_once([(TP, self.log)], self.now) is not None:
            passes += 1
            assert passes < 200
        self.just_cleaned = True

    @precondition(lambda self: len(self.log.segments) > 1)
    @rule(step=st.integers(0, 4), capacity=st.integers(3, 40))
    def crash_while_cleaning(self, step: int, capacity: int) -> None:
        self.cleaner.map_capacity = capacity
        job = self.cleaner.grab_filthiest([(TP, self.log)], self.now)
        if job is None:
            return
        result = self.cleaner.clean(job)
        if step >= 1 and self.cleaner.commit(result):
            if step >= 2:
                self.cleaner.sync_dir(result)
                self.cleaner.retire(result)
            if step >= 3:
                self.cleaner.install(result, self.now)
        self.log.abandon()
        self.log = PartitionLog(self.directory, CONFIG, recover=True, recovery_point=0, now_ms=0)
        self.cleaner.release(job)
        self.just_cleaned = False

    @rule()
    def crash_reopen(self) -> None:
        self.log.abandon()
        self.log = PartitionLog(self.directory, CONFIG, recover=True, recovery_point=0, now_ms=0)
        self.just_cleaned = False

    @rule()
    def clean_reopen(self) -> None:
        self.log.close()
        self.log = PartitionLog(self.directory, CONFIG, now_ms=0)
        self.just_cleaned = False

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def only_removals(self) -> None:
        assert self.log.log_end_offset == self.leo == self.log.high_watermark
        got = self._read()
        for offset, rec in got.items():
            assert self.model[offset] == rec, offset
        latest: dict[bytes, int] = {}
        for offset, (key, _) in sorted(self.model.items()):
            latest[key] = offset
        for key, offset in latest.items():
            if self.model[offset][1] is not None:
                assert offset in got, (key, offset)
        active = self.log.active_segment.base_offset
        assert [o for o in got if o >= active] == [o for o in sorted(self.model) if o >= active]
        if self.just_cleaned:
            below = self.cleaner.offsets.get(TP, 0)
            keys = [got[o][0] for o in sorted(got) if o < below]
            assert len(keys) == len(set(keys))

    @invariant()
    def segments_well_formed(self) -> None:
        segments = self.log.segments
        assert [s.base_offset for s in segments] == sorted({s.base_offset for s in segments})
        for s in segments[:-1]:
            assert s.size <= CONFIG.segment_bytes or len(validate_batches(s.log_file.pread(s.size, 0))) == 1
            s.offset_index.sanity_check(s.size)
            s.time_index.sanity_check()
        leftovers = [n for n in os.listdir(self.directory) if n.endswith((".cleaned", ".swap"))]
        assert leftovers == [] or self.log.cleaning is not None


CompactionMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=35,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_compaction_state_machine = CompactionMachine.TestCase
