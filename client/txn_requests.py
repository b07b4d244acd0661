"""The coordinator requests of a transactional producer (the request half of `client.transactions`).

`TxnRequests` is the base of `client.transactions.TransactionManager`: it finds
the coordinators, builds each request, retries what Kafka's Java client
retries and classifies every error code the way it does (transaction versions
0 and 1, no KIP-890):

- The transaction coordinator is found with FindCoordinator (key_type 1) and
  looked up again after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a lost
  connection; its requests travel on a connection of their own. A group's
  coordinator (key_type 0) is found the same way for TxnOffsetCommit.
- InitProducerId(transactional id, transaction.timeout.ms; v3+: the current
  producer id and epoch for an epoch bump), AddPartitionsToTxn (v0-3),
  AddOffsetsToTxn, TxnOffsetCommit (v3+: the member's generation and id),
  EndTxn.
- Retried after retry.backoff.ms until answered: CONCURRENT_TRANSACTIONS (20
  ms for a transaction's first AddPartitionsToTxn: the previous transaction's
  markers are usually just being written), COORDINATOR_LOAD_IN_PROGRESS, the
  other retriable codes, lost connections and timeouts.
- Fatal (`_fail_fatal`): PRODUCER_FENCED and INVALID_PRODUCER_EPOCH
  (`ProducerFencedError`), TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  INVALID_TXN_STATE, a broker without the API, any unexpected code.
- Abortable (`_fail_abortable`): UNKNOWN_PRODUCER_ID,
  INVALID_PRODUCER_ID_MAPPING, authorization of topics and groups, partitions
  AddPartitionsToTxn could not add, and, from TxnOffsetCommit,
  UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION (`CommitFailedError`) and
  FENCED_INSTANCE_ID.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from client.cluster import Cluster
from client.connection import BrokerConnection
from client.errors import (
    RETRIABLE_CODES,
    CommitFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    ProducerFencedError,
    UnsupportedVersionError,
    error_for,
)
from client.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition, offsets_by_topic
from protocol.errors import ErrorCode

log = logging.getLogger("client.transactions")

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
FIRST_ADD_PARTITIONS_BACKOFF = 0.02  # Java's ADD_PARTITIONS_RETRY_BACKOFF_MS

PartitionKey = tuple[str, int]

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
FENCED_CODES = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})
_ABORTABLE = frozenset(
    {
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }
)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


class TxnState(enum.Enum):
    """The transaction states of Kafka's TransactionManager (the values are its names)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING = "COMMITTING_TRANSACTION"
    ABORTING = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


ACTIVE = (TxnState.IN_TRANSACTION, TxnState.COMMITTING)


class TxnHost(Protocol):
    """What the manager needs of its producer (`client.producer.AIOProducer` provides it)."""

    @property
    def cluster(self) -> Cluster: ...

    def _producer_id_and_epoch(self) -> tuple[int, int]: ...

    def _set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        """Use this id and epoch from now on, every partition's sequence starting again at 0."""

    def _abort_queued(self, error: BaseException) -> bool:
        """Fail every batch not in flight with ``error``; True if one of them had sequence numbers."""

    def _has_incomplete(self) -> bool: ...

    def _wakeup(self) -> None: ...

    async def flush(self, timeout: float | None = None) -> None: ...


class Retry(Exception):
    """A retriable answer: wait ``backoff`` s (None: retry.backoff.ms) and send again."""

    def __init__(self, why: object, backoff: float | None = None) -> None:
        super().__init__(str(why))
        self.backoff = backoff


