"""EndTxn: v0-5.

Behavior:
- committed true/false: commit or abort the open transaction of the
  transactional id (`broker.txn.coordinator`): answered once PrepareCommit /
  PrepareAbort is durable; the markers follow in the background. Errors:
  INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS,
  INVALID_TXN_STATE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; an empty
  transactional id INVALID_REQUEST.
- v5 is transactions v2 (KIP-890 part 2): the commit or abort bumps the
  producer epoch (a new producer id at epoch exhaustion), and the answer
  carries the producer id and epoch to go on with (-1 on errors); a retry is
  recognised by its epoch, and Empty/Complete* may be aborted again
  (`TransactionCoordinator.end_transaction_v2` has Kafka's table).
Version notes: v0-1 get INVALID_PRODUCER_EPOCH where later versions get PRODUCER_FENCED
  (KIP-588, as Kafka answers them); v3 is flexible; v4 may answer TRANSACTION_ABORTABLE
  (KIP-890; never here); v5 adds producer_id/producer_epoch to the answer.
- Authorization (with an authorizer configured), as KafkaApis: WRITE on the
  transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, fenced_for

API_KEY = 26


async def _handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    coordinator = ctx.broker.transactions
    if ctx.version >= 5:
        code, producer_id, epoch = await coordinator.end_transaction_v2(
            req.transactional_id, req.producer_id, req.producer_epoch, req.committed
        )
        return {
            "throttle_time_ms": 0,
            "error_code": code,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        }
    code = await coordinator.end_transaction(
        req.transactional_id, req.producer_id, req.producer_epoch, req.committed
    )
    return {"throttle_time_ms": 0, "error_code": fenced_for(code, ctx.version, 2)}


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    return _handle(ctx, req)


registry.register(API_KEY, 0, 5, handle)
