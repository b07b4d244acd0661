"""AddOffsetsToTxn: v0-4.

Behavior:
- Adds the group's `__consumer_offsets` partition (where TxnOffsetCommit will
  write) to the transaction, with AddPartitionsToTxn's rules and errors
  (`broker.txn.coordinator`); answered once durable. An empty group id is
  accepted (its partition is the one of ""), as Kafka's KafkaApis does.
Version notes: v0-1 get INVALID_PRODUCER_EPOCH where later versions get PRODUCER_FENCED
  (KIP-588, as Kafka answers them); v3 is flexible; v4 may answer TRANSACTION_ABORTABLE
  (KIP-890; never here).
- Authorization (with an authorizer configured), as KafkaApis, first: WRITE on
  the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ
  on the group (else GROUP_AUTHORIZATION_FAILED).
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups.store import OFFSETS_TOPIC
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, fenced_for

API_KEY = 25


async def _handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    tp = (OFFSETS_TOPIC, broker.groups.partition_for(req.group_id))
    code = await broker.transactions.add_partitions(
        req.transactional_id, req.producer_id, req.producer_epoch, frozenset({tp})
    )
    return {"throttle_time_ms": 0, "error_code": fenced_for(code, ctx.version, 2)}


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    return _handle(ctx, req)


registry.register(API_KEY, 0, 4, handle)
