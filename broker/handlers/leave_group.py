"""LeaveGroup: v0-1.

Behavior:
- Removes the member at once and starts a rebalance of the rest (no waiting
  for its session to time out). Unknown group or member: UNKNOWN_MEMBER_ID.
Version notes: v1 adds throttle_time_ms. (v3+ batch leaves of static members
  are not served.)
Leaves out: throttling; authorization.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext

API_KEY = 13


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    code = ctx.broker.groups.leave_group(req.group_id, req.member_id)
    return {"throttle_time_ms": 0, "error_code": code}


registry.register(API_KEY, 0, 1, handle)
