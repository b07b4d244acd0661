"""A transactional id's state at its coordinator, and Kafka's rules for moving it.

States (Kafka's TransactionState; the number is the status byte of the log value):

    0 Empty           no transaction since the producer's InitProducerId
    1 Ongoing         partitions added; data may be written
    2 PrepareCommit   EndTxn(commit) recorded; markers being written
    3 PrepareAbort    EndTxn(abort), a timeout or a fencing recorded; markers being written
    4 CompleteCommit  every marker written
    5 CompleteAbort
    6 Dead            expired (never written: the id's tombstone stands for it)
    7 PrepareEpochFence  transient in Kafka, never persisted

Epochs (Kafka's prepareIncrementProducerEpoch): InitProducerId with no current
producer bumps the epoch; with the current epoch bumps it and remembers the
old one as ``last_producer_epoch``; with ``last_producer_epoch`` (a retry of
a bump whose answer was lost) returns the current epoch unchanged; anything
else is PRODUCER_FENCED. An epoch at ``EPOCH_EXHAUSTED`` moves the id to a new
producer id at epoch 0; when the request named the exhausted epoch, the move
remembers the old id as ``previous_producer_id`` and the exhausted epoch as
``last_producer_epoch``, so a retry naming them (its answer was lost) gets the
new id and epoch 0 again. Fencing an open transaction of transaction version 0
or 1 (a new InitProducerId, a timeout) bumps the epoch and forgets
``last_producer_epoch``, so the old producer can never come back; one of
version 2 is aborted as any v2 abort (`fenced_epochs`).

Transactions v2 (KIP-890 part 2: EndTxn v5) bump the epoch at every commit
or abort instead (`end_epoch`): the Prepare* record and the markers carry
epoch + 1 and remember the old one as ``last_producer_epoch``, and the
producer goes on with the epoch EndTxn v5 answers. An epoch at
``EPOCH_EXHAUSTED`` ends its transaction at ``EPOCH_EXHAUSTED + 1`` with a
``next_producer_id`` allocated at once, which the id moves to (epoch 0) when
the transaction completes; ``previous_producer_id`` then names the old one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import IntEnum

from broker.txn.records import TxnValue

EPOCH_EXHAUSTED = 32766  # Short.MaxValue - 1: the last epoch a producer id may use
TRANSACTIONS_V2 = 2  # transaction.version of KIP-890 part 2 (EndTxn v5, implicit adds)
NO_EPOCH = -1


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use."""
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}
PREPARING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
COMPLETE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})


@dataclass(slots=True)
class TxnMetadata:
    """One transactional id (mutated only once the log has the new state: `apply`)."""

    transactional_id: str
    partition: int  # of __transaction_state
    producer_id: int
    producer_epoch: int = NO_EPOCH
    last_producer_epoch: int = NO_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[tuple[str, int]] = frozenset()
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = -1  # the id replaced at epoch exhaustion (transactions v2)
    next_producer_id: int = -1  # the id replacing this one once the prepared transaction completes
    client_tv: int = 0  # transaction version of the requests driving the transaction (0 or 2)
    holds: int = 0  # writes or marker rounds of this id in flight
    persisted: bool = False  # the log holds a value for it
    pending_add: TxnChange | None = None  # the newest AddPartitions change being written
    idle_waiters: list[asyncio.Future[None]] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.holds > 0

    def hold(self) -> None:
        self.holds += 1

    def release(self) -> None:
        """One write or marker round ended; when none is left, wake the requests waiting for that
        (`TransactionCoordinator._idle`)."""
        self.holds -= 1
        if self.holds:
            return
        self.pending_add = None
        waiters, self.idle_waiters = self.idle_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def value(self) -> TxnValue:
        return TxnValue(
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            int(self.state),
            self.partitions,
            self.last_update_ms,
            self.start_ms,
            self.previous_producer_id,
            self.next_producer_id,
            self.client_tv,
        )

    def apply(self, change: TxnChange) -> None:
        for name in TxnChange.__slots__:
            value = getattr(change, name)
            if value is not None:
                setattr(self, name, value)
        self.persisted = True

    def would_be(self, change: TxnChange) -> TxnValue:
        """The log value after ``change``."""
        copy = TxnMetadata(self.transactional_id, self.partition, self.producer_id)
        for name in TxnMetadata.__slots__:
            if name not in ("idle_waiters", "pending_add"):
                setattr(copy, name, getattr(self, name))
        copy.apply(change)
        return copy.value()


