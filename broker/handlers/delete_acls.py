"""DeleteAcls: v0-3.

Behavior:
- Each filter removes the ACLs it selects (the same matching as DescribeAcls:
  ANY pattern type is that exact name as LITERAL or PREFIXED, MATCH every
  pattern that applies to the name) and answers them as its matching ACLs;
  an ACL several filters select is listed under the first of them only, as
  Kafka does. Durable before the answer (the data directory's file, or
  ZooKeeper in a cluster, where every broker picks it up). A filter naming
  one resource exactly also removes ACLs other brokers wrote a moment ago.
- Needs ALTER on the CLUSTER, else every filter answers
  CLUSTER_AUTHORIZATION_FAILED; with no authorizer configured every filter
  answers SECURITY_DISABLED "No Authorizer is configured." (Kafka's
  AclApis.handleDeleteAcls). A request with an UNKNOWN (or out-of-range)
  resource type, pattern type, operation or permission in any filter is
  refused whole: INVALID_REQUEST for every filter (DeleteAclsRequest).
- A store that cannot be written: UNKNOWN_SERVER_ERROR for the filters
  whose ACLs it held (no message, as Kafka hides them).
Version notes: v0 has no pattern type filter: LITERAL (what Kafka makes of
ANY at v0; its refusal of other pattern types at v0 cannot arise on the
wire), so v0 never removes PREFIXED ACLs; flexible from v2; v3 allows the
USER resource type.
Leaves out: Kafka closes the connection on a filter its validate() refuses
(the parse fails); this answers the error code instead. A failed write is
reported per filter, where Kafka reports it per matching ACL. No throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from protocol.errors import ErrorCode

API_KEY = 31
NAME = "DeleteAcls"


def _filter(f: Any) -> AclBindingFilter:
    """One filter of the request (v0 has no pattern type: LITERAL)."""
    return AclBindingFilter(
        ResourceType(f.resource_type_filter),
        f.resource_name_filter,
        PatternType(f.get("pattern_type_filter", PatternType.LITERAL)),
        f.principal_filter,
        f.host_filter,
        AclOperation(f.operation),
        AclPermissionType(f.permission_type),
    )


def _refused(ctx: RequestContext, filters: list[AclBindingFilter]) -> tuple[int, str] | None:
    """The error answering every filter, when the request as a whole is refused."""
    if any(
        f.pattern_type == PatternType.UNKNOWN
        or f.resource_type == ResourceType.UNKNOWN
        or f.operation == AclOperation.UNKNOWN
        or f.permission == AclPermissionType.UNKNOWN
        for f in filters
    ):
        return ErrorCode.INVALID_REQUEST, "Filters contain UNKNOWN elements"
    if not ctx.cluster_authorized(AclOperation.ALTER):
        return (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"Request {NAME} v{ctx.version} from {ctx.principal} is not authorized.",
        )
    if ctx.broker.security.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    return None


def _matching(b: AclBinding) -> dict[str, Any]:
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": int(b.pattern.resource_type),
        "resource_name": b.pattern.name,
        "pattern_type": int(b.pattern.pattern_type),
        "principal": b.entry.principal,
        "host": b.entry.host,
        "operation": int(b.entry.operation),
        "permission_type": int(b.entry.permission),
    }


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    filters = [_filter(f) for f in req.filters]
    refused = _refused(ctx, filters)
    if refused is not None:
        code, message = refused
        results: list[tuple[int, str | None, list[AclBinding]]] = [(code, message, [])] * len(filters)
    else:
        results = await ctx.broker.security.acls.delete(filters)
    return {
        "throttle_time_ms": 0,
        "filter_results": [
            {
                "error_code": int(code),
                "error_message": message,
                "matching_acls": [_matching(b) for b in removed],
            }
            for code, message, removed in results
        ],
    }


registry.register(API_KEY, 0, 3, handle)
