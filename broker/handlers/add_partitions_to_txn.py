"""AddPartitionsToTxn: v0-5.

Behavior:
- v0-3 (producers): the partitions join the transaction of the
  transactional id (`broker.txn.coordinator`: INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS), answered once durable; the one error
  applies to every partition.
- Partitions of topics that do not exist, or past a topic's partition count:
  UNKNOWN_TOPIC_OR_PARTITION, and OPERATION_NOT_ATTEMPTED for the others
  (nothing is added), as Kafka answers.
- v4+ (brokers, batched by transaction): each transaction as above; with
  verify_only, nothing is added and each partition answers NONE if it is
  already in the open transaction, INVALID_TXN_STATE if not.
Version notes: v3 is flexible; v4 batches transactions and adds the
  top-level error_code; v5 may answer TRANSACTION_ABORTABLE (KIP-890; never here).
Leaves out: throttling; authorization.
"""

from __future__ import annotations

import asyncio
from typing import Any

from broker import registry
from broker.context import RequestContext
from protocol.errors import ErrorCode

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
    code = await coordinator.add_partitions(txn_id, pid, epoch, partitions)
    return _results(topics, {}, code)


async def _handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.version <= 3:
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
    return _handle(ctx, req)


registry.register(API_KEY, 0, 5, handle)
