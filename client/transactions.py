"""Kafka transactions for the bundled producer: `TransactionManager`.

A producer configured with ``transactional.id`` owns one manager; its
transactional methods (`init_transactions`, `begin_transaction`,
`send_offsets_to_transaction`, `commit_transaction`, `abort_transaction`)
delegate here. The behaviour is that of Kafka's Java TransactionManager for
transaction versions 0 and 1 (no KIP-890: the client adds partitions itself
and the coordinator writes the markers). It keeps to that protocol against a
broker that finalizes ``transaction.version`` 2 (Kafka 4.1, minikafka), which
serves it alongside transactions v2; Java's would switch to v2 there.

States::

    UNINITIALIZED -init_transactions-> INITIALIZING -> READY
    READY -begin_transaction-> IN_TRANSACTION
    IN_TRANSACTION -commit_transaction-> COMMITTING -> READY
    IN_TRANSACTION, ABORTABLE_ERROR -abort_transaction-> ABORTING -> READY
    IN_TRANSACTION, COMMITTING -a record or offset commit failed-> ABORTABLE_ERROR
    any -fenced, not authorized, unexpected answer-> FATAL_ERROR (final)

What happens on the wire (`client.txn_requests` has the details):

- init_transactions: InitProducerId(transactional id, transaction.timeout.ms)
  from the transaction coordinator gives the producer id and a new epoch,
  which fences older producers of the id (the coordinator first aborts their
  open transaction).
- The first batch to a partition in a transaction waits until the sender has
  added the partition with AddPartitionsToTxn (every new partition in one
  request); batches carry the transactional bit.
- send_offsets_to_transaction: AddOffsetsToTxn, then TxnOffsetCommit to the
  group's coordinator.
- commit: every buffered batch is sent and acknowledged, then EndTxn(commit).
  abort: batches not sent yet fail with `TransactionAbortedError`, batches in
  flight are awaited, then EndTxn(abort). A transaction that added nothing
  ends without EndTxn, as in Java.

Errors: PRODUCER_FENCED and INVALID_PRODUCER_EPOCH (`ProducerFencedError`),
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_TXN_STATE and unexpected
answers are fatal: buffered records fail and every later call raises the same
exception. A record that fails for good inside a transaction, a rejected
AddPartitionsToTxn or a rejected offset commit make the transaction abortable:
send, send_offsets_to_transaction and commit_transaction raise
`TransactionAbortableError` (the failure is its ``__cause__``) until
abort_transaction. When records that had sequence numbers were lost, the abort
then bumps the epoch (InitProducerId with the current id and epoch, v3+) so
the next transaction's sequences start again at 0.

Blocking calls wait up to ``timeout`` s (default max.block.ms). A call that
times out keeps going in the background: calling the same method again waits
for it, and any other transactional call meanwhile raises `IllegalStateError`.

Threading: everything runs on the producer's event loop except `check_send`
and `add_partition`, which the producer calls from whichever thread sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from client.errors import (
    IllegalStateError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionalIdAuthorizationError,
    UnsupportedVersionError,
    error_for,
)
from client.txn_requests import ACTIVE, FENCED_CODES, PartitionKey, TxnHost, TxnRequests, TxnState
from client.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from protocol.errors import ErrorCode

log = logging.getLogger("client.transactions")

OffsetsArg = Mapping[TopicPartition | tuple[str, int], int | OffsetAndMetadata]
# Failures of a batch that end the producer, not just the transaction.
_FATAL_TYPES = (ProducerFencedError, TransactionalIdAuthorizationError, UnsupportedVersionError)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a background task's exception as seen (its caller may have stopped waiting)."""
    if not task.cancelled():
        task.exception()


def normalize_offsets(offsets: OffsetsArg) -> dict[TopicPartition, OffsetAndMetadata]:
    """``{tp or (topic, partition): offset or OffsetAndMetadata}`` as {TopicPartition: OffsetAndMetadata}."""
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, om in offsets.items():
        key = TopicPartition(*tp)
        out[key] = om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om), "")
    return out


