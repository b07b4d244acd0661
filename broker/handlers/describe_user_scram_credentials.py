"""DescribeUserScramCredentials: v0.

Behavior:
- The SCRAM mechanisms and iteration counts of each user asked for (every
  user with credentials when ``users`` is null); never salts or keys.
- A user without credentials: RESOURCE_NOT_FOUND; a user named twice:
  DUPLICATE_RESOURCE; each with Kafka's message.
Version notes: flexible from v0.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.credentials import Result

API_KEY = 50


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    users = None if req.users is None else [u.name for u in req.users]
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
