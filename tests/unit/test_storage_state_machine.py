"""Random operation sequences on a PartitionLog against a list-of-batches model (Hypothesis).

Operations: append (several batches, optional HW advance), advance HW, read, roll,
flush, truncate, timestamp lookup, leader epoch bump, DeleteRecords (log start
offset moves, whole segments below it deleted), clean reopen, crash reopen,
and a torn crash (the unflushed tail of the active segment cut, zero-filled or
followed by junk, as after a power loss). After every step the three offsets,
the leader epochs and the readable bytes must match the model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from protocol.errors import ErrorCode, KafkaError
from protocol.records import validate_batches
from storage import naming
from storage.config import LogConfig
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import make_batch, record_set

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=100, segment_index_bytes=48)


@dataclass
class ModelBatch:
    base: int
    last: int
    data: bytes  # as stored (offset and epoch patched)
    timestamps: list[int]


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="storage-sm-")
        self.directory = os.path.join(self.tmp, "t-0")
        self.log = PartitionLog(self.directory, CONFIG, now_ms=0)
        self.batches: list[ModelBatch] = []
        self.hw = 0
        self.log_start = 0
        self.next_ts = 1_000
        self.epoch = 0
        self.epochs: list[tuple[int, int]] = []
        self.fill = 0

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def leo(self) -> int:
        return self.batches[-1].last + 1 if self.batches else 0

    # -- rules -------------------------------------------------------------------------------

    @rule(
        shapes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 150)), min_size=1, max_size=3),
        advance=st.booleans(),
    )
    def append(self, shapes: list[tuple[int, int]], advance: bool) -> None:
        raw = []
        for records, value_size in shapes:
            self.fill = (self.fill + 1) % 26
            raw.append(
                make_batch(records, value_size=value_size, timestamp=self.next_ts, fill=0x61 + self.fill)
            )
            self.next_ts += records + 3
        buf, headers = record_set(*raw)
        result = self.log.append(buf, headers, leader_epoch=self.epoch, now_ms=0)
        assert result.base_offset == self.leo
        if not self.epochs or self.epochs[-1][0] < self.epoch:
            self.epochs.append((self.epoch, self.leo))
        for h in validate_batches(buf):
            data = bytes(buf[h.position : h.end])
            self.batches.append(
                ModelBatch(
                    h.base_offset, h.last_offset, data, [h.base_timestamp + i for i in range(h.record_count)]
                )
            )
        assert result.last_offset == self.leo - 1
        if advance:
            self.log.advance_high_watermark(self.leo)
            self.hw = self.leo

    @rule(data=st.data())
    def advance_hw(self, data: st.DataObject) -> None:
        boundaries = [b.last + 1 for b in self.batches if b.last + 1 > self.hw]
        if boundaries:
            target = data.draw(st.sampled_from(boundaries))
            assert self.log.advance_high_watermark(target)
            self.hw = target

    @rule(data=st.data(), max_bytes=st.integers(0, 1500))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        offset = data.draw(st.integers(0, self.leo))
        if offset < self.log_start:
            with pytest.raises(KafkaError) as info:
                self.log.read(offset, max_bytes)
            assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
            return
        got = self.log.read(offset, max_bytes).data
        if offset >= self.hw:
            assert got == b""
            return
        i = next(k for k, b in enumerate(self.batches) if b.last >= offset)
        expected = b""
        bases = [s.base_offset for s in self.log.segments]
        seg_end = next((base for base in bases if base > self.batches[i].base), None)
        for b in self.batches[i:]:
            if b.last >= self.hw or (seg_end is not None and b.base >= seg_end):
                break
            if expected and len(expected) + len(b.data) > max_bytes:
                break
            expected += b.data
        assert got == expected

    @rule()
    def roll(self) -> None:
        was_empty = self.log.active_segment.is_empty
        assert self.log.roll(now_ms=0) == (not was_empty)
        if not was_empty:
            assert self.log.active_segment.base_offset == self.leo

    @rule()
    def flush(self) -> None:
        assert self.log.flush() == self.leo
        assert self.log.recovery_point == self.leo

    @rule()
    def bump_epoch(self) -> None:
        self.epoch += 1

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.hw))
        self.log_start = max(self.log_start, offset)
        assert self.log.delete_records(offset) == self.log_start
        first = self.log.segments[0].base_offset
        assert first <= self.log_start
        assert len(self.log.segments) == 1 or self.log.segments[1].base_offset > self.log_start

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.leo))
        new_leo = self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b.last < offset]
        assert new_leo == self.leo
        self.hw = min(self.hw, self.leo)
        self.log_start = min(self.log_start, self.leo)
        self.epochs = [e for e in self.epochs if e[1] < self.leo]

    @rule(timestamp=st.integers(0, 3_000))
    def offset_for_timestamp(self, timestamp: int) -> None:
        expected = None
        for b in self.batches:
            if b.last >= self.hw:
                break
            hit = next(
                (i for i, ts in enumerate(b.timestamps) if ts >= timestamp and b.base + i >= self.log_start),
                None,
            )
            if hit is not None:
                expected = (b.base + hit, b.timestamps[hit])
                break
        assert self.log.offset_for_timestamp(timestamp) == expected

    def _reopen(self, *, recover: bool, recovery_point: int | None = None) -> None:
        self.log = PartitionLog(
            self.directory,
            CONFIG,
            recover=recover,
            recovery_point=recovery_point,
            log_start_offset=self.log_start,  # as the log-start-offset checkpoint would give it
            now_ms=0,
        )
        self.hw = self.leo
        self.log_start = min(self.log_start, self.leo)
        self.epochs = [e for e in self.epochs if e[1] < self.leo]

    @rule()
    def clean_reopen(self) -> None:
        self.log.close()
        self._reopen(recover=False)

    @rule()
    def crash_reopen(self) -> None:
        recovery_point = self.log.recovery_point
        self.log.abandon()
        self._reopen(recover=True, recovery_point=recovery_point)

    @precondition(lambda self: self.log.active_segment.size > 0)
    @rule(data=st.data(), tail=st.sampled_from(["cut", "zeros", "junk"]))
    def torn_crash(self, data: st.DataObject, tail: str) -> None:
        active = self.log.active_segment
        durable = self.log.recovery_point
        in_active = [b for b in self.batches if b.base >= active.base_offset]
        durable_pos = sum(len(b.data) for b in in_active if b.last < durable)
        cut = data.draw(st.integers(durable_pos, active.size))
        path = naming.log_file(self.directory, active.base_offset)
        recovery_point = durable
        self.log.abandon()
        os.truncate(path, cut)
        with open(path, "ab") as f:
            if tail == "zeros":
                f.write(b"\x00" * data.draw(st.integers(1, 200)))
            elif tail == "junk":
                f.write(data.draw(st.binary(min_size=1, max_size=200)))
        # A batch survives if its bytes are still intact on disk (zeros written over bytes that were
        # zero anyway, e.g. a record's trailing header count, change nothing).
        with open(path, "rb") as f:
            damaged = f.read()
        keep, pos = [], 0
        for b in in_active:
            if damaged[pos : pos + len(b.data)] != b.data:
                break
            keep.append(b)
            pos += len(b.data)
        self.batches = [b for b in self.batches if b.base < active.base_offset] + keep
        self._reopen(recover=True, recovery_point=recovery_point)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def offsets_match(self) -> None:
        assert self.log.log_end_offset == self.leo
        assert self.log.high_watermark == self.hw
        assert self.log.log_start_offset == self.log_start
        assert self.log.leader_epochs.entries == self.epochs

    @invariant()
    def segments_well_formed(self) -> None:
        segments = self.log.segments
        assert [s.base_offset for s in segments] == sorted({s.base_offset for s in segments})
        assert all(not s.active for s in segments[:-1]) and segments[-1].active
        for s in segments:
            s.offset_index.sanity_check(s.size)
            s.time_index.sanity_check()

    @invariant()
    def everything_readable(self) -> None:
        data, offset = b"", self.log_start
        while offset < self.hw:
            chunk = self.log.read(offset, 10**6).data
            assert chunk
            data += chunk
            offset = validate_batches(chunk)[-1].last_offset + 1
        assert data == b"".join(b.data for b in self.batches if self.log_start <= b.last < self.hw)


PartitionLogMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_partition_log_state_machine = PartitionLogMachine.TestCase
