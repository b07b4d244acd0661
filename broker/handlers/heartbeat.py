"""Heartbeat: v0-4.

Behavior:
- Keeps a member's session alive. NONE while the group is Stable or waiting for
  SyncGroup; REBALANCE_IN_PROGRESS while it prepares a rebalance (the member
  should rejoin); ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID
  for members the coordinator no longer recognises.
Version notes: v1 adds throttle_time_ms; v2 has v1's layout; v3 adds group_instance_id; v4 is
  flexible.
- Authorization (with an authorizer configured), as KafkaApis: READ on the
  group, else GROUP_AUTHORIZATION_FAILED.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 12


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    instance = req.group_instance_id if ctx.version >= 3 else None
    code = ctx.broker.groups.heartbeat(req.group_id, req.generation_id, req.member_id, instance)
    return {"throttle_time_ms": 0, "error_code": code}


registry.register(API_KEY, 0, 4, handle)
