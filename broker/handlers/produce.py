"""Produce: v3-13 (v0-2 advertised, rejected if sent).

Behavior:
- Per partition: the record set must be one or more RecordBatch v2 whose sizes,
  magic and CRC-32C check out (else CORRUPT_MESSAGE); a batch over the topic's
  max.message.bytes is MESSAGE_TOO_LARGE; a client-sent control batch is
  INVALID_RECORD, as is a transactional batch with no producer id.
- Transactional batches go through the same producer checks; the first one of
  a producer opens its transaction on the partition (its records stay above
  the last stable offset until the coordinator's marker closes it); a
  non-transactional batch of a producer inside a transaction is INVALID_TXN_STATE.
- That first one is verified with the transaction coordinator (KIP-890,
  Kafka's transaction.partition.verification.enable): in place when it runs on
  this broker, else with AddPartitionsToTxn v5 verify_only to the broker that
  has it (`broker.txn.add_partitions_manager`; the producer's later requests
  wait for it, as for v12+ below). A partition not in the id's open
  transaction is INVALID_TXN_STATE ("Partition was not added to the
  transaction"; v11: TRANSACTION_ABORTABLE), another producer id or epoch
  INVALID_PRODUCER_ID_MAPPING / INVALID_PRODUCER_EPOCH, a transaction being
  committed or aborted, or a coordinator that cannot be asked, moves or
  loads, the retriable NOT_ENOUGH_REPLICAS (as Kafka's ReplicaManager), no
  transactional_id TRANSACTIONAL_ID_AUTHORIZATION_FAILED; nothing is appended.
- Compacted topics (cleanup.policy has compact): every record needs a key, else
  INVALID_RECORD (batches are decoded for this; other topics are not).
- The append itself is the replica manager's (`ReplicaManager.append`):
  idempotent batches (producer id >= 0) go through the producer-state checks; a
  duplicate of one of the last five batches answers success with its original
  base offset and is not appended again (acks=-1: after an fsync, like the original).
- A partition this broker hosts but does not lead: NOT_LEADER_OR_FOLLOWER.
- The bytes are appended verbatim; the log patches baseOffset and
  partitionLeaderEpoch (LogAppendTime topics: also maxTimestamp, the timestamp
  type bit and the CRC).
- acks=0: no response at all. acks=1: answered after the leader's append (and
  after an fsync when the partition's flush.messages is reached). acks=-1:
  refused with NOT_ENOUGH_REPLICAS (nothing appended) when the ISR is smaller
  than min.insync.replicas; answered after a group-committed fsync of every
  touched partition and once the high watermark has passed the batch (every
  in-sync replica has it): NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
  below min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER if leadership
  moved, REQUEST_TIMED_OUT after the request's timeout. A failed fsync answers
  KAFKA_STORAGE_ERROR and never acknowledges. A failed write leaves no partial
  bytes and answers KAFKA_STORAGE_ERROR.
- acks outside {-1, 0, 1}: INVALID_REQUIRED_ACKS for every partition.
- Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION (Produce never creates topics);
  internal topics (__consumer_offsets) are written by the broker only:
  INVALID_TOPIC_EXCEPTION.
- v8+: a partition's error comes with its message (error_message).
- An error answer's log_start_offset is the partition's (a producer tells a
  sequence state lost to retention from a gap by it), except for unknown
  partition, not leader, too large, corrupt and storage errors (-1), as Kafka.
- v10+: NOT_LEADER_OR_FOLLOWER comes with the leader and epoch this broker
  knows of (current_leader) and the response with their addresses
  (node_endpoints), as KIP-951 (`broker.leader_hints`).
Version notes: v5+ carry log_start_offset in the response; v3-8 share the
  request layout; v8 adds record_errors and error_message; v9 is flexible;
  v10 adds the leader hints; v11 and v12 are v10's layout; v13 names each
  topic by its id (KIP-516), and an id no topic has answers UNKNOWN_TOPIC_ID
  for each of its partitions.
- v12+ inside a transaction is transactions v2 (KIP-890 part 2): the producer
  sent no AddPartitionsToTxn, so a partition whose first transactional batch
  opens its producer's transaction (none open there with that epoch) is added
  to the transaction before the append (`broker.txn.add_partitions_manager`: the
  coordinator here, or AddPartitionsToTxn v5 to the broker that has it).
  When the add fails the partition is not appended and answers, as Kafka's
  ReplicaManager: a fenced producer INVALID_PRODUCER_EPOCH, an unknown one
  INVALID_PRODUCER_ID_MAPPING, a transaction still completing
  CONCURRENT_TRANSACTIONS, and NOT_ENOUGH_REPLICAS (retriable) while the
  coordinator cannot be reached, moves or loads. The producer's later
  requests (pipelined on its connection) append only after such a request
  has, so its batches keep their order.
- Authorization (with an authorizer configured; none: nothing is checked), as
  KafkaApis: a request carrying a transactional batch needs a transactional_id
  and WRITE on it, else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended; each topic
  needs WRITE, else its partitions answer TOPIC_AUTHORIZATION_FAILED (before
  any other check). One check per distinct topic, none per batch, except that
  the batches' attributes are scanned for the transactional bit when the
  request has no transactional id or is not allowed to write it. Idempotent
  batches need nothing more (Kafka 2.8+ checks IDEMPOTENT_WRITE at
  InitProducerId only).
- Client quotas: the record sets' bytes count against the client's
  producer_byte_rate; over it, the answer carries throttle_time_ms and the
  connection reads nothing for that long (broker/security/quotas.py).
Leaves out: timestamp-difference validation, per-record validation of compressed
  batches (batches are stored as sent); closing the connection of an acks=0
  request that failed (it is just not answered).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from typing import Any

from broker import leader_hints, registry
from broker.authorized_operations import denied
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from broker.replica import Partition
from broker.security.acls import AclOperation, ResourceType
from broker.txn.add_partitions_manager import produce_error
from broker.txn.verification import opened_here, unverified_write, verification_error
from protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from protocol.records import LOG_OVERHEAD, MAGIC, TRANSACTIONAL_BIT, validate_batches
from storage.cleaner import check_keys

API_KEY = 0

log = logging.getLogger("minikafka.produce")


def _partition_result(
    index: int, code: int, base_offset: int = -1, append_time: int = -1, start: int = -1
) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": code,
        "base_offset": base_offset,
        "log_append_time_ms": append_time,
        "log_start_offset": start,
    }


# errors answered with log_start_offset -1, as Kafka's ReplicaManager; the others (sequence,
# epoch, transaction state...) carry the partition's log start offset, which a producer uses to
# tell a state lost to retention from a real gap
_NO_LOG_START = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)


def _error_result(
    ctx: RequestContext, index: int, exc: KafkaError, topic: str | None = None
) -> dict[str, Any]:
    start = -1
    if topic is not None and exc.code not in _NO_LOG_START:
        with contextlib.suppress(KafkaError):
            start = ctx.broker.replicas.leader(topic, index).log.log_start_offset
    result = _partition_result(index, exc.code, start=start)
    if ctx.version >= 8:
        result["error_message"] = str(exc)
    return result


def _with_leader_hints(ctx: RequestContext, response: dict[str, Any]) -> dict[str, Any]:
    """v10+: point NOT_LEADER_OR_FOLLOWER partitions at their leader (KIP-951)."""
    if ctx.version < 10:
        return response
    leaders = []
    for topic in response["responses"]:
        for result in topic["partition_responses"]:
            if result["error_code"] in leader_hints.WRONG_LEADER:
                hint = leader_hints.current_leader(ctx, topic["name"], result["index"])
                result["current_leader"] = hint
                leaders.append(hint["leader_id"])
    if leaders:
        response["node_endpoints"] = leader_hints.node_endpoints(ctx, leaders)
    return response


def _append(
    ctx: RequestContext,
    topic: str,
    index: int,
    records: bytes | memoryview | None,
    acks: int,
    now_ms: int,
    txn_id: str | None = None,
    checked: bool = False,
) -> tuple[dict[str, Any], Partition | None, int]:
    """(partition result, the partition if bytes were appended or a duplicate acknowledged, the last
    offset). ``checked``: the coordinator has just added the partition to the producer's
    transaction (v12+) or verified it is there (v3-11)."""
    broker = ctx.broker
    if topic in INTERNAL_TOPICS:
        raise KafkaError(f"cannot append to internal topic {topic}", ErrorCode.INVALID_TOPIC_EXCEPTION)
    part = broker.replicas.leader(topic, index)
    plog = part.log
    if not records:
        raise CorruptRecordError("empty record set")
    # The connection hands Produce frames over writable (broker/connection.py), so the record sets
    # are writable views and the offsets are patched where they lie; a read-only buffer is copied.
    buf = records if isinstance(records, memoryview) and not records.readonly else bytearray(records)
    headers = validate_batches(buf)
    max_bytes = plog.config.max_message_bytes
    for h in headers:
        if h.size > max_bytes:
            raise KafkaError(
                f"batch of {h.size} bytes over max.message.bytes {max_bytes}", ErrorCode.MESSAGE_TOO_LARGE
            )
        if h.is_control:
            raise KafkaError("client-sent control batch", ErrorCode.INVALID_RECORD)
        if h.is_transactional and h.producer_id < 0:
            raise KafkaError("transactional batch with no producer id", ErrorCode.INVALID_RECORD)
    if headers[0].is_transactional and not checked:
        _verify_transaction(ctx, txn_id, part, headers[0])
    if plog.config.compact:
        check_keys(buf, headers)
    if acks == -1 and len(part.isr) < plog.config.min_insync_replicas:
        raise KafkaError(
            f"{topic}-{index}: {len(part.isr)} in-sync replicas, min.insync.replicas is "
            f"{plog.config.min_insync_replicas}",
            ErrorCode.NOT_ENOUGH_REPLICAS,
        )
    outcome = broker.replicas.append(part, buf, headers, now_ms)
    if outcome.appended and broker.metrics is not None:
        broker.metrics.appended(topic, len(buf), sum(h.record_count for h in headers))
    result = _partition_result(
        index, 0, outcome.base_offset, outcome.log_append_time_ms, outcome.log_start_offset
    )
    return result, part, outcome.last_offset


def _verify_transaction(ctx: RequestContext, txn_id: str | None, part: Partition, h: Any) -> None:
    """The first transactional batch of a producer on a partition is checked with the transaction
    coordinator when it is on this broker (`broker.txn.verification`; one elsewhere was asked
    before, by `_add_then_produce`)."""
    code = unverified_write(
        ctx.broker.transactions,
        part,
        txn_id,
        h.producer_id,
        h.producer_epoch,
        abortable=ctx.version >= 11,
        concurrent=False,
    )
    if code is not None:
        raise KafkaError(_VERIFICATION_MESSAGES.get(code, code.name), code)


def _verification_error(ctx: RequestContext, code: ErrorCode) -> ErrorCode:
    """A remote coordinator's verify_only code in this version's words (as `_verify_transaction`)."""
    return verification_error(code, abortable=ctx.version >= 11, concurrent=False)


def _failed_message(ctx: RequestContext, code: ErrorCode) -> str:
    if ctx.version >= 12:
        return "Partition could not be added to the transaction"
    if code == ErrorCode.NOT_ENOUGH_REPLICAS:
        return "Unable to verify the partition has been added to the transaction"
    return _VERIFICATION_MESSAGES.get(code, code.name)


_VERIFICATION_MESSAGES = {
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "transactional records without a transactional id",
    ErrorCode.INVALID_TXN_STATE: "Partition was not added to the transaction",
}


_MAGIC_AT = 16
_ATTRIBUTES_END = 23  # the attributes are the int16 at offsets 21-22 of a batch
_PRODUCER_ID_AT = 43  # then INT64 producer id, INT16 producer epoch
_PRODUCER_EPOCH_END = 53


def _has_transactional_batch(req: Any) -> bool:
    """Whether a record set of the request holds a transactional batch (Kafka's
    RequestUtils.hasTransactionalRecords): walks the batch headers by their lengths."""
    for topic in req.topic_data:
        for pd in topic.partition_data:
            buf = pd.records
            if not buf:
                continue
            size = len(buf)
            pos = 0
            while pos + _ATTRIBUTES_END <= size:
                if buf[pos + _MAGIC_AT] == MAGIC and buf[pos + _ATTRIBUTES_END - 1] & TRANSACTIONAL_BIT:
                    return True
                length = int.from_bytes(buf[pos + 8 : pos + 12], "big", signed=True)
                if length <= 0:
                    break  # malformed: validation answers CORRUPT_MESSAGE for it
                pos += LOG_OVERHEAD + length
    return False


def _denied_transaction(ctx: RequestContext, req: Any) -> bool:
    """Kafka's first check: transactional records need WRITE on the request's transactional id."""
    txn_id = req.transactional_id
    if txn_id is not None and ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
        return False
    return _has_transactional_batch(req)


def _topic_names(ctx: RequestContext, req: Any) -> list[str | None]:
    """Each topic's name; v13 names topics by id (None: no topic has that id)."""
    if ctx.version < 13:
        return [t.name for t in req.topic_data]
    topic_name = ctx.broker.cluster.topic_name
    return [topic_name(t.topic_id) for t in req.topic_data]


