"""SyncGroup: v0-5.

Behavior:
- The leader's request carries every member's assignment; once the coordinator
  has stored it durably in __consumer_offsets the group is Stable and every
  waiting member is answered with its own assignment (members the leader left
  out get an empty one). Followers wait until then; in a Stable group the
  current assignment is returned at once.
- Fencing: unknown member UNKNOWN_MEMBER_ID, stale generation
  ILLEGAL_GENERATION, a rebalance started meanwhile REBALANCE_IN_PROGRESS,
  another member id for a static instance FENCED_INSTANCE_ID.
- v5: a protocol_type or protocol_name that differs from the group's answers
  INCONSISTENT_GROUP_PROTOCOL (null on either side skips the check), after the
  member and generation checks, as Kafka orders them (a stale member is told
  to rejoin, not that its protocol is wrong); answers carry the group's
  protocol type and name. A classic member of a KIP-848 group
  (`broker.groups.classic_members`) gets its assignment from the group's target
  at once, and its own protocol type and name echoed.
Version notes: v1 adds throttle_time_ms; v2 has v1's layout; v3 adds group_instance_id; v4 is
  flexible; v5 adds protocol_type and protocol_name.
- Authorization (with an authorizer configured), as KafkaApis: READ on the
  group, else GROUP_AUTHORIZATION_FAILED (checked before the protocol checks above).
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.model import SyncResult
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 14


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "assignment": b""}
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    instance = req.group_instance_id if ctx.version >= 3 else None

    group = ctx.broker.groups.group(req.group_id)
    protocol_type = group.protocol_type if group is not None else None
    protocol_name = group.protocol_name if group is not None else None
    asked = (req.protocol_type, req.protocol_name) if ctx.version >= 5 else (None, None)
    if group is not None and group.consumer is not None:
        protocol_type, protocol_name = asked  # a classic member of a consumer group: echoed, as Kafka

    def respond(result: SyncResult) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": result.error,
            "assignment": result.assignment,
            "protocol_type": protocol_type if result.error == ErrorCode.NONE else None,
            "protocol_name": protocol_name if result.error == ErrorCode.NONE else None,
        }

    return deferred(
        lambda cb: ctx.broker.groups.sync_group(
            req.group_id, req.generation_id, req.member_id, instance, assignments, cb, asked
        ),
        respond,
    )


registry.register(API_KEY, 0, 5, handle)
