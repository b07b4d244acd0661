"""InitProducerId: v0-5.

Behavior:
- Non-transactional (null transactional_id): a fresh producer id, unique across
  broker restarts, with epoch 0, whatever producer id and epoch the request
  names (Kafka gives an idempotent producer a new id each time).
- v3+: producer_id and producer_epoch must both be -1 or both be set, else
  INVALID_REQUEST, as Kafka checks.
- With a transactional id: the transaction coordinator's answer
  (`broker.txn.coordinator`): the id's producer id with a bumped epoch, an
  open transaction of a previous producer aborted (CONCURRENT_TRANSACTIONS
  until done, then the bump), INVALID_TRANSACTION_TIMEOUT, PRODUCER_FENCED for
  a v3+ producer id/epoch that is no longer the id's, NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS; answered once durable.
- Authorization (with an authorizer configured), as KafkaApis, before anything
  else: a transactional id needs WRITE on it (else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
  IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 2.8+, KIP-679;
  else CLUSTER_AUTHORIZATION_FAILED).
Version notes: v0 and v1 share one layout; v2 is flexible; v3 adds the
  producer's current id and epoch; v4-5 only add error codes
  (PRODUCER_FENCED, TRANSACTION_ABORTABLE) of transactional producers.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, fenced_for

API_KEY = 22


def _failed(code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


def _refusal(ctx: RequestContext, txn_id: str | None) -> ErrorCode | None:
    if txn_id is not None:
        if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.cluster_authorized(AclOperation.IDEMPOTENT_WRITE) and not ctx.authorized_any(
        AclOperation.WRITE, ResourceType.TOPIC
    ):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    refused = _refusal(ctx, req.transactional_id)
    if refused is not None:
        return _failed(refused)
    if ctx.version >= 3 and (req.producer_id == -1) != (req.producer_epoch == -1):
        return _failed(ErrorCode.INVALID_REQUEST)
    if req.transactional_id is not None:
        expected = None
        if ctx.version >= 3 and req.producer_id != -1:
            expected = (req.producer_id, req.producer_epoch)
        return _transactional(ctx, req.transactional_id, req.transaction_timeout_ms, expected)
    pid = ctx.broker.producer_ids.allocate()
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}


async def _transactional(
    ctx: RequestContext, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None
) -> dict[str, Any]:
    code, pid, epoch = await ctx.broker.transactions.init_producer_id(txn_id, timeout_ms, expected)
    code = fenced_for(code, ctx.version, 4)
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}


registry.register(API_KEY, 0, 5, handle)
