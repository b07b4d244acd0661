"""DeleteGroups: v0-2.

Behavior:
- Deletes each named group that has no members, with all its committed
  offsets: tombstones go to __consumer_offsets and the answer follows once
  they are fsynced. A group with members: NON_EMPTY_GROUP; an unknown group:
  GROUP_ID_NOT_FOUND.
Version notes: v0 and v1 share one layout; v2 is flexible.
Leaves out: throttling; authorization.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups import deferred
from protocol.errors import ErrorCode

API_KEY = 42


def handle(ctx: RequestContext, req: Any) -> Any:
    names = list(req.groups_names)

    def respond(results: dict[str, ErrorCode]) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "results": [{"group_id": g, "error_code": results[g]} for g in names],
        }

    return deferred(lambda cb: ctx.broker.groups.delete_groups(names, cb), respond)


registry.register(API_KEY, 0, 2, handle)
