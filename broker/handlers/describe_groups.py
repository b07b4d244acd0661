"""DescribeGroups: v0-5.

Behavior:
- Per group: state (Empty, PreparingRebalance, CompletingRebalance, Stable),
  protocol type, and members (id, client id, client host). While Stable also
  the chosen protocol and each member's metadata and assignment; in the other
  states those are empty, as in Kafka.
- An unknown group is described as state "Dead" with no members and error 0.
Version notes: v1 adds throttle_time_ms; v2 has v1's layout; v3 adds
  include_authorized_operations / authorized_operations (READ, DELETE and
  DESCRIBE when asked for: there is no authorization; else INT32_MIN); v4 adds each
  member's group_instance_id; v5 is flexible.
Leaves out: throttling; authorization.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext

API_KEY = 15

# AclOperation codes: READ 3, DELETE 6, DESCRIBE 8 (the operations that apply to a group)
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
OPERATIONS_NOT_REQUESTED = -(2**31)


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    operations = OPERATIONS_NOT_REQUESTED
    if ctx.version >= 3 and req.include_authorized_operations:
        operations = GROUP_OPERATIONS
    groups = []
    for group_id in req.groups:
        error, summary = ctx.broker.groups.describe_group(group_id)
        groups.append(
            {
                "error_code": error,
                "group_id": group_id,
                "group_state": summary.state,
                "protocol_type": summary.protocol_type,
                "protocol_data": summary.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in summary.members
                ],
                "authorized_operations": operations,
            }
        )
    return {"throttle_time_ms": 0, "groups": groups}


registry.register(API_KEY, 0, 5, handle)
