"""The transaction coordinator: transactional ids, their producer epochs and transactions.

Kafka's TransactionCoordinator (KIP-98, KIP-360, KIP-588, KIP-890), on the
`__transaction_state` partitions this broker leads:

- The coordinator of an id is the leader of partition
  ``abs(javaHashCode(id)) % transaction.state.log.num.partitions``; ids of a
  partition this broker does not lead answer NOT_COORDINATOR, of one still
  being replayed COORDINATOR_LOAD_IN_PROGRESS.
- Every transition is written to the log (`broker.txn.log`) before it counts
  and before the client is answered; while one is in flight (or markers are
  being written) other requests for the id answer CONCURRENT_TRANSACTIONS.
- InitProducerId: a new id gets a producer id and epoch 0; a known one with no
  open transaction a bumped epoch (`broker.txn.state.next_epoch`); one with an
  open transaction is fenced: the transaction is aborted with a bumped epoch
  and the request answered CONCURRENT_TRANSACTIONS (the client retries and
  then gets the next epoch). A timeout above ``transaction.max.timeout.ms``
  (or not positive) is INVALID_TRANSACTION_TIMEOUT; an empty id INVALID_REQUEST.
- AddPartitionsToTxn / AddOffsetsToTxn: producer id and epoch must be the
  id's (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED); during PrepareCommit /
  PrepareAbort: CONCURRENT_TRANSACTIONS; otherwise the partitions join the
  transaction, which becomes Ongoing (starting its timeout clock).
- EndTxn: Ongoing -> PrepareCommit/PrepareAbort (answered once written), then
  the markers are written to every partition (`broker.txn.markers`) and the
  id moves to CompleteCommit/CompleteAbort. A retried EndTxn of a completed
  transaction with the same result succeeds; of one still preparing answers
  CONCURRENT_TRANSACTIONS; anything else INVALID_TXN_STATE.
- Transactions v2 (KIP-890 part 2; `end_transaction_v2` for EndTxn v5, and
  ``client_tv=2`` adds from partition leaders and group coordinators for
  Produce v12+ / TxnOffsetCommit v5): each commit or abort bumps the epoch,
  markers included, and answers the epoch the producer goes on with.
- Ongoing transactions older than their timeout are aborted with a bumped
  epoch (so their producer is fenced) every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``; ids in
  Empty/Complete* idle for ``transactional.id.expiration.ms`` are removed
  (a tombstone) every ``transaction.remove.expired.transaction.cleanup.interval.ms``.
- Replay (`load`, `elect`): the last value of each id wins; ids found in
  PrepareCommit/PrepareAbort get their markers written again (a crash
  between the prepare record and the markers completes after restart).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from broker.groups.hashing import partition_for
from broker.txn.records import decode_key, decode_value, encode_key, encode_value
from broker.txn.state import (
    COMPLETE,
    EPOCH_EXHAUSTED,
    PREPARING,
    TRANSACTIONS_V2,
    TxnChange,
    TxnMetadata,
    TxnState,
    end_epoch,
    fenced_epochs,
    metadata_from,
    next_epoch,
)
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("minikafka.txn")

TopicPartition = tuple[str, int]
IDLE_WAIT_S = 1.0


class TxnStore(Protocol):
    """What the coordinator writes to (`broker.txn.log.TxnLog`)."""

    @property
    def num_partitions(self) -> int: ...

    def coordinator_epoch(self, partition: int) -> int: ...

    def read(self, partition: int) -> Any: ...

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode: ...

    def record(self, partition: int, key: bytes, value: bytes | None) -> None: ...


class Markers(Protocol):
    """Writes a transaction's markers on its partitions (`broker.txn.markers.MarkerWriter`)."""

    async def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        still_coordinator: Callable[[], bool],
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class TxnSettings:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    abort_check_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    expiry_check_interval_ms: int = 3_600_000  # transaction.remove.expired.transaction.cleanup.interval.ms


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TransactionCoordinator:
    def __init__(
        self,
        settings: TxnSettings,
        store: TxnStore,
        markers: Markers,
        allocate_producer_id: Callable[[], int],
    ) -> None:
        self.settings = settings
        self._store = store
        self._markers = markers
        self._allocate = allocate_producer_id
        self._txns: dict[str, TxnMetadata] = {}
        self._owned: dict[int, int] = {}  # partition -> coordinator epoch
        self._loading: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- ownership ----------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._store.num_partitions)

    def load_all(self) -> None:
        """Single broker: replay every partition now, before the server accepts connections."""
        for partition in range(self._store.num_partitions):
            self.elect(partition)
        log.info("loaded %d transactional ids from __transaction_state", len(self._txns))

    def elect(self, partition: int) -> None:
        """This broker now leads ``partition``: replay it and coordinate its ids."""
        if partition in self._owned:
            return
        self._loading.add(partition)
        try:
            values: dict[str, TxnMetadata] = {}
            for key, value in self._store.read(partition):
                try:
                    txn_id = decode_key(key)
                    if value is None:
                        values.pop(txn_id, None)
                    else:
                        values[txn_id] = metadata_from(txn_id, partition, decode_value(value))
                except ProtocolError as exc:
                    log.warning("__transaction_state-%d: skipping an unreadable record: %s", partition, exc)
        finally:
            self._loading.discard(partition)
        self._owned[partition] = self._store.coordinator_epoch(partition)
        self._txns.update(values)
        for txn in values.values():
            if txn.state in PREPARING:
                self._spawn(self._complete(txn, txn.state is TxnState.PREPARE_COMMIT))

    def resign(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: forget its ids."""
        if self._owned.pop(partition, None) is None:
            return
        for txn_id in [t for t, m in self._txns.items() if m.partition == partition]:
            del self._txns[txn_id]

    def _check(self, transactional_id: str) -> ErrorCode | None:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST  # Kafka answers it before looking for the id
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned or self._closed:
            return ErrorCode.NOT_COORDINATOR
        return None

    def ownership_error(self, transactional_id: str) -> ErrorCode:
        """NONE if this broker coordinates ``transactional_id``; else NOT_COORDINATOR, or
        COORDINATOR_LOAD_IN_PROGRESS while its partition is being replayed."""
        error = self._check(transactional_id)
        return ErrorCode.NONE if error is None else error

    def _owns(self, txn: TxnMetadata) -> bool:
        return (
            not self._closed and self._txns.get(txn.transactional_id) is txn and txn.partition in self._owned
        )

    async def _write(self, txn: TxnMetadata, change: TxnChange) -> ErrorCode:
        """Persist ``change``; apply it only once durable. The id is busy meanwhile.

        ``previous_producer_id`` names the id replaced by the last transition only: any other
        transition clears it (Kafka rewrites it at every transition), so a stale producer of an
        old id is not taken for a retry later on."""
        if change.previous_producer_id is None:
            change.previous_producer_id = -1
        txn.hold()
        try:
            code = await self._store.write(
                txn.partition, encode_key(txn.transactional_id), encode_value(txn.would_be(change))
            )
        finally:
            txn.release()
        if code == ErrorCode.NONE and self._owns(txn):
            txn.apply(change)
            return code
        if code == ErrorCode.NONE:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NOT_COORDINATOR if code == ErrorCode.NOT_LEADER_OR_FOLLOWER else code

    # -- InitProducerId -----------------------------------------------------------------------
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch); ``expected``: the producer's current (id, epoch), KIP-360."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        error = self._check(transactional_id)
        if error is not None:
            return error, -1, -1
        txn = self._txns.get(transactional_id)
        if txn is None:
            txn = TxnMetadata(transactional_id, self.partition_for(transactional_id), self._allocate())
            self._txns[transactional_id] = txn
        elif not await self._idle(txn):
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        # before the producer check, as Kafka: its pending-transition check comes first, and a
        # Prepare* id has one (to Complete*) from the moment the prepare is durable
        if txn.busy or txn.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if expected is not None and not self._valid_producer(txn, expected):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if txn.state is TxnState.ONGOING:
            code = await self._abort(txn)
            return (ErrorCode.CONCURRENT_TRANSACTIONS if code == ErrorCode.NONE else code), -1, -1
        bump = next_epoch(txn, expected[1] if expected is not None else None)
        if bump is None:
            return ErrorCode.PRODUCER_FENCED, -1, -1
        producer_id = self._allocate() if bump.new_id else bump.producer_id
        change = TxnChange(
            previous_producer_id=txn.producer_id if bump.new_id else None,
            producer_id=producer_id,
            producer_epoch=bump.producer_epoch,
            last_producer_epoch=bump.last_producer_epoch,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            last_update_ms=_now_ms(),
            start_ms=-1,
        )
        code = await self._write(txn, change)
        if code != ErrorCode.NONE:
            if not txn.persisted and self._txns.get(transactional_id) is txn:
                del self._txns[transactional_id]
            return code, -1, -1
        return ErrorCode.NONE, txn.producer_id, txn.producer_epoch

    @staticmethod
    def _valid_producer(txn: TxnMetadata, expected: tuple[int, int]) -> bool:
        """KIP-360: may a producer naming ``expected`` (id, epoch) go on? A new id, the current
        producer id (its epoch is checked by `next_epoch`), or the id the last InitProducerId moved
        away from at epoch exhaustion (a retry whose answer was lost)."""
        return (
            txn.producer_epoch < 0
            or expected[0] == txn.producer_id
            or (expected[0] == txn.previous_producer_id and expected[1] >= EPOCH_EXHAUSTED)
        )

    # -- AddPartitionsToTxn, AddOffsetsToTxn ------------------------------------------------
    @staticmethod
    def _identity_error(txn: TxnMetadata | None, producer_id: int, producer_epoch: int) -> ErrorCode | None:
        """INVALID_PRODUCER_ID_MAPPING / PRODUCER_FENCED unless the request names the id's producer and epoch."""
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return None

    def _verification_error(
        self, txn: TxnMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """`_identity_error`, else CONCURRENT_TRANSACTIONS while PrepareCommit/PrepareAbort."""
        error = self._identity_error(txn, producer_id, producer_epoch)
        if error is None and txn is not None and txn.state in PREPARING:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return error

    def _producer_error(
        self, txn: TxnMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """`_verification_error`, and CONCURRENT_TRANSACTIONS while a transition is being written."""
        error = self._verification_error(txn, producer_id, producer_epoch)
        if error is None and txn is not None and txn.busy:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return error

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        client_tv: int = 0,
    ) -> ErrorCode:
        """``client_tv``: 2 when the partitions come from a transactions-v2 path (AddPartitionsToTxn
        v4+ from a partition leader or group coordinator, for Produce v12+ / TxnOffsetCommit v5)."""
        error = self._check(transactional_id)
        if error is not None:
            return error
        txn = self._txns.get(transactional_id)
        if txn is not None and txn.pending_add is not None:
            return await self._add_behind(txn, producer_id, producer_epoch, partitions, client_tv)
        if txn is not None:
            await self._idle(txn)
            txn = self._txns.get(transactional_id)
        error = self._producer_error(txn, producer_id, producer_epoch)
        if error is not None:
            return error
        assert txn is not None
        if txn.state is TxnState.ONGOING and partitions <= txn.partitions:
            return ErrorCode.NONE
        now = _now_ms()
        ongoing = txn.state is TxnState.ONGOING
        change = TxnChange(
            state=TxnState.ONGOING,
            partitions=(txn.partitions if ongoing else frozenset()) | partitions,
            last_update_ms=now,
            start_ms=txn.start_ms if ongoing else now,
            client_tv=max(client_tv, txn.client_tv) if ongoing else client_tv,
        )
        txn.pending_add = change
        return await self._write(txn, change)

    async def _add_behind(
        self,
        txn: TxnMetadata,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        client_tv: int,
    ) -> ErrorCode:
        """AddPartitionsToTxn while another one of the same transaction is being written: write the
        union right behind it (one fsync serves both) instead of waiting for it. The records land
        in order and each applies once durable; the later one holds every partition of both."""
        pending = txn.pending_add
        assert pending is not None and pending.partitions is not None
        error = self._identity_error(txn, producer_id, producer_epoch)
        if error is not None:
            return error
        if partitions <= pending.partitions:
            await self._idle(txn)
            return ErrorCode.NONE if partitions <= txn.partitions else ErrorCode.CONCURRENT_TRANSACTIONS
        change = TxnChange(
            state=TxnState.ONGOING,
            partitions=pending.partitions | partitions,
            last_update_ms=_now_ms(),
            start_ms=pending.start_ms,
            client_tv=max(client_tv, pending.client_tv or 0),
        )
        txn.pending_add = change
        return await self._write(txn, change)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """AddPartitionsToTxn v4+ verify_only (Kafka's verifyTransaction): is each partition in the
        open transaction? An error for the whole transaction (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, or
        CONCURRENT_TRANSACTIONS while it is PrepareCommit/PrepareAbort), else per partition NONE or
        TRANSACTION_ABORTABLE. A transition still being written does not matter: partitions count
        once their addition is durable."""
        error = self._check(transactional_id)
        if error is None:
            error = self._verification_error(self._txns.get(transactional_id), producer_id, producer_epoch)
        if error is not None:
            return error, {}
        txn = self._txns[transactional_id]
        return ErrorCode.NONE, {
            tp: ErrorCode.NONE if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in partitions
        }

    def verify_write(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> ErrorCode | None:
        """KIP-890 (part 1), for a leader on this broker of ``tp`` (a partition, or a group's
        `__consumer_offsets` partition): may the producer's first transactional batch there be
        written? None: yes, or this broker is not (yet) the id's coordinator and cannot tell; else
        `verify_partitions`' code (its callers map it to their API's words:
        `broker.txn.verification`). A partition not in the open transaction
        (a late batch of one that ended) would otherwise open a transaction no marker ever closes."""
        error = self._check(transactional_id)
        if error is not None:
            return error if error == ErrorCode.INVALID_REQUEST else None
        txn = self._txns.get(transactional_id)
        error = self._verification_error(txn, producer_id, producer_epoch)
        if error is not None or txn is None:
            return error
        return None if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE

    # -- EndTxn -------------------------------------------------------------------------------
    async def end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        error = self._check(transactional_id)
        if error is not None:
            return error
        txn = self._txns.get(transactional_id)
        if txn is not None:
            await self._idle(txn)
            txn = self._txns.get(transactional_id)
        error = self._identity_error(txn, producer_id, producer_epoch)
        if error is not None or txn is None:
            return error
        if txn.busy:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = txn.state
        if state is TxnState.ONGOING:
            prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            code = await self._write(txn, TxnChange(state=prepare, last_update_ms=_now_ms()))
            if code == ErrorCode.NONE:
                self._spawn(self._complete(txn, commit))
            return code
        if state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return ErrorCode.NONE
        if state is (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE

    async def end_transaction_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> tuple[ErrorCode, int, int]:
        """EndTxn v5 (transactions v2): (error, the producer id and epoch to go on with).

        Every commit or abort bumps the epoch (`broker.txn.state.end_epoch`), so a retry is told
        apart from a zombie by its epoch: one below the id's, or the old id's last epoch after a
        move to a new producer id. Kafka's table: Ongoing ends with the current epoch; Empty and
        Complete* may be aborted again with the current epoch (a producer that never got a
        partition in); a retry of the completed result answers NONE with the id's current producer
        id and epoch, of the one still preparing CONCURRENT_TRANSACTIONS; another result
        INVALID_TXN_STATE; any other epoch PRODUCER_FENCED. Errors answer producer id and epoch -1."""
        failed = -1, -1
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, *failed
        error = self._check(transactional_id)
        if error is not None:
            return error, *failed
        txn = self._txns.get(transactional_id)
        if txn is not None:
            await self._idle(txn)
            txn = self._txns.get(transactional_id)
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, *failed
        if txn.busy:
            return ErrorCode.CONCURRENT_TRANSACTIONS, *failed
        moved = (
            txn.previous_producer_id == producer_id
            and producer_epoch == EPOCH_EXHAUSTED
            and txn.producer_epoch == 0
        )
        if txn.producer_id != producer_id and not moved:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, *failed
        current = not moved and txn.producer_epoch == producer_epoch
        retry = moved or (not current and txn.producer_epoch == producer_epoch + 1)
        state = txn.state
        if state in (TxnState.ONGOING, TxnState.EMPTY):
            valid = current
        elif state in PREPARING:
            valid = retry
        else:
            valid = retry or current
        if not valid:
            return ErrorCode.PRODUCER_FENCED, *failed
        if state is TxnState.ONGOING or (current and not commit):
            return await self._end_v2(txn, commit)
        if retry and state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            return ErrorCode.NONE, txn.producer_id, txn.producer_epoch
        if retry and state is (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, *failed
        return ErrorCode.INVALID_TXN_STATE, *failed

    async def _end_v2(self, txn: TxnMetadata, commit: bool) -> tuple[ErrorCode, int, int]:
        """Prepare the commit or abort with a bumped epoch (a new producer id waiting at exhaustion)."""
        now = _now_ms()
        epoch = end_epoch(txn)
        next_id = self._allocate() if txn.producer_epoch >= EPOCH_EXHAUSTED else -1
        change = TxnChange(
            producer_epoch=epoch,
            last_producer_epoch=txn.producer_epoch,
            state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            last_update_ms=now,
            next_producer_id=next_id,
            client_tv=TRANSACTIONS_V2,
        )
        if txn.state is not TxnState.ONGOING:  # an abort with no partition added
            change.partitions = frozenset()
            change.start_ms = now
        code = await self._write(txn, change)
        if code != ErrorCode.NONE:
            return code, -1, -1
        self._spawn(self._complete(txn, commit))
        return (ErrorCode.NONE, next_id, 0) if next_id >= 0 else (ErrorCode.NONE, txn.producer_id, epoch)

    async def _abort(self, txn: TxnMetadata) -> ErrorCode:
        """Abort ``txn``'s open transaction, fencing its producer (`fenced_epochs`)."""
        epoch, last_epoch = fenced_epochs(txn)
        change = TxnChange(
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            state=TxnState.PREPARE_ABORT,
            last_update_ms=_now_ms(),
        )
        code = await self._write(txn, change)
        if code == ErrorCode.NONE:
            self._spawn(self._complete(txn, False))
        return code

    async def _complete(self, txn: TxnMetadata, commit: bool) -> None:
        """Write the markers of a prepared transaction, then record it complete.

        The id is Complete* (and free for its next transaction) as soon as every
        marker is durable. The Complete* record is not fsynced on its own: the
        next durable write of its log (the id's next transition, at the latest)
        carries it, and if a crash loses it first, the replayed Prepare* writes
        the markers again.
        """
        txn.hold()
        try:
            await self._markers.write(
                txn.producer_id,
                txn.producer_epoch,
                commit,
                self._owned.get(txn.partition, -1),
                txn.partitions,
                lambda: self._owns(txn),
            )
            if not self._owns(txn):
                return
            done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            change = TxnChange(state=done, partitions=frozenset(), last_update_ms=_now_ms())
            if txn.next_producer_id >= 0:  # transactions v2 at epoch exhaustion: the new id takes over
                change.previous_producer_id = txn.producer_id
                change.producer_id = txn.next_producer_id
                change.producer_epoch = 0
                change.next_producer_id = -1
            txn.apply(change)
        finally:
            txn.release()
        # queued now, before any request woken above runs: the log keeps the order of transitions
        if self._owns(txn):
            self._store.record(txn.partition, encode_key(txn.transactional_id), encode_value(txn.value()))

    async def _idle(self, txn: TxnMetadata, timeout_s: float = IDLE_WAIT_S) -> bool:
        """Wait (up to ``timeout_s``) until no write or markers of ``txn`` are in flight.

        Kafka answers CONCURRENT_TRANSACTIONS at once and the client retries after a
        backoff; waiting here for the few milliseconds the markers take gives the same
        outcome sooner. Returns whether ``txn`` is idle.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while txn.busy:
            left = deadline - loop.time()
            if left <= 0:
                return False
            fut: asyncio.Future[None] = loop.create_future()
            txn.idle_waiters.append(fut)
            try:
                async with asyncio.timeout(left):
                    await fut
            except TimeoutError:
                return False
        return True

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("transaction completion failed", exc_info=task.exception())

    # -- timeouts and expiry ------------------------------------------------------------------
    async def abort_timed_out(self, now_ms: int | None = None) -> int:
        """Abort every Ongoing transaction past its timeout; returns how many."""
        now = _now_ms() if now_ms is None else now_ms
        doomed = [
            t
            for t in self._txns.values()
            if t.state is TxnState.ONGOING and not t.busy and t.start_ms + t.timeout_ms < now
        ]
        for txn in doomed:
            log.info("aborting the timed-out transaction of %s", txn.transactional_id)
            await self._abort(txn)
        return len(doomed)

    async def expire_ids(self, now_ms: int | None = None) -> int:
        """Forget ids idle in Empty/Complete* for ``transactional.id.expiration.ms``; returns how many."""
        now = _now_ms() if now_ms is None else now_ms
        doomed = [
            t
            for t in self._txns.values()
            if t.state in COMPLETE and not t.busy and t.last_update_ms + self.settings.id_expiration_ms <= now
        ]
        for txn in doomed:
            txn.hold()
            try:
                code = await self._store.write(txn.partition, encode_key(txn.transactional_id), None)
            finally:
                txn.release()
            if code == ErrorCode.NONE and self._txns.get(txn.transactional_id) is txn:
                del self._txns[txn.transactional_id]
        return len(doomed)

    async def run_timers(self) -> None:
        """Run the abort and expiry checks on their intervals until cancelled."""
        s = self.settings
        next_abort = next_expiry = 0.0
        loop = asyncio.get_running_loop()
        while not self._closed:
            now = loop.time()
            if now >= next_abort:
                await self.abort_timed_out()
                next_abort = now + s.abort_check_interval_ms / 1000
            if now >= next_expiry:
                await self.expire_ids()
                next_expiry = now + s.expiry_check_interval_ms / 1000
            await asyncio.sleep(max(0.0, min(next_abort, next_expiry) - loop.time()))

    # -- describing ---------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> tuple[ErrorCode, TxnMetadata | None]:
        error = self._check(transactional_id)
        if error is not None:
            return error, None
        txn = self._txns.get(transactional_id)
        if txn is None or not txn.persisted:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, txn

    def list(
        self,
        states: set[str],
        producer_ids: set[int],
        min_duration_ms: int = -1,
        pattern: re.Pattern[str] | None = None,
    ) -> list[TxnMetadata]:
        """ListTransactions: ids matching every filter given (empty filter: all)."""
        now = _now_ms()
        out = []
        for txn in self._txns.values():
            if not txn.persisted:
                continue
            if states and txn.state.kafka_name not in states:
                continue
            if producer_ids and txn.producer_id not in producer_ids:
                continue
            # Kafka's rule: started more than that long ago, in any state (an id that never had a
            # transaction has start -1, so it always passes)
            if min_duration_ms >= 0 and now - txn.start_ms <= min_duration_ms:
                continue
            if pattern is not None and pattern.fullmatch(txn.transactional_id) is None:
                continue
            out.append(txn)
        return out

    def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()

    async def drain(self) -> None:
        """Wait for the completions in flight (tests, shutdown)."""
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