def _topic_response(ctx: RequestContext, topic: Any, name: str | None, parts: list[Any]) -> dict[str, Any]:
    """A topic's entry of the answer: by name, and by id in v13 (the name stays for the leader hints)."""
    entry = {"name": name, "partition_responses": parts}
    if ctx.version >= 13:
        entry["topic_id"] = topic.topic_id
    return entry


def _refused(ctx: RequestContext, req: Any, code: ErrorCode) -> dict[str, Any] | None:
    """Every partition answers ``code`` (Kafka's ProduceRequest error response); acks=0: no answer."""
    if req.acks == 0:
        return None
    error = KafkaError("Transactional Id authorization failed.", code)
    return {
        "responses": [
            _topic_response(
                ctx, topic, name, [_error_result(ctx, pd.index, error) for pd in topic.partition_data]
            )
            for topic, name in zip(req.topic_data, _topic_names(ctx, req), strict=True)
        ],
        "throttle_time_ms": 0,
    }


def handle(ctx: RequestContext, req: Any) -> Any:
    names = _topic_names(ctx, req)
    forbidden: frozenset[str] = frozenset()
    if ctx.broker.security.authorizer is not None:
        if _denied_transaction(ctx, req):
            return _refused(ctx, req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        forbidden = denied(ctx, AclOperation.WRITE, ResourceType.TOPIC, (n for n in names if n is not None))
    txn_id = req.transactional_id
    if txn_id is not None:
        transactions = ctx.broker.transactions
        asks: dict[tuple[int, int], set[tuple[str, int]]] = {}
        # below v12 a coordinator here verifies in place (`_verify_transaction`)
        if ctx.version >= 12 or transactions.ownership_error(txn_id) != ErrorCode.NONE:
            asks = _first_writes(ctx, req, names, forbidden)
        pending = transactions.adds.pending
        behind = pending.get(txn_id)
        if asks or behind is not None:
            return _in_order(pending, txn_id, behind, ctx, req, names, forbidden, asks)
    return _produce(ctx, req, names, forbidden)


def _first_batch(records: Any) -> tuple[int, int] | None:
    """(producer id, epoch) of a record set's first batch if it is a transactional v2 batch."""
    if not records or len(records) < _PRODUCER_EPOCH_END or records[_MAGIC_AT] != MAGIC:
        return None
    if not records[_ATTRIBUTES_END - 1] & TRANSACTIONAL_BIT:
        return None
    producer_id = int.from_bytes(records[_PRODUCER_ID_AT : _PRODUCER_ID_AT + 8], "big", signed=True)
    epoch = int.from_bytes(records[_PRODUCER_ID_AT + 8 : _PRODUCER_EPOCH_END], "big", signed=True)
    return producer_id, epoch


def _first_writes(
    ctx: RequestContext, req: Any, names: list[str | None], forbidden: frozenset[str]
) -> dict[tuple[int, int], set[tuple[str, int]]]:
    """The partitions whose first transactional batch opens its producer's transaction there, by
    (producer id, epoch): v12+ (transactions v2) none open with that epoch, to be added; v3-11
    none open, to be verified. The others, and partitions that will be refused anyway (unknown,
    not led here), need no word with the coordinator."""
    v2 = ctx.version >= 12
    adds: dict[tuple[int, int], set[tuple[str, int]]] = {}
    for topic, name in zip(req.topic_data, names, strict=True):
        if name is None or name in forbidden or name in INTERNAL_TOPICS:
            continue
        for pd in topic.partition_data:
            producer = _first_batch(pd.records)
            if producer is None or producer[0] < 0:
                continue
            try:
                part = ctx.broker.replicas.leader(name, pd.index)
            except KafkaError:
                continue
            if not v2:
                if opened_here(part, producer[0]):
                    continue
            elif part.producers is not None:
                state = part.producers.producers.get(producer[0])
                if state is not None and state.txn_first_offset >= 0 and state.epoch == producer[1]:
                    continue
            adds.setdefault(producer, set()).add((name, pd.index))
    return adds


def _in_order(
    pending: dict[str, asyncio.Future[None]],
    txn_id: str,
    behind: asyncio.Future[None] | None,
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    forbidden: frozenset[str],
    adds: dict[tuple[int, int], set[tuple[str, int]]],
) -> asyncio.Future[Any]:
    """`_add_then_produce` as a task registered at once as the newest waiting Produce of
    ``txn_id`` (the next request may be handled before the task first runs); its entry is
    settled however the task ends, cancelled before it started included."""
    mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    pending[txn_id] = mine

    def settle(_: object) -> None:
        if not mine.done():
            mine.set_result(None)
        if pending.get(txn_id) is mine:
            del pending[txn_id]

    task = asyncio.ensure_future(_add_then_produce(ctx, req, names, forbidden, adds, behind, mine))
    task.add_done_callback(settle)
    return task


async def _add_then_produce(
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    forbidden: frozenset[str],
    adds: dict[tuple[int, int], set[tuple[str, int]]],
    behind: asyncio.Future[None] | None,
    appended: asyncio.Future[None],
) -> Any:
    """Add the partitions to their transactions (v12+) or verify that they are in them (v3-11,
    the coordinator on another broker) with `broker.txn.add_partitions_manager`, then append; a
    partition whose add or verification failed answers its error and is not appended.

    ``behind``: the previous Produce of the same transactional id still waiting for its adds.
    This one appends only after that one has (and sets ``appended`` once it has), so pipelined
    requests keep their order: a later batch of a partition never lands before an earlier one
    and the sequence numbers stay in order, as Kafka keeps it by reading nothing more from a
    connection meanwhile."""
    adder = ctx.broker.transactions.adds
    txn_id = req.transactional_id
    verify_only = ctx.version < 12
    answers = await asyncio.gather(
        *(
            adder.ask(txn_id, pid, epoch, frozenset(tps), verify_only=verify_only)
            for (pid, epoch), tps in adds.items()
        )
    )
    if behind is not None:
        await asyncio.shield(behind)
    failed: dict[tuple[str, int], ErrorCode] = {}
    checked: set[tuple[str, int]] = set()
    for codes in answers:
        for tp, code in codes.items():
            if code == ErrorCode.NONE:
                checked.add(tp)
            else:
                failed[tp] = produce_error(_verification_error(ctx, code) if verify_only else code)
    answer = _produce(ctx, req, names, forbidden, failed, checked)  # appends now, may answer later
    appended.set_result(None)
    return await answer if inspect.isawaitable(answer) else answer


def _produce(
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    forbidden: frozenset[str],
    failed: dict[tuple[str, int], ErrorCode] | None = None,
    checked: set[tuple[str, int]] | None = None,
) -> Any:
    acks = req.acks
    now_ms = int(time.time() * 1000)
    responses: list[dict[str, Any]] = []
    to_sync: list[tuple[dict[str, Any], Partition, int, int]] = []  # result, partition, last offset, bytes
    for topic, name in zip(req.topic_data, names, strict=True):
        parts = []
        if name is None or (forbidden and name in forbidden):
            code = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            parts = [_partition_result(pd.index, code) for pd in topic.partition_data]
            responses.append(_topic_response(ctx, topic, name, parts))
            continue
        for pd in topic.partition_data:
            if acks not in (-1, 0, 1):
                parts.append(_partition_result(pd.index, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            tp = (name, pd.index)
            try:
                if failed and tp in failed:
                    raise KafkaError(_failed_message(ctx, failed[tp]), failed[tp])
                result, part, last = _append(
                    ctx,
                    name,
                    pd.index,
                    pd.records,
                    acks,
                    now_ms,
                    req.transactional_id,
                    bool(checked and tp in checked),
                )
            except KafkaError as exc:
                log.debug("produce %s-%d rejected: %s", name, pd.index, exc)
                result, part, last = _error_result(ctx, pd.index, exc, name), None, -1
            except OSError as exc:
                log.error("produce %s-%d: storage error: %s", name, pd.index, exc)
                result, part, last = _partition_result(pd.index, ErrorCode.KAFKA_STORAGE_ERROR), None, -1
            parts.append(result)
            if part is not None and (
                acks == -1 or part.log.unflushed_messages >= part.log.config.flush_interval_messages
            ):
                to_sync.append((result, part, last, len(pd.records or b"")))
        responses.append(_topic_response(ctx, topic, name, parts))
    response = {"responses": responses, "throttle_time_ms": 0}
    quotas = ctx.broker.security.quotas
    if quotas.enabled:  # producer_byte_rate, acks=0 included (broker/security/quotas.py)
        response["throttle_time_ms"] = quotas.record_produce(ctx, req)
    if acks == 0:
        return None
    if to_sync:
        return _after_fsync(ctx, response, to_sync, acks == -1, req.timeout_ms)
    return _with_leader_hints(ctx, response)


async def _after_fsync(
    ctx: RequestContext,
    response: dict[str, Any],
    to_sync: list[tuple[dict[str, Any], Partition, int, int]],
    replicated: bool,
    timeout_ms: int,
) -> dict[str, Any]:
    """Answer once every touched partition is fsynced and, for acks=all, its HW has passed the batch."""
    synced = ctx.broker.group_commit.sync_many(  # one round for all
        [part.log for _, part, _, _ in to_sync], sizes=[size for _, _, _, size in to_sync]
    )
    for result, part, last, _ in to_sync:
        try:
            await synced
        except (OSError, KafkaError) as exc:
            log.debug("fsync failed, not acknowledging: %s", exc)  # the partition log reported it
            result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, base_offset=-1)
            continue
        if replicated:
            code = await ctx.broker.replicas.wait_for_replication(part, last + 1, max(timeout_ms, 0) / 1000)
            if code:
                result.update(error_code=code, base_offset=-1)
    return _with_leader_hints(ctx, response)


registry.register(API_KEY, 3, 13, handle, advertise_min=0)
