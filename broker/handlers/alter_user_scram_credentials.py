"""AlterUserScramCredentials: v0.

Behavior:
- Upsertions carry the client-salted password (SaltedPassword of RFC 5802),
  its salt and iteration count; the broker keeps only the stored and server
  keys derived from it. Deletions remove one mechanism's credential.
- Kafka's checks, per user (a user that fails one changes nothing):
  UNSUPPORTED_SASL_MECHANISM (unknown mechanism), UNACCEPTABLE_CREDENTIAL
  (empty name or salt, iterations outside 4096..16384), DUPLICATE_RESOURCE
  (the same user and mechanism twice), RESOURCE_NOT_FOUND (deleting a
  credential that does not exist).
- Needs ALTER on the CLUSTER (with an authorizer), else every user answers
  CLUSTER_AUTHORIZATION_FAILED and nothing changes.
- Durable before the answer: the data directory's file on a single broker,
  ZooKeeper ``/config/users/<name>`` in a cluster (every broker picks it up).
Version notes: flexible from v0.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from broker.security.credentials import Deletion, Upsertion
from protocol.errors import ErrorCode

API_KEY = 51


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.cluster_authorized(AclOperation.ALTER):
        users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return {
            "throttle_time_ms": 0,
            "results": [
                {"user": u, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
                for u in users
            ],
        }
    results = await ctx.broker.security.credentials.alter(
        [Deletion(d.name, d.mechanism) for d in req.deletions],
        [
            Upsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
            for u in req.upsertions
        ],
    )
    return {
        "throttle_time_ms": 0,
        "results": [{"user": r.user, "error_code": r.error, "error_message": r.message} for r in results],
    }


registry.register(API_KEY, 0, 0, handle)
