"""TxnOffsetCommit: v0-5.

Behavior:
- Offsets committed inside a transaction (`broker.groups.txn_offsets`): written
  to the group's `__consumer_offsets` partition as a transactional batch of
  the producer, answered once durable, visible to OffsetFetch only once the
  transaction commits (dropped if it aborts).
- An empty group_id: every partition answers INVALID_GROUP_ID (Kafka's group
  coordinator).
- Per partition: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION;
  metadata over offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE; a fenced
  producer (older epoch) INVALID_PRODUCER_EPOCH.
- v3+ member_id / generation_id / group_instance_id are checked as
  OffsetCommit checks them (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  FENCED_INSTANCE_ID); an empty member id with generation -1 (and v0-2) is a
  producer outside the group, always accepted.
- v5 is transactions v2 (KIP-890 part 2): the producer sent no
  AddOffsetsToTxn, so the group's `__consumer_offsets` partition is first
  added to its transaction (`broker.txn.add_partitions_manager`, the coordinator here
  or on another broker). If that fails nothing is committed and every
  partition answers, as Kafka's group coordinator: a fenced producer
  INVALID_PRODUCER_EPOCH, an unknown one INVALID_PRODUCER_ID_MAPPING,
  CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, or
  COORDINATOR_LOAD_IN_PROGRESS when the transaction coordinator could not be asked.
- v0-4: the group's `__consumer_offsets` partition must be in the producer's
  open transaction (AddOffsetsToTxn), checked with the transaction coordinator
  (here, or on another broker with AddPartitionsToTxn v5 verify_only) before
  the producer's first commit there, as Kafka's group coordinator checks it
  (KIP-890): else nothing is committed and every partition answers
  INVALID_TXN_STATE (v4: TRANSACTION_ABORTABLE), INVALID_PRODUCER_EPOCH,
  INVALID_PRODUCER_ID_MAPPING or CONCURRENT_TRANSACTIONS; a transaction
  coordinator that cannot be asked answers as in v5.
Version notes: v0-1 get COORDINATOR_NOT_AVAILABLE where later versions get
  COORDINATOR_LOAD_IN_PROGRESS (clients before Kafka 2.0 could crash on it,
  KAFKA-7296; as KafkaApis answers them); v2 adds committed_leader_epoch; v3 is
  flexible with the member fields; v4 may answer TRANSACTION_ABORTABLE (KIP-890).
- Authorization (with an authorizer configured), as KafkaApis: WRITE on the
  transactional id, else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else every
  partition answers GROUP_AUTHORIZATION_FAILED; READ on each topic, else its
  partitions answer TOPIC_AUTHORIZATION_FAILED (before
  UNKNOWN_TOPIC_OR_PARTITION) and the rest are committed.
Leaves out: throttling.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from broker import registry
from broker.commit_requests import commit_requests
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.model import TopicPartition
from broker.groups.store import OFFSETS_TOPIC
from broker.replica import Partition
from broker.security.acls import AclOperation, ResourceType
from broker.topic_results import partition_codes
from broker.txn.add_partitions_manager import offset_commit_error
from broker.txn.verification import opened_here, unverified_write, verification_error
from protocol.errors import ErrorCode, KafkaError

API_KEY = 28


def handle(ctx: RequestContext, req: Any) -> Any:
    refusal = None
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        refusal = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        refusal = ErrorCode.GROUP_AUTHORIZATION_FAILED
    codes, commits = commit_requests(ctx, req.topics, refusal, leader_epochs=ctx.version >= 2)

    def respond(results: dict[TopicPartition, ErrorCode]) -> dict[str, Any]:
        answers = {tp: _for_version(code, ctx.version) for tp, code in {**codes, **results}.items()}
        return {"throttle_time_ms": 0, "topics": partition_codes(req.topics, answers)}

    if not commits:
        return respond({})
    groups = ctx.broker.groups
    if ctx.version >= 5:
        error = groups.coordination_error(req.group_id)
        if error is not None:  # not added anywhere: Kafka checks the offsets partition first
            return respond(dict.fromkeys(commits, error))
        offsets_partition = (OFFSETS_TOPIC, groups.partition_for(req.group_id))
        return _ask_then_commit(ctx, req, commits, respond, offsets_partition, verify=False)
    part = _to_verify(ctx, req)
    if part is None:
        return _commit(ctx, req, commits, respond)
    transactions = ctx.broker.transactions
    if transactions.ownership_error(req.transactional_id) != ErrorCode.NONE:
        return _ask_then_commit(ctx, req, commits, respond, part.tp, verify=True)
    unverified = unverified_write(
        transactions,
        part,
        req.transactional_id,
        req.producer_id,
        req.producer_epoch,
        abortable=ctx.version >= 4,
        concurrent=True,
    )
    if unverified is not None:
        return respond(dict.fromkeys(commits, unverified))
    return _commit(ctx, req, commits, respond)


def _for_version(code: int, version: int) -> int:
    """``code`` in the words of ``version``: COORDINATOR_LOAD_IN_PROGRESS is COORDINATOR_NOT_AVAILABLE
    before v2."""
    if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and version < 2:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return code


def _to_verify(ctx: RequestContext, req: Any) -> Partition | None:
    """v0-4: the group's `__consumer_offsets` partition if the producer's write there must be
    verified with the transaction coordinator (no transaction of it open there yet:
    `broker.txn.verification`, as for Produce); None if not, or if the commit answers an error
    of the group's coordination anyway."""
    groups = ctx.broker.groups
    if groups.coordination_error(req.group_id) is not None:
        return None
    try:
        part = ctx.broker.replicas.leader(OFFSETS_TOPIC, groups.partition_for(req.group_id))
    except KafkaError:
        return None
    return None if opened_here(part, req.producer_id) else part


async def _ask_then_commit(
    ctx: RequestContext,
    req: Any,
    commits: dict[TopicPartition, Any],
    respond: Callable[[dict[TopicPartition, ErrorCode]], dict[str, Any]],
    offsets_partition: TopicPartition,
    *,
    verify: bool,
) -> dict[str, Any]:
    """Ask the transaction coordinator (here or on another broker) to add the offsets partition to
    the producer's transaction (v5), or whether it is in it (v0-4 with the coordinator elsewhere
    or still loading: AddPartitionsToTxn v5 verify_only); then commit, or answer its error for
    every partition."""
    codes = await ctx.broker.transactions.adds.ask(
        req.transactional_id,
        req.producer_id,
        req.producer_epoch,
        frozenset({offsets_partition}),
        verify_only=verify,
    )
    code = codes[offsets_partition]
    if code != ErrorCode.NONE:
        if verify:
            code = verification_error(code, abortable=ctx.version >= 4, concurrent=True)
        return respond(dict.fromkeys(commits, offset_commit_error(code)))
    answer = _commit(ctx, req, commits, respond)
    return await answer if inspect.isawaitable(answer) else answer


def _commit(
    ctx: RequestContext,
    req: Any,
    commits: dict[TopicPartition, Any],
    respond: Callable[[dict[TopicPartition, ErrorCode]], dict[str, Any]],
) -> Any:
    v3 = ctx.version >= 3
    return deferred(
        lambda cb: ctx.broker.groups.commit_txn_offsets(
            req.group_id,
            (req.producer_id, req.producer_epoch),
            req.member_id if v3 else "",
            req.generation_id if v3 else -1,
            req.group_instance_id if v3 else None,
            commits,
            cb,
        ),
        respond,
    )


registry.register(API_KEY, 0, 5, handle)