class TransactionManager(TxnRequests):
    """Transaction state and coordinator requests of one transactional producer."""

    def __init__(self, host: TxnHost, config: Mapping[str, Any]) -> None:
        self.host = host
        self.transactional_id: str = config["transactional.id"]
        self._timeout_ms: int = config["transaction.timeout.ms"]
        self._backoff = config["retry.backoff.ms"] / 1000
        self._max_block = config["max.block.ms"] / 1000
        self.state = TxnState.UNINITIALIZED
        self.fatal: KafkaError | None = None
        self.last_error: BaseException | None = None  # why the transaction became abortable
        self._lock = threading.Lock()  # guards the partition sets below (senders run on any thread)
        self._new: set[PartitionKey] = set()  # joined the transaction, AddPartitionsToTxn not sent yet
        self._adding: set[PartitionKey] = set()  # AddPartitionsToTxn in flight
        self._added: set[PartitionKey] = set()  # in the transaction: their batches may be sent
        self._started = False  # the coordinator has a transaction open (partitions or offsets added)
        self._epoch_bump = False  # records with sequence numbers were lost: bump the epoch at abort
        self._coordinator: int | None = None
        self._group_coordinators: dict[str, int] = {}
        self._op: tuple[str, asyncio.Future[Any]] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._add_task: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"<TransactionManager {self.transactional_id!r} {self.state.name}>"

    # -- hooks of the producer ---------------------------------------------------------------------

    def check_send(self) -> None:
        """Raise unless a record may be sent now: only inside a transaction (any thread)."""
        if self.state is not TxnState.IN_TRANSACTION:
            raise self._wrong_state("send")

    def add_partition(self, tp: PartitionKey) -> None:
        """A record for ``tp`` joins the transaction (the producer calls this with its lock held)."""
        if tp in self._added:
            return
        with self._lock:
            if tp not in self._added and tp not in self._adding:
                self._new.add(tp)

    def sendable(self, tp: PartitionKey) -> bool:
        """Whether batches of ``tp`` may be sent: the partition is in the transaction (loop thread)."""
        return tp in self._added and self.fatal is None

    @property
    def dropping(self) -> bool:
        """True when a batch coming back for a retry should fail instead: the transaction is ending badly."""
        return self.state in (TxnState.ABORTING, TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR)

    def poll(self) -> None:
        """From the sender loop: send AddPartitionsToTxn for partitions that joined since the last one."""
        if not self._new or self.state not in ACTIVE:
            return
        if self._add_task is not None and not self._add_task.done():
            return
        with self._lock:
            parts, self._new = self._new, set()
            self._adding |= parts
        self._add_task = self._spawn(self._add_partitions(parts))

    def produce_error(self, code: int, tp: TopicPartition) -> KafkaError:
        """The exception for a Produce error code that fails a batch of the transaction for good."""
        if code in FENCED_CODES:
            return self._fenced(code)
        return error_for(code, context=f"produce to {tp}")

    def batch_failed(self, error: BaseException, numbered: bool) -> None:
        """A batch of the transaction failed for good with ``error`` (``numbered``: it had sequences)."""
        if numbered:
            self._epoch_bump = True
        if isinstance(error, _FATAL_TYPES):
            self._fail_fatal(error)  # type: ignore[arg-type]
        else:
            self._fail_abortable(error)

    async def close(self) -> None:
        """Stop every request of the manager (the producer is closing)."""
        tasks = list(self._tasks)
        if self._op is not None:
            tasks.append(self._op[1])
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    # -- the public operations ---------------------------------------------------------------------

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch of the transactional id, fencing older producers of it."""

        def start() -> Coroutine[Any, Any, None]:
            if self.state is not TxnState.UNINITIALIZED:
                raise IllegalStateError(
                    f"init_transactions() was already called (transaction state {self.state.value})"
                )
            self.state = TxnState.INITIALIZING
            return self._init_producer_id(bump=False)

        await self._operation("init_transactions", start, timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (local only: the coordinator hears of it with the first partition)."""
        self._check_no_pending("begin_transaction")
        if self.state is not TxnState.READY:
            raise self._wrong_state("begin a transaction")
        self.state = TxnState.IN_TRANSACTION

    async def send_offsets_to_transaction(
        self, offsets: OffsetsArg, group: ConsumerGroupMetadata | str, timeout: float | None = None
    ) -> None:
        """Commit consumer offsets as part of the transaction (visible to the group only at commit)."""
        meta = group if isinstance(group, ConsumerGroupMetadata) else ConsumerGroupMetadata(str(group))
        to_commit = normalize_offsets(offsets)

        def start() -> Coroutine[Any, Any, None]:
            if self.state is not TxnState.IN_TRANSACTION:
                raise self._wrong_state("send offsets to the transaction")
            return self._send_offsets(to_commit, meta)

        await self._operation("send_offsets_to_transaction", start, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every buffered record, then commit; `TransactionAbortableError` if a part of it failed."""

        def start() -> Coroutine[Any, Any, None]:
            if self.state not in ACTIVE:  # COMMITTING: a commit cut short (closed) is resumed
                raise self._wrong_state("commit")
            self.state = TxnState.COMMITTING
            return self._commit()

        await self._operation("commit_transaction", start, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not sent yet, wait for those in flight, then abort the transaction."""

        def start() -> Coroutine[Any, Any, None]:
            if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
                raise self._wrong_state("abort")  # ABORTING: an abort that failed is resumed
            self.state = TxnState.ABORTING
            with self._lock:
                self._new.clear()  # nothing more needs adding
            return self._abort()

        await self._operation("abort_transaction", start, timeout)

    # -- operation plumbing ------------------------------------------------------------------------

    def _check_no_pending(self, name: str) -> None:
        if self.fatal is not None:
            raise self.fatal
        if self._op is not None:
            pending, task = self._op
            if not task.done():
                raise IllegalStateError(
                    f"{pending}() did not complete in time and must be called again before {name}()"
                )
            self._op = None

    async def _operation(
        self, name: str, start: Callable[[], Coroutine[Any, Any, None]], timeout: float | None
    ) -> None:
        """Run (or keep waiting for) the operation ``name``; ``start`` checks the state and makes its coroutine."""
        op = self._op
        if op is not None and op[0] == name:
            task = op[1]
        else:
            self._check_no_pending(name)
            task = asyncio.ensure_future(start())
            task.add_done_callback(_retrieve)
            self._op = (name, task)
        wait = self._max_block if timeout is None else timeout
        try:
            async with asyncio.timeout(wait):
                await asyncio.shield(task)
        except TimeoutError:
            raise KafkaTimeoutError(
                f"{name}() did not complete within {wait * 1000:.0f} ms; call it again to keep waiting"
            ) from None
        finally:
            if task.done() and self._op is not None and self._op[1] is task:
                self._op = None

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_retrieve)
        return task

    def _wrong_state(self, action: str) -> KafkaError:
        """The error for attempting ``action`` in the current state."""
        state = self.state
        if self.fatal is not None:
            return self.fatal
        if state is TxnState.ABORTABLE_ERROR:
            return self._abortable(action)
        if state in (TxnState.UNINITIALIZED, TxnState.INITIALIZING):
            why = "call init_transactions() first"
        elif state is TxnState.READY:
            why = "no transaction is in progress (call begin_transaction() first)"
        elif state is TxnState.IN_TRANSACTION:
            why = "a transaction is already in progress"
        elif state is TxnState.COMMITTING:
            why = "the transaction is being committed"
        else:
            why = "the transaction is being aborted"
        return IllegalStateError(f"transactional producer {self.transactional_id!r} cannot {action}: {why}")

    def _abortable(self, action: str) -> TransactionAbortableError:
        exc = TransactionAbortableError(
            f"transactional producer {self.transactional_id!r} cannot {action}: the transaction failed "
            f"({self.last_error}); call abort_transaction()"
        )
        exc.__cause__ = self.last_error
        return exc

    def _fenced(self, code: int) -> ProducerFencedError:
        return ProducerFencedError(
            code,
            "a newer producer with the same transactional.id took over; close this producer",
            context=f"transactional.id {self.transactional_id!r}",
        )

    def _fail_fatal(self, exc: KafkaError) -> KafkaError:
        """Enter FATAL_ERROR (once): buffered records fail with ``exc``; returns the fatal error."""
        if self.fatal is None:
            log.error("transactional producer %r failed: %s", self.transactional_id, exc)
            self.fatal = exc
            self.state = TxnState.FATAL_ERROR
            self.host._abort_queued(exc)
            self.host._wakeup()
        return self.fatal

    def _fail_abortable(self, exc: BaseException) -> KafkaError:
        """Make the transaction abortable (records not sent yet fail); returns what the caller should raise."""
        if self.fatal is not None:
            return self.fatal
        if self.state in ACTIVE:
            log.info("transaction of %r must be aborted: %s", self.transactional_id, exc)
            self.state = TxnState.ABORTABLE_ERROR
            self.last_error = exc
            dropped = TransactionAbortedError(f"record not sent: its transaction failed ({exc})")
            dropped.__cause__ = exc
            if self.host._abort_queued(dropped):
                self._epoch_bump = True
        elif self.state not in (TxnState.ABORTABLE_ERROR, TxnState.ABORTING):
            return self._fail_fatal(exc if isinstance(exc, KafkaError) else KafkaError(str(exc)))
        if self.state is TxnState.ABORTABLE_ERROR:
            return self._abortable("continue")
        return exc if isinstance(exc, KafkaError) else KafkaError(str(exc))

    async def _settle(self) -> None:
        """Wait until every record and request of the transaction is answered (or it has failed)."""
        while True:
            self.poll()
            await self.host.flush()
            tasks = [t for t in self._tasks if not t.done()]
            if tasks:
                await asyncio.wait(tasks)
            if self.state not in ACTIVE and self.state is not TxnState.ABORTING:
                return
            with self._lock:
                more = bool(self._new or self._adding)
            if not more and not self.host._has_incomplete():
                return
            await asyncio.sleep(0.001)

    async def _commit(self) -> None:
        await self._settle()
        if self.fatal is not None:
            raise self.fatal
        if self.state is TxnState.ABORTABLE_ERROR:
            raise self._abortable("commit")
        if self._started:
            await self._end_txn(True)
        self._completed()

    async def _abort(self) -> None:
        dropped = TransactionAbortedError("record not sent: its transaction was aborted")
        if self.host._abort_queued(dropped):
            self._epoch_bump = True
        await self._settle()
        if self.fatal is not None:
            raise self.fatal
        last = self.last_error
        keep_id = not (
            isinstance(last, KafkaResponseError) and last.code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
        if self._started and keep_id:
            keep_id = await self._end_txn(False)
        if self._epoch_bump or not keep_id:
            await self._init_producer_id(bump=True, keep_id=keep_id)
        self._completed()

    def _completed(self) -> None:
        with self._lock:
            self._new.clear()
            self._adding.clear()
            self._added.clear()
        self._started = False
        self.last_error = None
        self.state = TxnState.READY
