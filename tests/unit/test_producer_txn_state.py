"""Transactions in the partition's producer state (broker/producer_state.py).

An open transaction per producer from its first transactional batch, closed by
a marker; the first unstable offset (LSO) while any is open or its marker is
above the high watermark; markers' epoch fencing; snapshots keep open
transactions across restarts; replay of headers closes them again.
"""

from __future__ import annotations

import pytest

from broker.producer_state import PartitionProducers
from protocol.errors import ErrorCode, KafkaError
from protocol.records import Record, build_batch, read_header


def hdr(
    seq: int, pid: int = 7, epoch: int = 0, base_offset: int = 0, txn: bool = True, control: bool = False
):  # type: ignore[no-untyped-def]
    data = build_batch(
        [Record(0, 0, b"k", b"v")],
        base_offset=base_offset,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        is_control=control,
    )
    return read_header(data, 0)


def code(fn) -> int:  # type: ignore[no-untyped-def]
    try:
        fn()
    except KafkaError as exc:
        return exc.code
    return 0


def test_open_close_and_first_unstable_offset() -> None:
    s = PartitionProducers()
    assert s.first_unstable_offset(0) is None
    s.update(hdr(0, pid=1), 10)
    s.update(hdr(1, pid=1), 11)
    s.update(hdr(0, pid=2), 12)
    assert s.ongoing == {1: 10, 2: 12}
    assert s.first_unstable_offset(13) == 10
    assert s.complete(1, 0, 5, 13) == 10
    # the marker at 13 is not below the HW yet: the LSO stays at 10
    assert s.first_unstable_offset(13) == 10
    assert s.first_unstable_offset(14) == 12
    assert s.complete(2, 0, 5, 14) == 12
    assert s.first_unstable_offset(15) is None
    assert s.complete(2, 0, 5, 15) == -1  # nothing open: a marker only


def test_non_transactional_batch_inside_a_transaction() -> None:
    s = PartitionProducers()
    s.update(hdr(0), 0)
    assert code(lambda: s.check(hdr(1, txn=False))) == ErrorCode.INVALID_TXN_STATE
    s.complete(7, 0, 0, 1)
    assert code(lambda: s.check(hdr(1, txn=False))) == 0


def test_marker_fencing_and_epoch_bump() -> None:
    s = PartitionProducers()
    s.update(hdr(0, epoch=3), 0)
    s.complete(7, 4, 2, 1)  # the coordinator aborted with a bumped epoch
    assert code(lambda: s.check(hdr(1, epoch=3))) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert code(lambda: s.check_marker(7, 3, 2)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert code(lambda: s.check_marker(7, 4, 1)) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    # the new epoch starts at sequence 0
    assert code(lambda: s.check(hdr(5, epoch=4))) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code(lambda: s.check(hdr(0, epoch=4))) == 0


def test_snapshot_keeps_open_transactions() -> None:
    s = PartitionProducers()
    s.update(hdr(0, pid=1), 10)
    s.update(hdr(0, pid=2), 11)
    s.complete(2, 0, 9, 12)
    restored = PartitionProducers.from_snapshot(s.to_snapshot())
    assert restored.ongoing == {1: 10}
    assert restored.describe()[0][4:] == (-1, 10)
    assert restored.describe()[1][4:] == (9, -1)


def test_rebuild_closes_transactions_at_markers() -> None:
    s = PartitionProducers()
    s.rebuild(
        [
            hdr(0, pid=1, base_offset=0),
            hdr(0, pid=2, base_offset=1),
            hdr(-1, pid=1, base_offset=2, control=True),
        ]
    )
    assert s.ongoing == {2: 1}


@pytest.mark.parametrize("open_txn", [True, False])
def test_producers_with_open_transactions_do_not_expire(open_txn: bool) -> None:
    s = PartitionProducers()
    s.update(hdr(0), 0, now_ms=0)
    if not open_txn:
        s.complete(7, 0, 0, 1, now_ms=0)
    assert s.expire(10_000, 1_000) == (0 if open_txn else 1)
