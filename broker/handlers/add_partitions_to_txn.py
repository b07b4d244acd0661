"""AddPartitionsToTxn: v0-5.

Behavior:
- v0-3 (producers): the partitions join the transaction of the
  transactional id (`broker.txn.coordinator`: INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS; an empty transactional id INVALID_REQUEST),
  answered once durable; the one error applies to every partition.
- Partitions of topics that do not exist, or past a topic's partition count:
  UNKNOWN_TOPIC_OR_PARTITION, and OPERATION_NOT_ATTEMPTED for the others
  (nothing is added), as Kafka answers.
- v4+ (brokers, batched by transaction): each transaction as above, the
  partitions added for transactions v2 (a Produce v12+ or TxnOffsetCommit v5
  at another broker, `broker.txn.add_partitions_manager`); with verify_only
  (a Produce v3-11 or TxnOffsetCommit v0-4 there), nothing is added and each
  partition answers NONE if it is already in the open transaction,
  TRANSACTION_ABORTABLE if not; a transaction being committed or aborted
  answers CONCURRENT_TRANSACTIONS (Kafka's verifyTransaction).
Version notes: v0-1 get INVALID_PRODUCER_EPOCH where later versions get PRODUCER_FENCED
  (KIP-588, as Kafka answers them); v3 is flexible; v4 batches transactions and adds the
  top-level error_code; v5 may answer TRANSACTION_ABORTABLE (KIP-890: verify_only).
- Authorization (with an authorizer configured), as KafkaApis: v4+ (from
  brokers) needs CLUSTER_ACTION on the cluster, else the top-level
  CLUSTER_AUTHORIZATION_FAILED and no results; v0-3 (producers) need WRITE on
  the transactional id (else every partition answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic: partitions of a
  topic without it answer TOPIC_AUTHORIZATION_FAILED (before
  UNKNOWN_TOPIC_OR_PARTITION), the others OPERATION_NOT_ATTEMPTED. Partitions
  of internal topics are refused the same way with no authorizer too.
Leaves out: throttling.
"""

from __future__ import annotations

import asyncio
from typing import Any

from broker import registry
from broker.authorized_operations import denied, unrestricted
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.txn.state import TRANSACTIONS_V2
from protocol.errors import ErrorCode, fenced_for

API_KEY = 24

TopicPartition = tuple[str, int]


def _unknown(ctx: RequestContext, topics: Any) -> set[TopicPartition]:
    known = ctx.broker.cluster.topics()
    out = set()
    for t in topics:
        state = known.get(t.name)
        for p in t.partitions:
            if state is None or not 0 <= p < len(state.partitions):
                out.add((t.name, p))
    return out


def _results(topics: Any, codes: dict[TopicPartition, ErrorCode], default: ErrorCode) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": codes.get((t.name, p), default)}
                for p in t.partitions
            ],
        }
        for t in topics
    ]


def _refused(ctx: RequestContext, txn_id: str, topics: Any) -> list[dict[str, Any]] | None:
    """A producer's (v0-3) authorization failures as Kafka answers them, or None."""
    restricted = not unrestricted(ctx)
    if restricted and not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
        return _results(topics, {}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    # Kafka never grants internal topics here, authorizer or not: a producer does not write them.
    forbidden = (
        denied(ctx, AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in topics)) if restricted else ()
    )
    refused = {
        (t.name, p): ErrorCode.TOPIC_AUTHORIZATION_FAILED
        for t in topics
        if t.name in forbidden or t.name in INTERNAL_TOPICS
        for p in t.partitions
    }
    if not refused:
        return None
    codes = dict.fromkeys(_unknown(ctx, topics), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return _results(topics, {**codes, **refused}, ErrorCode.OPERATION_NOT_ATTEMPTED)


async def _add(
    ctx: RequestContext, txn_id: str, pid: int, epoch: int, topics: Any, verify: bool
) -> list[dict[str, Any]]:
    unknown = _unknown(ctx, topics)
    if unknown:
        return _results(
            topics,
            dict.fromkeys(unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ErrorCode.OPERATION_NOT_ATTEMPTED,
        )
    partitions = frozenset((t.name, p) for t in topics for p in t.partitions)
    coordinator = ctx.broker.transactions
    if verify:
        code, codes = coordinator.verify_partitions(txn_id, pid, epoch, partitions)
        return _results(topics, codes, code)
    client_tv = TRANSACTIONS_V2 if ctx.version >= 4 else 0  # v4+ come from brokers: Kafka's rule
    code = await coordinator.add_partitions(txn_id, pid, epoch, partitions, client_tv)
    return _results(topics, {}, fenced_for(code, ctx.version, 2))


async def _handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.version <= 3:
        refused = _refused(ctx, req.v3_and_below_transactional_id, req.v3_and_below_topics)
        if refused is not None:
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": refused}
        results = await _add(
            ctx,
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            req.v3_and_below_topics,
            False,
        )
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": results}
    answers = await asyncio.gather(
        *(
            _add(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only)
            for t in req.transactions
        )
    )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "results_by_transaction": [
            {"transactional_id": t.transactional_id, "topic_results": r}
            for t, r in zip(req.transactions, answers, strict=True)
        ],
    }


def handle(ctx: RequestContext, req: Any) -> Any:
    if ctx.version >= 4 and not ctx.cluster_authorized(AclOperation.CLUSTER_ACTION):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "results_by_transaction": [],
        }
    return _handle(ctx, req)


registry.register(API_KEY, 0, 5, handle)
