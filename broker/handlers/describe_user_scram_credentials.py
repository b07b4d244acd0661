"""DescribeUserScramCredentials: v0.

Behavior:
- The SCRAM mechanisms and iteration counts of each user asked for (every
  user with credentials when ``users`` is null); never salts or keys.
- A user without credentials: RESOURCE_NOT_FOUND; a user named twice:
  DUPLICATE_RESOURCE; each with Kafka's message.
- Needs DESCRIBE on the CLUSTER (with an authorizer), else a top-level
  CLUSTER_AUTHORIZATION_FAILED. An empty list of users, like null, asks for
  every user (as Kafka's ScramImage.describe).
Version notes: flexible from v0.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from broker.security.credentials import Result
from protocol.errors import ErrorCode

API_KEY = 50


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.cluster_authorized(AclOperation.DESCRIBE):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": None,
            "results": [],
        }
    users = [u.name for u in req.users] if req.users else None
    results = []
    for entry in ctx.broker.security.credentials.describe(users):
        if isinstance(entry, Result):
            results.append(
                {
                    "user": entry.user,
                    "error_code": entry.error,
                    "error_message": entry.message,
                    "credential_infos": [],
                }
            )
            continue
        user, infos = entry
        results.append(
            {
                "user": user,
                "error_code": 0,
                "error_message": None,
                "credential_infos": [{"mechanism": m, "iterations": i} for m, i in infos],
            }
        )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


registry.register(API_KEY, 0, 0, handle)
