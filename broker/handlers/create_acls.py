"""CreateAcls: v0-3.

Behavior:
- Needs ALTER on the CLUSTER, else every creation answers
  CLUSTER_AUTHORIZATION_FAILED; with no authorizer configured
  (``authorizer.class.name`` empty) every creation answers SECURITY_DISABLED
  "No Authorizer is configured." (Kafka's AclApis.handleCreateAcls).
- A request with an UNKNOWN (or out-of-range) resource type, pattern type,
  operation or permission in any creation is refused whole: INVALID_REQUEST
  for every creation (CreateAclsRequest.validate).
- Otherwise each creation separately: INVALID_REQUEST with Kafka's message
  for an ACL it refuses (`validate_binding`: CLUSTER named other than
  kafka-cluster, empty name, ANY or MATCH pattern, ANY operation or
  permission, a principal without ``Type:``, ``/`` in the name); else added,
  durably before the answer (the data directory's file, or ZooKeeper in a
  cluster, where every broker picks it up). An ACL that exists already
  succeeds.
Version notes: v0 has no pattern type field: LITERAL (Kafka's check that
v0 creates only LITERAL ACLs cannot fail on the wire); flexible from v2; v3
allows the USER resource type (nothing differs in the broker).
Leaves out: Kafka closes the connection on a request its validate() refuses
(the parse fails); this answers the error code instead. No throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import ErrorCode

API_KEY = 30
NAME = "CreateAcls"


def _binding(c: Any) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType(c.resource_type),
            c.resource_name,
            PatternType(c.get("resource_pattern_type", PatternType.LITERAL)),
        ),
        AccessControlEntry(
            c.principal, c.host, AclOperation(c.operation), AclPermissionType(c.permission_type)
        ),
    )


def _refused(ctx: RequestContext, bindings: list[AclBinding]) -> tuple[int, str] | None:
    """The error answering every creation, when the request as a whole is refused."""
    if any(
        b.pattern.pattern_type == PatternType.UNKNOWN
        or b.pattern.resource_type == ResourceType.UNKNOWN
        or b.entry.permission == AclPermissionType.UNKNOWN
        or b.entry.operation == AclOperation.UNKNOWN
        for b in bindings
    ):
        return ErrorCode.INVALID_REQUEST, "CreatableAcls contain unknown elements"
    if not ctx.cluster_authorized(AclOperation.ALTER):
        return (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"Request {NAME} v{ctx.version} from {ctx.principal} is not authorized.",
        )
    if ctx.broker.security.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    return None


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    bindings = [_binding(c) for c in req.creations]
    refused = _refused(ctx, bindings)
    if refused is not None:
        code, message = refused
        results = [(code, message)] * len(bindings)
    else:
        results = await ctx.broker.security.acls.create(bindings)
    return {
        "throttle_time_ms": 0,
        "results": [{"error_code": int(code), "error_message": message} for code, message in results],
    }


registry.register(API_KEY, 0, 3, handle)
