"""InitProducerId: v0-1.

Behavior:
- Non-transactional (null transactional_id): a fresh producer id, unique across
  broker restarts, with epoch 0.
- Transactional ids are not supported yet: answered with
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED so clients fail fast instead of retrying.
Version notes: v0 and v1 share one layout.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from protocol.errors import ErrorCode

API_KEY = 22


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if req.transactional_id is not None:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    pid = ctx.broker.producer_ids.allocate()
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}


registry.register(API_KEY, 0, 1, handle)
