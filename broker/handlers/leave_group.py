"""LeaveGroup: v0-5.

Behavior:
- Removes members at once and starts a rebalance of the rest (no waiting for
  their sessions to time out).
- v0-2: one dynamic member by member id; unknown group or member:
  UNKNOWN_MEMBER_ID as the top-level error.
- v3+: a batch of members, each answered on its own. A member with a group
  instance id is a static member, found by that id: unknown instance:
  UNKNOWN_MEMBER_ID; a member id other than "" that is not the instance's
  current one: FENCED_INSTANCE_ID. Group-level errors (not the coordinator,
  loading, unknown group) are top-level, with no member answers.
Version notes: v1 adds throttle_time_ms; v3 the member batch; v4 is flexible;
  v5 adds each member's reason (KIP-800), logged with the rebalance.
- Authorization (with an authorizer configured), as KafkaApis: READ on the
  group, else GROUP_AUTHORIZATION_FAILED (top-level, no member answers).
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 13


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    groups = ctx.broker.groups
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if ctx.version < 3:
        return {"throttle_time_ms": 0, "error_code": groups.leave_group(req.group_id, req.member_id)}
    reasons = {m.reason for m in req.members if ctx.version >= 5 and m.reason}
    error, codes = groups.leave_members(
        req.group_id,
        [(m.member_id, m.group_instance_id) for m in req.members],
        "; ".join(sorted(reasons)) or None,
    )
    members = [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": code}
        for m, code in zip(req.members, codes, strict=False)
    ]
    return {"throttle_time_ms": 0, "error_code": error, "members": members}


registry.register(API_KEY, 0, 5, handle)
