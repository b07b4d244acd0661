from __future__ import annotations

from pathlib import Path

import pytest

from broker.producer_state import PartitionProducers, ProducerIdAllocator
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_header


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
    assert code_of(s, hdr(3)) == ErrorCode.UNKNOWN_PRODUCER_ID
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
