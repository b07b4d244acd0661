"""The transaction coordinator's state machine, with an in-memory log and marker writer.

Kafka's rules (broker/txn/coordinator.py): epochs and fencing on
InitProducerId, AddPartitionsToTxn and EndTxn checks, marker writing before
CompleteCommit/CompleteAbort, replay of prepared transactions, timeouts,
id expiry, DescribeTransactions and ListTransactions filters.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterator

import pytest

from broker.txn.coordinator import TransactionCoordinator, TxnSettings
from broker.txn.records import decode_key, decode_value
from broker.txn.state import TxnState
from protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(30)

TP = tuple[str, int]


class MemoryTxnLog:
    def __init__(self, partitions: int = 50) -> None:
        self.partitions = partitions
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.fail: ErrorCode | None = None

    @property
    def num_partitions(self) -> int:
        return self.partitions

    def coordinator_epoch(self, partition: int) -> int:
        return 7

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        return iter(list(self.records[partition]))

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode:
        await asyncio.sleep(0)
        if self.fail is not None:
            return self.fail
        self.records[partition].append((key, value))
        return ErrorCode.NONE

    def record(self, partition: int, key: bytes, value: bytes | None) -> None:
        if self.fail is None:
            self.records[partition].append((key, value))

    def states(self, txn_id: str) -> list[TxnState]:
        return [
            TxnState(decode_value(v).status)
            for records in self.records.values()
            for k, v in records
            if v is not None and decode_key(k) == txn_id
        ]


class MemoryMarkers:
    def __init__(self) -> None:
        self.written: list[tuple[int, int, bool, int, frozenset[TP]]] = []
        self.gate: asyncio.Event | None = None

    async def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: frozenset[TP],
        still_coordinator: Callable[[], bool],
    ) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.written.append((producer_id, producer_epoch, commit, coordinator_epoch, partitions))


def make(log: MemoryTxnLog | None = None) -> tuple[TransactionCoordinator, MemoryTxnLog, MemoryMarkers]:
    ids = iter(range(1000, 2000))
    log = log or MemoryTxnLog()
    markers = MemoryMarkers()
    coordinator = TransactionCoordinator(TxnSettings(max_timeout_ms=60_000), log, markers, lambda: next(ids))
    coordinator.load_all()
    return coordinator, log, markers


async def settle(c: TransactionCoordinator) -> None:
    for _ in range(20):
        await asyncio.sleep(0)
    await c.drain()


async def test_init_gives_epoch_zero_then_bumps() -> None:
    c, log, _ = make()
    assert await c.init_producer_id("t", 10_000, None) == (ErrorCode.NONE, 1000, 0)
    assert await c.init_producer_id("t", 10_000, None) == (ErrorCode.NONE, 1000, 1)
    # KIP-360: the current producer bumps its own epoch; a retry of that bump gets the same answer
    assert await c.init_producer_id("t", 10_000, (1000, 1)) == (ErrorCode.NONE, 1000, 2)
    assert await c.init_producer_id("t", 10_000, (1000, 1)) == (ErrorCode.NONE, 1000, 2)
    assert (await c.init_producer_id("t", 10_000, (1000, 0)))[0] == ErrorCode.PRODUCER_FENCED
    assert (await c.init_producer_id("t", 10_000, (999, 2)))[0] == ErrorCode.PRODUCER_FENCED
    assert log.states("t") == [TxnState.EMPTY] * 4


async def test_init_at_epoch_exhaustion_moves_to_a_new_id_and_a_lost_answer_is_retried() -> None:
    c, _, _ = make()
    _, pid, _ = await c.init_producer_id("t", 10_000, None)
    c._txns["t"].producer_epoch = 32766  # as after 32,766 bumps
    assert await c.init_producer_id("t", 10_000, (pid, 32766)) == (ErrorCode.NONE, 1001, 0)
    # KIP-360: the answer was lost and the producer asks again with its old id and epoch
    assert await c.init_producer_id("t", 10_000, (pid, 32766)) == (ErrorCode.NONE, 1001, 0)
    assert await c.init_producer_id("t", 10_000, (1001, 0)) == (ErrorCode.NONE, 1001, 1)
    # the old id is recognised only by the transition that replaced it, and only when exhausted
    assert (await c.init_producer_id("t", 10_000, (pid, 32766)))[0] == ErrorCode.PRODUCER_FENCED
    c._txns["t"].producer_epoch = 32766
    assert await c.init_producer_id("t", 10_000, None) == (ErrorCode.NONE, 1002, 0)
    # a rotation no producer asked for by epoch leaves nothing to retry
    assert (await c.init_producer_id("t", 10_000, (1001, 32766)))[0] == ErrorCode.PRODUCER_FENCED
    assert (await c.init_producer_id("t", 10_000, (1001, 5)))[0] == ErrorCode.PRODUCER_FENCED


async def test_init_validates_request() -> None:
    c, _, _ = make()
    assert (await c.init_producer_id("", 1000, None))[0] == ErrorCode.INVALID_REQUEST
    # an empty transactional id is INVALID_REQUEST everywhere, as Kafka answers it
    assert await c.add_partitions("", 1000, 0, frozenset({("a", 0)})) == ErrorCode.INVALID_REQUEST
    assert await c.end_transaction("", 1000, 0, True) == ErrorCode.INVALID_REQUEST
    assert await c.end_transaction_v2("", 1000, 0, True) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert c.verify_write("", 1000, 0, ("a", 0)) == ErrorCode.INVALID_REQUEST
    assert c.describe("")[0] == ErrorCode.INVALID_REQUEST
    assert (await c.init_producer_id("t", 60_001, None))[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert (await c.init_producer_id("t", 0, None))[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT


async def test_failed_write_forgets_a_new_id() -> None:
    c, log, _ = make()
    log.fail = ErrorCode.KAFKA_STORAGE_ERROR
    assert (await c.init_producer_id("t", 1000, None))[0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert c.describe("t")[0] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


async def test_commit_writes_markers_then_completes() -> None:
    c, log, markers = make()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    parts = frozenset({("a", 0), ("b", 3)})
    assert await c.add_partitions("t", pid, epoch, parts) == ErrorCode.NONE
    assert await c.add_partitions("t", pid, epoch, frozenset({("a", 0)})) == ErrorCode.NONE  # no write
    assert await c.add_partitions("t", pid, epoch, frozenset({("c", 1)})) == ErrorCode.NONE
    assert c.describe("t")[1].partitions == parts | {("c", 1)}  # type: ignore[union-attr]
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.NONE
    await settle(c)
    assert markers.written == [(pid, epoch, True, 7, parts | {("c", 1)})]
    assert log.states("t") == [
        TxnState.EMPTY,
        TxnState.ONGOING,
        TxnState.ONGOING,
        TxnState.PREPARE_COMMIT,
        TxnState.COMPLETE_COMMIT,
    ]
    # a retried EndTxn of the finished commit succeeds; an abort of it is illegal
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.NONE
    assert await c.end_transaction("t", pid, epoch, False) == ErrorCode.INVALID_TXN_STATE


async def test_a_complete_record_lost_before_its_fsync_is_repaired_by_replay() -> None:
    # the Complete* record is appended without waiting for an fsync of its own; a crash that
    # loses it leaves PrepareCommit last in the log, and the next coordinator marks again
    log = MemoryTxnLog()
    log.record = lambda partition, key, value: None  # type: ignore[method-assign]
    c, _, markers = make(log)
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    assert await c.add_partitions("t", pid, epoch, frozenset({("a", 0)})) == ErrorCode.NONE
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.NONE
    await settle(c)
    assert c.describe("t")[1].state is TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]
    assert log.states("t")[-1] is TxnState.PREPARE_COMMIT
    c.close()
    restarted, _, markers2 = make(log)
    await settle(restarted)
    assert markers2.written == markers.written == [(pid, epoch, True, 7, frozenset({("a", 0)}))]
    assert restarted.describe("t")[1].state is TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


async def test_verification_answers_the_coordinator_codes_kafka_does() -> None:
    c, _, markers = make()
    markers.gate = asyncio.Event()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    a, b = ("a", 0), ("b", 1)
    assert c.verify_write("t", pid, epoch, a) == ErrorCode.TRANSACTION_ABORTABLE  # nothing open
    assert await c.add_partitions("t", pid, epoch, frozenset({a})) == ErrorCode.NONE
    assert c.verify_write("t", pid, epoch, a) is None
    assert c.verify_write("t", pid, epoch, b) == ErrorCode.TRANSACTION_ABORTABLE
    assert c.verify_write("t", pid, epoch + 1, a) == ErrorCode.PRODUCER_FENCED
    assert c.verify_write("t", pid + 1, epoch, a) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.verify_write("other", pid, epoch, a) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.verify_partitions("t", pid, epoch, frozenset({a, b})) == (
        ErrorCode.NONE,
        {a: ErrorCode.NONE, b: ErrorCode.TRANSACTION_ABORTABLE},
    )
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.NONE  # markers held: PrepareCommit
    assert c.verify_write("t", pid, epoch, a) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert c.verify_partitions("t", pid, epoch, frozenset({a})) == (ErrorCode.CONCURRENT_TRANSACTIONS, {})
    markers.gate.set()
    await settle(c)
    assert c.verify_write("t", pid, epoch, a) == ErrorCode.TRANSACTION_ABORTABLE  # it ended


async def test_requests_during_markers_are_concurrent() -> None:
    c, _, markers = make()
    markers.gate = asyncio.Event()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}))
    assert await c.end_transaction("t", pid, epoch, False) == ErrorCode.NONE
    assert await c.end_transaction("t", pid, epoch, False) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert await c.add_partitions("t", pid, epoch, frozenset({("a", 1)})) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert (await c.init_producer_id("t", 10_000, None))[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    await asyncio.sleep(0)  # the markers round starts
    # a KIP-360 producer that is not the id's, too (after IDLE_WAIT_S): Kafka checks its pending
    # transition to Complete* before the producer
    assert (await c.init_producer_id("t", 10_000, (pid + 1, 0)))[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    markers.gate.set()
    await settle(c)
    assert c.describe("t")[1].state is TxnState.COMPLETE_ABORT  # type: ignore[union-attr]
    assert (await c.init_producer_id("t", 10_000, (pid + 1, 0)))[0] == ErrorCode.PRODUCER_FENCED


async def test_producer_checks() -> None:
    c, _, _ = make()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    tp = frozenset({("a", 0)})
    assert await c.add_partitions("t", pid + 1, epoch, tp) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert await c.add_partitions("t", pid, epoch + 1, tp) == ErrorCode.PRODUCER_FENCED
    assert await c.add_partitions("nope", pid, epoch, tp) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # nothing open


async def test_new_producer_fences_an_open_transaction() -> None:
    c, _, markers = make()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}))
    assert (await c.init_producer_id("t", 10_000, None))[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    await settle(c)
    assert markers.written == [(pid, epoch + 1, False, 7, frozenset({("a", 0)}))]
    assert await c.init_producer_id("t", 10_000, None) == (ErrorCode.NONE, pid, epoch + 2)
    # the zombie can neither end nor extend its transaction
    assert await c.end_transaction("t", pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    # nor come back with KIP-360 (the fence forgot its epoch)
    assert (await c.init_producer_id("t", 10_000, (pid, epoch)))[0] == ErrorCode.PRODUCER_FENCED


async def test_timed_out_transaction_is_aborted_with_a_bumped_epoch() -> None:
    c, _, markers = make()
    _, pid, epoch = await c.init_producer_id("t", 1_000, None)
    await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}))
    start = c.describe("t")[1].start_ms  # type: ignore[union-attr]
    assert await c.abort_timed_out(start + 999) == 0
    assert await c.abort_timed_out(start + 1_001) == 1
    await settle(c)
    assert markers.written == [(pid, epoch + 1, False, 7, frozenset({("a", 0)}))]
    assert await c.end_transaction("t", pid, epoch, False) == ErrorCode.PRODUCER_FENCED


async def test_v2_timed_out_producer_may_abort_and_go_on() -> None:
    """Transaction version 2 (Kafka's endTransaction for a fence there): the timed-out transaction
    is aborted as any v2 abort, epoch + 1 remembering the producer's epoch, so that producer's
    EndTxn v5 abort is a retry answered with the new epoch, and KIP-360's InitProducerId naming
    its epoch gets the current one unbumped; a commit is INVALID_TXN_STATE."""
    c, _, markers = make()
    _, pid, epoch = await c.init_producer_id("t", 1_000, None)
    await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}), 2)
    start = c.describe("t")[1].start_ms  # type: ignore[union-attr]
    assert await c.abort_timed_out(start + 1_001) == 1
    await settle(c)
    assert markers.written == [(pid, epoch + 1, False, 7, frozenset({("a", 0)}))]
    assert await c.end_transaction_v2("t", pid, epoch, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    assert await c.end_transaction_v2("t", pid, epoch, False) == (ErrorCode.NONE, pid, epoch + 1)
    assert await c.init_producer_id("t", 1_000, (pid, epoch)) == (ErrorCode.NONE, pid, epoch + 1)
    # a new producer fencing a v2 transaction: the zombie may come back the same way until the
    # new producer's InitProducerId bumps the epoch again and forgets it
    await c.add_partitions("t", pid, epoch + 1, frozenset({("a", 0)}), 2)
    assert (await c.init_producer_id("t", 1_000, None))[0] == ErrorCode.CONCURRENT_TRANSACTIONS
    await settle(c)
    assert markers.written[1:] == [(pid, epoch + 2, False, 7, frozenset({("a", 0)}))]
    assert await c.init_producer_id("t", 1_000, None) == (ErrorCode.NONE, pid, epoch + 3)
    assert (await c.init_producer_id("t", 1_000, (pid, epoch + 1)))[0] == ErrorCode.PRODUCER_FENCED


async def test_replay_completes_a_prepared_commit() -> None:
    c, log, markers = make()
    markers.gate = asyncio.Event()  # the "crash" happens before any marker is written
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}))
    await c.end_transaction("t", pid, epoch, True)
    c.close()
    restarted, _, markers2 = make(log)
    await settle(restarted)
    assert markers2.written == [(pid, epoch, True, 7, frozenset({("a", 0)}))]
    assert restarted.describe("t")[1].state is TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


async def test_ids_expire_and_list_filters() -> None:
    c, log, _ = make()
    for name in ("x1", "x2", "y1"):
        await c.init_producer_id(name, 10_000, None)
    _, pid, epoch = await c.init_producer_id("open", 10_000, None)
    await c.add_partitions("open", pid, epoch, frozenset({("a", 0)}))
    names = {t.transactional_id for t in c.list(set(), set())}
    assert names == {"x1", "x2", "y1", "open"}
    assert [t.transactional_id for t in c.list({"Ongoing"}, set())] == ["open"]
    assert [t.transactional_id for t in c.list(set(), {pid})] == ["open"]
    # Kafka's duration filter: the last transaction started more than that long ago, in any state;
    # an id that never had one (start -1) always passes
    c._txns["open"].start_ms -= 5_000
    assert {t.transactional_id for t in c.list(set(), set(), min_duration_ms=4_000)} == names
    assert {t.transactional_id for t in c.list(set(), set(), min_duration_ms=6_000)} == names - {"open"}
    far = c.describe("x1")[1].last_update_ms + c.settings.id_expiration_ms  # type: ignore[union-attr]
    assert await c.expire_ids(far + 1) == 3  # the open one stays
    assert c.describe("x1")[0] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    restarted, _, _ = make(log)  # the tombstones are replayed too
    assert {t.transactional_id for t in restarted.list(set(), set())} == {"open"}


async def test_not_coordinator_after_resign() -> None:
    c, _, _ = make()
    await c.init_producer_id("t", 10_000, None)
    c.resign(c.partition_for("t"))
    assert c.describe("t")[0] == ErrorCode.NOT_COORDINATOR
    assert (await c.init_producer_id("t", 10_000, None))[0] == ErrorCode.NOT_COORDINATOR


async def test_v2_end_bumps_the_epoch_markers_included() -> None:
    """Transactions v2 (EndTxn v5): every commit or abort moves the producer to the next epoch,
    the markers carry it, and the answer tells the producer; Kafka's retry table holds."""
    c, log, markers = make()
    _, pid, epoch = await c.init_producer_id("t", 10_000, None)
    assert await c.add_partitions("t", pid, epoch, frozenset({("a", 0)}), 2) == ErrorCode.NONE
    assert await c.end_transaction_v2("t", pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    await settle(c)
    assert markers.written == [(pid, epoch + 1, True, 7, frozenset({("a", 0)}))]
    values = [decode_value(v) for records in log.records.values() for _, v in records if v is not None]
    assert [(v.status, v.producer_epoch, v.client_tv) for v in values] == [
        (TxnState.EMPTY, epoch, 0),
        (TxnState.ONGOING, epoch, 2),
        (TxnState.PREPARE_COMMIT, epoch + 1, 2),
        (TxnState.COMPLETE_COMMIT, epoch + 1, 2),
    ]
    assert await c.end_transaction_v2("t", pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)  # a retry
    assert await c.end_transaction_v2("t", pid, epoch, False) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    assert await c.end_transaction_v2("t", pid, epoch + 1, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    # an abort with nothing added is allowed and bumps too; it has no partition to mark
    assert await c.end_transaction_v2("t", pid, epoch + 1, False) == (ErrorCode.NONE, pid, epoch + 2)
    await settle(c)
    assert markers.written[1:] == [(pid, epoch + 2, False, 7, frozenset())]
    assert c.describe("t")[1].state is TxnState.COMPLETE_ABORT  # type: ignore[union-attr]
    assert await c.add_partitions("t", pid, epoch + 1, frozenset({("a", 0)}), 2) == ErrorCode.PRODUCER_FENCED


async def test_v2_epoch_exhaustion_moves_to_a_new_producer_id() -> None:
    c, log, markers = make()
    markers.gate = asyncio.Event()
    _, pid, _ = await c.init_producer_id("t", 10_000, None)
    c._txns["t"].producer_epoch = 32766  # as after 32,766 transactions
    assert await c.add_partitions("t", pid, 32766, frozenset({("a", 0)}), 2) == ErrorCode.NONE
    assert await c.end_transaction_v2("t", pid, 32766, True) == (ErrorCode.NONE, 1001, 0)
    # the coordinator dies before the markers: the next one finishes the move from the log
    c.close()
    restarted, _, markers2 = make(log)
    await settle(restarted)
    assert markers2.written == [(pid, 32767, True, 7, frozenset({("a", 0)}))]
    txn = restarted.describe("t")[1]
    assert txn is not None and (txn.producer_id, txn.producer_epoch, txn.previous_producer_id) == (
        1001,
        0,
        pid,
    )
    # the old id's retry is still recognised, after another restart too
    again, _, _ = make(log)
    assert await again.end_transaction_v2("t", pid, 32766, True) == (ErrorCode.NONE, 1001, 0)
    assert await again.add_partitions("t", 1001, 0, frozenset({("a", 0)}), 2) == ErrorCode.NONE
