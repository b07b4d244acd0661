"""DeleteGroups: v0-2.

Behavior:
- Deletes each named group that has no members, with all its committed
  offsets: tombstones go to __consumer_offsets and the answer follows once
  they are fsynced. A group with members: NON_EMPTY_GROUP; an unknown group:
  GROUP_ID_NOT_FOUND.
Version notes: v0 and v1 share one layout; v2 is flexible.
- Authorization (with an authorizer configured), as KafkaApis: DELETE on each
  group, else GROUP_AUTHORIZATION_FAILED and that group is left alone.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.groups import deferred
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 42


def handle(ctx: RequestContext, req: Any) -> Any:
    names = list(req.groups_names)
    forbidden = denied(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    allowed = [g for g in names if g not in forbidden] if forbidden else names

    def respond(results: dict[str, ErrorCode]) -> dict[str, Any]:
        codes = {**results, **dict.fromkeys(forbidden, ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        return {
            "throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": codes[g]} for g in names],
        }

    return deferred(lambda cb: ctx.broker.groups.delete_groups(allowed, cb), respond)


registry.register(API_KEY, 0, 2, handle)