class TxnRequests:
    """Coordinator lookups and requests; `client.transactions.TransactionManager` supplies the state."""

    host: TxnHost
    transactional_id: str
    state: TxnState
    _timeout_ms: int
    _backoff: float
    _lock: threading.Lock
    _adding: set[PartitionKey]
    _added: set[PartitionKey]
    _started: bool
    _epoch_bump: bool
    _coordinator: int | None
    _group_coordinators: dict[str, int]

    if TYPE_CHECKING:

        def _fail_fatal(self, exc: KafkaError) -> KafkaError: ...

        def _fail_abortable(self, exc: BaseException) -> KafkaError: ...

        def _fenced(self, code: int) -> ProducerFencedError: ...

        def _wrong_state(self, action: str) -> KafkaError: ...

    def _check(self, code: int, what: str) -> None:
        """Classify a coordinator's error code: return (none), `Retry`, or raise the fatal/abortable error."""
        if code == ErrorCode.NONE:
            return
        if code in _COORDINATOR_MOVED:
            self._coordinator_dead(ErrorCode(code).name)
            raise Retry(error_for(code, context=what))
        if code in RETRIABLE_CODES:
            raise Retry(error_for(code, context=what))
        if code in FENCED_CODES:
            raise self._fail_fatal(self._fenced(code))
        if code in _ABORTABLE:
            raise self._fail_abortable(error_for(code, context=what))
        raise self._fail_fatal(error_for(code, context=what))

    def _require_active(self, action: str) -> None:
        if self.state not in ACTIVE:
            raise self._wrong_state(action)

    # -- coordinators ------------------------------------------------------------------------------

    def _coordinator_dead(self, why: object) -> None:
        if self._coordinator is not None:
            log.info(
                "transaction coordinator %s of %r unavailable (%s)",
                self._coordinator,
                self.transactional_id,
                why,
            )
            self.host.cluster.drop(("coordinator", self._coordinator))
        self._coordinator = None

    async def _find(self, key: str, key_type: int) -> int:
        """The coordinator of ``key``, asking until one is named; non-retriable answers are fatal."""
        while True:
            try:
                return await self.host.cluster.find_coordinator(key, key_type)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                why: KafkaError = exc
            except KafkaResponseError as exc:
                if not exc.retriable:
                    raise self._fail_fatal(exc) from None
                why = exc
            log.debug("FindCoordinator %r (key type %s): %s", key, key_type, why)
            await asyncio.sleep(self._backoff)

    async def _txn_request(self, api_key: int, body: Callable[[BrokerConnection], dict[str, Any]]) -> Any:
        """Send to the transaction coordinator; a lost connection raises `Retry` (after a new lookup)."""
        if self._coordinator is None:
            self._coordinator = await self._find(self.transactional_id, TRANSACTION_KEY_TYPE)
        node = self._coordinator
        try:
            conn = await self.host.cluster.connection(("coordinator", node))
            return await conn.send(api_key, body(conn), timeout=self.host.cluster.request_timeout)
        except UnsupportedVersionError as exc:
            raise self._fail_fatal(exc) from None
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            self._coordinator_dead(exc)
            raise Retry(exc) from None

    def _ids(self) -> dict[str, Any]:
        pid, epoch = self.host._producer_id_and_epoch()
        return {"transactional_id": self.transactional_id, "producer_id": pid, "producer_epoch": epoch}

    # -- the requests ------------------------------------------------------------------------------

    async def _init_producer_id(self, *, bump: bool, keep_id: bool = True) -> None:
        """InitProducerId until answered; ``bump``: an epoch bump after an abort (the state stays ABORTING).

        ``keep_id`` sends the current producer id and epoch (v3+), so that a
        producer fenced meanwhile learns it instead of fencing its successor.
        """
        pid, epoch = self.host._producer_id_and_epoch() if bump and keep_id else (-1, -1)

        def body(conn: BrokerConnection) -> dict[str, Any]:
            out: dict[str, Any] = {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": self._timeout_ms,
            }
            if conn.version(INIT_PRODUCER_ID) >= 3:
                out.update(producer_id=pid, producer_epoch=epoch)
            return out

        while True:
            try:
                resp = await self._txn_request(INIT_PRODUCER_ID, body)
                self._check(resp.error_code, "InitProducerId")
                break
            except Retry as retry:
                log.debug("InitProducerId of %r: %s; retrying", self.transactional_id, retry)
                await asyncio.sleep(self._backoff if retry.backoff is None else retry.backoff)
        self.host._set_producer_id(resp.producer_id, resp.producer_epoch)
        self._epoch_bump = False
        if not bump:
            self.state = TxnState.READY
        log.info(
            "transactional producer %r: producer id %s, epoch %s",
            self.transactional_id,
            resp.producer_id,
            resp.producer_epoch,
        )

    async def _add_partitions(self, parts: set[PartitionKey]) -> None:
        """AddPartitionsToTxn for ``parts`` until added (or the transaction fails meanwhile)."""
        first = not self._added
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(parts):
            by_topic.setdefault(topic, []).append(partition)
        topics = [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
        try:
            while self.state in ACTIVE:
                ids = self._ids()
                body = {
                    "v3_and_below_transactional_id": ids["transactional_id"],
                    "v3_and_below_producer_id": ids["producer_id"],
                    "v3_and_below_producer_epoch": ids["producer_epoch"],
                    "v3_and_below_topics": topics,
                }
                try:
                    resp = await self._txn_request(ADD_PARTITIONS_TO_TXN, lambda _conn, b=body: b)
                    self._added_result(resp, parts, first)
                    return
                except Retry as retry:
                    log.debug("AddPartitionsToTxn of %r: %s; retrying", self.transactional_id, retry)
                    await asyncio.sleep(self._backoff if retry.backoff is None else retry.backoff)
        except KafkaError:
            pass  # the state changed to abortable or fatal: the waiting batches were failed
        finally:
            with self._lock:
                self._adding -= parts
            self.host._wakeup()

    def _added_result(self, resp: Any, parts: set[PartitionKey], first: bool) -> None:
        errors: dict[PartitionKey, int] = {}
        for t in resp.results_by_topic_v3_and_below:
            for p in t.results_by_partition:
                if p.partition_error_code:
                    errors[(t.name, p.partition_index)] = p.partition_error_code
        if not errors:
            with self._lock:
                self._added |= parts
                self._adding -= parts
            self._started = True
            log.debug("added %s to the transaction of %r", sorted(parts), self.transactional_id)
            return
        codes = set(errors.values())
        what = "AddPartitionsToTxn"
        for code in (
            *FENCED_CODES,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ErrorCode.INVALID_TXN_STATE,
        ):
            if code in codes:
                self._check(code, what)
        for code in codes:
            if code in _COORDINATOR_MOVED:
                self._check(code, what)
        if ErrorCode.CONCURRENT_TRANSACTIONS in codes:
            raise Retry("CONCURRENT_TRANSACTIONS", FIRST_ADD_PARTITIONS_BACKOFF if first else None)
        for code in codes:
            if code in RETRIABLE_CODES:
                self._check(code, what)
        listed = ", ".join(f"{t}-{p}: {_name(c)}" for (t, p), c in sorted(errors.items()))
        named = next((c for c in sorted(codes) if c in _ABORTABLE), None)
        if named is not None:
            raise self._fail_abortable(
                error_for(named, context=f"could not add partitions to the transaction ({listed})")
            )
        raise self._fail_abortable(KafkaError(f"could not add partitions to the transaction: {listed}"))

    async def _send_offsets(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], meta: ConsumerGroupMetadata
    ) -> None:
        group = meta.group_id
        what = f"AddOffsetsToTxn for group {group!r}"
        while True:
            self._require_active("send offsets to the transaction")
            try:
                resp = await self._txn_request(
                    ADD_OFFSETS_TO_TXN, lambda _conn: {**self._ids(), "group_id": group}
                )
                self._check(resp.error_code, what)
                break
            except Retry as retry:
                log.debug("%s: %s; retrying", what, retry)
                await asyncio.sleep(self._backoff if retry.backoff is None else retry.backoff)
        self._started = True
        pending = dict(offsets)
        while pending:
            self._require_active("send offsets to the transaction")
            try:
                resp = await self._txn_offset_commit(meta, pending)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("TxnOffsetCommit for group %r: %s; retrying", group, exc)
                self._group_coordinators.pop(group, None)
            else:
                self._offsets_result(resp, pending, group)
            if pending:
                await asyncio.sleep(self._backoff)

    async def _txn_offset_commit(
        self, meta: ConsumerGroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> Any:
        group = meta.group_id
        node = self._group_coordinators.get(group)
        if node is None:
            node = self._group_coordinators[group] = await self._find(group, GROUP_KEY_TYPE)
        try:
            conn = await self.host.cluster.connection(("coordinator", node))
        except KafkaConnectionError:
            self.host.cluster.drop(("coordinator", node))
            raise
        by_topic = offsets_by_topic(offsets)
        body: dict[str, Any] = {
            **self._ids(),
            "group_id": group,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        try:
            if conn.version(TXN_OFFSET_COMMIT) >= 3:
                body.update(
                    generation_id=meta.generation_id,
                    member_id=meta.member_id,
                    group_instance_id=meta.group_instance_id,
                )
            return await conn.send(TXN_OFFSET_COMMIT, body, timeout=self.host.cluster.request_timeout)
        except UnsupportedVersionError as exc:
            raise self._fail_fatal(exc) from None

    def _offsets_result(
        self, resp: Any, pending: dict[TopicPartition, OffsetAndMetadata], group: str
    ) -> None:
        what = f"TxnOffsetCommit for group {group!r}"
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                code = p.error_code
                if code == ErrorCode.NONE:
                    pending.pop(tp, None)
                elif code in _COORDINATOR_MOVED or code == ErrorCode.REQUEST_TIMED_OUT:
                    node = self._group_coordinators.pop(group, None)
                    if node is not None:
                        self.host.cluster.drop(("coordinator", node))
                elif code in RETRIABLE_CODES:
                    continue
                elif code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                    raise self._fail_abortable(
                        CommitFailedError(
                            f"{what} failed: the consumer group metadata is stale ({ErrorCode(code).name}); "
                            "the group has rebalanced"
                        )
                    )
                elif code in (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.GROUP_AUTHORIZATION_FAILED):
                    raise self._fail_abortable(error_for(code, context=what))
                else:
                    self._check(code, what)  # fenced and unexpected codes are fatal

    async def _end_txn(self, commit: bool) -> bool:
        """EndTxn until answered; False when an abort finds the producer id unknown (bump it with a fresh id)."""
        what = f"EndTxn({'commit' if commit else 'abort'})"
        while True:
            try:
                resp = await self._txn_request(END_TXN, lambda _conn: {**self._ids(), "committed": commit})
                if not commit and resp.error_code in (
                    ErrorCode.UNKNOWN_PRODUCER_ID,
                    ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                ):
                    return False
                self._check(resp.error_code, what)
                return True
            except Retry as retry:
                log.debug("%s of %r: %s; retrying", what, self.transactional_id, retry)
                await asyncio.sleep(self._backoff if retry.backoff is None else retry.backoff)