@dataclass(slots=True)
class TxnChange:
    """Fields a transition sets (None: unchanged)."""

    producer_id: int | None = None
    producer_epoch: int | None = None
    last_producer_epoch: int | None = None
    timeout_ms: int | None = None
    state: TxnState | None = None
    partitions: frozenset[tuple[str, int]] | None = None
    last_update_ms: int | None = None
    start_ms: int | None = None
    previous_producer_id: int | None = None
    next_producer_id: int | None = None
    client_tv: int | None = None


def metadata_from(transactional_id: str, partition: int, v: TxnValue) -> TxnMetadata:
    """An id as replayed from its log value."""
    return TxnMetadata(
        transactional_id,
        partition,
        v.producer_id,
        v.producer_epoch,
        NO_EPOCH,
        v.timeout_ms,
        TxnState(v.status) if v.status in _NAMES else TxnState.DEAD,
        v.partitions,
        v.last_update_ms,
        v.start_ms,
        v.previous_producer_id,
        v.next_producer_id,
        v.client_tv,
        persisted=True,
    )


@dataclass(frozen=True, slots=True)
class EpochBump:
    """What InitProducerId gives a producer: a new epoch (or a new id), or a fencing error code."""

    producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    new_id: bool = False


def next_epoch(txn: TxnMetadata, expected_epoch: int | None) -> EpochBump | None:
    """InitProducerId's epoch for a complete (Empty/Complete*) id; None means PRODUCER_FENCED."""
    if txn.producer_epoch >= EPOCH_EXHAUSTED and expected_epoch in (None, txn.producer_epoch):
        return EpochBump(-1, 0, NO_EPOCH if expected_epoch is None else txn.producer_epoch, new_id=True)
    if expected_epoch is None:
        return EpochBump(txn.producer_id, txn.producer_epoch + 1, NO_EPOCH)
    if txn.producer_epoch == NO_EPOCH or expected_epoch == txn.producer_epoch:
        return EpochBump(txn.producer_id, txn.producer_epoch + 1, txn.producer_epoch)
    if expected_epoch == txn.last_producer_epoch:
        return EpochBump(txn.producer_id, txn.producer_epoch, txn.last_producer_epoch)
    return None


def end_epoch(txn: TxnMetadata) -> int:
    """The epoch a transactions-v2 commit or abort moves ``txn`` to (and writes its markers with)."""
    return min(txn.producer_epoch + 1, EPOCH_EXHAUSTED + 1)


def fenced_epochs(txn: TxnMetadata) -> tuple[int, int]:
    """(epoch, last epoch) an open transaction is aborted with when its producer is fenced or times
    out. Transaction versions 0 and 1 bump the epoch and forget the last one; version 2 ends it as
    any of its aborts (`end_epoch`), remembering the producer's epoch, as Kafka's endTransaction
    does for a fence there: that producer may still abort with it (EndTxn v5) or name it in
    InitProducerId (KIP-360) and go on with the new epoch, until an InitProducerId or a v2 commit
    or abort moves the epochs on (or the coordinator reloads the id: the log does not keep it)."""
    if txn.client_tv >= TRANSACTIONS_V2:
        return end_epoch(txn), txn.producer_epoch
    epoch = txn.producer_epoch if txn.producer_epoch >= EPOCH_EXHAUSTED + 1 else txn.producer_epoch + 1
    return epoch, NO_EPOCH
