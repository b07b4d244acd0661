"""ListGroups: v0-2.

Behavior:
- Every group this broker coordinates (all of them), with its protocol type
  ("" for groups that only store offsets), including Empty groups.
Version notes: v1 adds throttle_time_ms; v2 has v1's layout.
Leaves out: throttling; authorization; the states filter (v4).
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext

API_KEY = 16


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error, groups = ctx.broker.groups.list_groups()
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "groups": [{"group_id": g.group_id, "protocol_type": g.protocol_type} for g in groups],
    }


registry.register(API_KEY, 0, 2, handle)
