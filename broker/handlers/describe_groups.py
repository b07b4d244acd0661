"""DescribeGroups: v0-6.

Behavior:
- Per group: state (Empty, PreparingRebalance, CompletingRebalance, Stable),
  protocol type, and members (id, client id, client host). While Stable also
  the chosen protocol and each member's metadata and assignment; in the other
  states those are empty, as in Kafka.
- An unknown group, and a consumer-protocol (KIP-848) group, is described as
  state "Dead" with no members and error 0; from v6 (KIP-1043) with
  GROUP_ID_NOT_FOUND and Kafka's message ("Group <id> not found." / "Group
  <id> is not a classic group.").
Version notes: v1 adds throttle_time_ms; v2 has v1's layout; v3 adds
  include_authorized_operations / authorized_operations (when asked for, the
  operations the principal may perform on each group described: every one
  without an authorizer; else INT32_MIN); v4 adds each member's
  group_instance_id; v5 is flexible; v6 adds error_message.
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on each
  group, else it answers GROUP_AUTHORIZATION_FAILED with an empty state,
  protocol and members.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import authorized_operations, registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 15


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    with_operations = ctx.version >= 3 and req.include_authorized_operations
    groups = []
    for group_id in req.groups:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(
                {
                    "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    "group_id": group_id,
                    "group_state": "",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": authorized_operations.NOT_REQUESTED,
                }
            )
            continue
        error, summary = ctx.broker.groups.describe_group(group_id)
        message = None
        if ctx.version >= 6 and not error and summary.state == "Dead":
            error = ErrorCode.GROUP_ID_NOT_FOUND
            kind = "is not a classic group" if ctx.broker.groups.is_consumer_group(group_id) else "not found"
            message = f"Group {group_id} {kind}."
        operations = authorized_operations.NOT_REQUESTED
        if with_operations and not error:
            operations = authorized_operations.operations(ctx, ResourceType.GROUP, group_id)
        groups.append(
            {
                "error_code": error,
                "error_message": message,
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


registry.register(API_KEY, 0, 6, handle)
