from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from broker.producer_state import (
    CorruptSnapshotError,
    PartitionProducers,
    ProducerIdAllocator,
    load_producer_state,
    snapshot_offsets,
    write_snapshot,
)
from protocol.control_records import build_marker_batch
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, crc32c, read_header
from storage import naming
from storage.config import LogConfig
from storage.fs import FileSystem
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append


def hdr(seq: int, n: int = 1, pid: int = 7, epoch: int = 0, base_offset: int = 0):  # type: ignore[no-untyped-def]
    recs = [Record(i, 0, None, b"v") for i in range(n)]
    return read_header(
        build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, base_offset=base_offset)
    )


def code_of(state: PartitionProducers, h) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as info:
        state.check(h)
    return info.value.code


def test_sequence_rules() -> None:
    s = PartitionProducers()
    assert s.check(hdr(3)) is None  # an unknown producer starts anywhere (KIP-360)
    offset = 0
    for seq in range(0, 14, 2):
        h = hdr(seq, n=2)
        assert s.check(h) is None
        s.update(h, offset)
        offset += 2
    # the last five batches are remembered as duplicates, older ones are not
    assert s.check(hdr(12, n=2)) == 12
    assert s.check(hdr(4, n=2)) == 4
    assert code_of(s, hdr(2, n=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(s, hdr(15)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(s, hdr(5, epoch=1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    s.update(hdr(0, epoch=1), 100)
    assert code_of(s, hdr(14)) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_sequence_wraps_at_int32() -> None:
    s = PartitionProducers()
    s.update(hdr(0), 0)
    s.producers[7].batches[-1].last_seq = 0x7FFFFFFF
    assert s.check(hdr(0)) is None  # 0 follows 2**31 - 1


def test_rebuild_from_headers() -> None:
    s = PartitionProducers()
    s.rebuild([hdr(0, n=3, base_offset=10), hdr(3, n=1, base_offset=13)])
    assert s.check(hdr(3)) == 13
    assert s.check(hdr(4)) is None


def test_producer_ids_unique_across_restarts(tmp_path: Path) -> None:
    a = ProducerIdAllocator(tmp_path)
    first = [a.allocate() for _ in range(3)]
    b = ProducerIdAllocator(tmp_path)  # a restart (even after a crash) never reuses a handed-out id
    assert b.allocate() > max(first)
    (tmp_path / "producer-id-block").write_text("junk")
    with pytest.raises(RuntimeError, match="corrupt"):
        ProducerIdAllocator(tmp_path)


# -- snapshots ---------------------------------------------------------------------------------


def _state_with_batches() -> PartitionProducers:
    s = PartitionProducers()
    offset = 0
    for seq in range(0, 16, 2):  # eight batches of two: the last five are remembered
        s.update(hdr(seq, n=2), offset, now_ms=1234)
        offset += 2
    s.update(hdr(0, n=3, pid=9, epoch=4), 100, now_ms=999)
    return s


def test_snapshot_is_kafkas_v1_layout_with_one_entry_per_batch() -> None:
    data = _state_with_batches().to_snapshot()
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 6) and len(data) == 10 + 6 * 46
    assert crc == crc32c(data[6:])
    entries = list(struct.iter_unpack(">qhiqiqiq", data[10:]))
    # pid 7: batches (6,7)..(14,15) at offsets 6..15, oldest first; pid 9: one batch of three.
    assert entries[0] == (7, 0, 7, 7, 1, 1234, -1, -1)
    assert entries[4] == (7, 0, 15, 15, 1, 1234, -1, -1)
    assert entries[5] == (9, 4, 2, 102, 2, 999, -1, -1)


def test_snapshot_round_trip_keeps_the_duplicate_window() -> None:
    restored = PartitionProducers.from_snapshot(_state_with_batches().to_snapshot())
    assert restored.check(hdr(14, n=2)) == 14
    assert restored.check(hdr(6, n=2)) == 6  # the oldest of the five
    assert code_of(restored, hdr(4, n=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert restored.check(hdr(16, n=1)) is None
    assert restored.check(hdr(0, n=3, pid=9, epoch=4)) == 100
    assert code_of(restored, hdr(3, pid=9, epoch=3)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert restored.last_offsets() == {7: 15, 9: 102}


@pytest.mark.parametrize("damage", ["short", "version", "crc", "count"])
def test_corrupt_snapshots_are_rejected(damage: str) -> None:
    data = bytearray(_state_with_batches().to_snapshot())
    if damage == "short":
        data = data[:5]
    elif damage == "version":
        data[1] = 2
    elif damage == "crc":
        data[-1] ^= 1
    else:
        struct.pack_into(">i", data, 6, 99)
        struct.pack_into(">I", data, 2, crc32c(bytes(data[6:])))
    with pytest.raises(CorruptSnapshotError):
        PartitionProducers.from_snapshot(bytes(data))


def test_expiry_forgets_idle_producers() -> None:
    s = _state_with_batches()
    assert s.expire(999 + 999, 1000) == 0
    assert s.expire(999 + 1000, 1000) == 1 and set(s.producers) == {7}
    assert s.expire(1234 + 1000, 1000) == 1 and s.producers == {}


def _idempotent(pid: int, seq: int, n: int = 1) -> bytes:
    return build_batch(
        [Record(i, 0, b"k", b"v") for i in range(n)], producer_id=pid, producer_epoch=0, base_sequence=seq
    )


def test_load_from_snapshot_then_replay_the_tail(tmp_path: Path) -> None:
    log = PartitionLog(str(tmp_path / "t-0"), LogConfig(), now_ms=0)
    state = PartitionProducers()
    for seq in range(0, 10, 2):
        r = append(log, _idempotent(3, seq, 2), now_ms=0)
        state.update(read_header(_idempotent(3, seq, 2)), r.base_offset)
    write_snapshot(log.fs, log.directory, log.log_end_offset, state.to_snapshot())  # at 10
    append(log, _idempotent(3, 10, 2), now_ms=0)  # 10-11, after the snapshot
    append(log, _idempotent(4, 0, 1), now_ms=0)  # 12
    write_snapshot(log.fs, log.directory, 50, b"from the future")  # above the log end: deleted
    loaded, used = load_producer_state(log)
    assert used == 10
    assert loaded.check(read_header(_idempotent(3, 10, 2))) == 10
    assert loaded.check(read_header(_idempotent(3, 2, 2))) == 2
    assert loaded.check(read_header(_idempotent(4, 0, 1))) == 12
    assert snapshot_offsets(log.fs, log.directory) == [10]
    # A corrupt newest snapshot falls back to an older one (or the whole log).
    write_snapshot(log.fs, log.directory, 12, b"garbage")
    loaded, used = load_producer_state(log)
    assert used == 10 and loaded.check(read_header(_idempotent(3, 10, 2))) == 10
    assert snapshot_offsets(log.fs, log.directory) == [10]
    os.remove(naming.snapshot_file(log.directory, 10))
    loaded, used = load_producer_state(log)
    assert used == -1 and loaded.check(read_header(_idempotent(3, 2, 2))) == 2
    log.close()


def test_only_the_newest_snapshots_are_kept(tmp_path: Path) -> None:
    fs = FileSystem()
    for offset in (5, 1, 9, 7):
        write_snapshot(fs, str(tmp_path), offset, PartitionProducers().to_snapshot())
    assert snapshot_offsets(fs, str(tmp_path)) == [7, 9]


def test_replay_keeps_the_coordinator_epoch_of_markers(tmp_path: Path) -> None:
    """A restarted leader (or a follower) remembers which coordinator epoch wrote a producer's last
    marker, so that a marker from an older coordinator is still refused."""
    log = PartitionLog(str(tmp_path / "t-0"), LogConfig(), now_ms=0)
    append(log, _idempotent(3, 0, 2), now_ms=0)
    append(log, build_marker_batch(3, 0, True, 7, 0), now_ms=0)
    append(log, build_marker_batch(5, 0, False, 4, 0), now_ms=0)
    loaded, _ = load_producer_state(log)
    assert {pid: coordinator for pid, _, _, _, coordinator, _ in loaded.describe()} == {3: 7, 5: 4}
    log.close()
