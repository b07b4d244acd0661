"""InitProducerId: v0-5.

Behavior:
- Non-transactional (null transactional_id): a fresh producer id, unique across
  broker restarts, with epoch 0, whatever producer id and epoch the request
  names (Kafka gives an idempotent producer a new id each time).
- v3+: producer_id and producer_epoch must both be -1 or both be set, else
  INVALID_REQUEST, as Kafka checks.
- Transactional ids are not supported yet: answered with
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED so clients fail fast instead of retrying.
Version notes: v0 and v1 share one layout; v2 is flexible; v3 adds the
  producer's current id and epoch; v4-5 only add error codes
  (PRODUCER_FENCED, TRANSACTION_ABORTABLE) of transactional producers.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from protocol.errors import ErrorCode

API_KEY = 22


def _failed(code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.version >= 3 and (req.producer_id == -1) != (req.producer_epoch == -1):
        return _failed(ErrorCode.INVALID_REQUEST)
    if req.transactional_id is not None:
        return _failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    pid = ctx.broker.producer_ids.allocate()
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}


registry.register(API_KEY, 0, 5, handle)
