"""ListGroups: v0-5.

Behavior:
- Every group this broker coordinates (all of them), with its protocol type
  ("" for groups that only store offsets), including Empty groups.
- v4+: states_filter keeps the groups in those states; v5+: types_filter the groups of those
  types ("classic", or "consumer" for KIP-848 groups, whose protocol type is "consumer" and
  states Empty, Assigning, Reconciling, Stable). Both compare case-insensitively, as Kafka;
  empty: all.
Version notes: v1 adds throttle_time_ms; v2 has v1's layout; v3 is flexible; v4 adds the states
  filter and group_state; v5 the types filter and group_type.
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on the
  cluster lists every group; otherwise only the groups the principal may DESCRIBE.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType

API_KEY = 16


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    error, groups = ctx.broker.groups.list_groups()
    states = {s.lower() for s in req.states_filter} if ctx.version >= 4 else set()
    types = {t.lower() for t in req.types_filter} if ctx.version >= 5 else set()
    if not ctx.cluster_authorized(AclOperation.DESCRIBE):
        groups = [g for g in groups if ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": g.group_type,
            }
            for g in groups
            if (not states or g.state.lower() in states) and (not types or g.group_type in types)
        ],
    }


registry.register(API_KEY, 0, 5, handle)
