"""DescribeAcls: v0-3.

Behavior:
- The filter selects ACLs as Kafka's AclBindingFilter does: null name,
  principal or host and ANY type, operation or permission match anything;
  pattern type ANY matches LITERAL and PREFIXED patterns of exactly that name,
  MATCH every pattern that applies to a resource of that name (the literal
  name, the wildcard ``*``, every PREFIXED pattern it starts with).
- The answer groups the ACLs by resource pattern, one entry per pattern with
  its ACLs (DescribeAclsResponse.aclsResources).
- Needs DESCRIBE on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED; with no
  authorizer configured SECURITY_DISABLED "No Authorizer is configured on the
  broker" (Kafka's AclApis.handleDescribeAcls). A filter with an UNKNOWN (or
  out-of-range) resource type, pattern type, operation or permission:
  INVALID_REQUEST (DescribeAclsRequest.normalizeAndValidate). Errors are
  top-level, with no resources.
- Reads this broker's copy: in a cluster, ACLs written through another broker
  show once its change notification has been read (milliseconds; at most
  5 s when a ZooKeeper watch was missed).
Version notes: v0 has no pattern type filter: LITERAL (what Kafka makes of
ANY at v0; its refusal of other pattern types at v0 cannot arise on the
wire), so v0 never sees PREFIXED ACLs; flexible from v2; v3 allows the USER
resource type.
Leaves out: Kafka closes the connection on a filter its validate() refuses
(the parse fails); this answers the error code instead. No throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import ErrorCode

API_KEY = 29
NAME = "DescribeAcls"


def _filter(req: Any) -> AclBindingFilter | tuple[int, str]:
    """The request's filter (v0 has no pattern type: LITERAL), or the error refusing it."""
    f = AclBindingFilter(
        ResourceType(req.resource_type_filter),
        req.resource_name_filter,
        PatternType(req.get("pattern_type_filter", PatternType.LITERAL)),
        req.principal_filter,
        req.host_filter,
        AclOperation(req.operation),
        AclPermissionType(req.permission_type),
    )
    if (
        f.pattern_type == PatternType.UNKNOWN
        or f.resource_type == ResourceType.UNKNOWN
        or f.permission == AclPermissionType.UNKNOWN
        or f.operation == AclOperation.UNKNOWN
    ):
        return ErrorCode.INVALID_REQUEST, "DescribeAclsRequest contains UNKNOWN elements"
    return f


def resources(bindings: list[AclBinding]) -> list[dict[str, Any]]:
    """``bindings`` grouped by pattern (first-seen order), each ACL once, as the response's array."""
    grouped: dict[ResourcePattern, dict[AccessControlEntry, None]] = {}
    for b in bindings:
        grouped.setdefault(b.pattern, {})[b.entry] = None
    return [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "acls": [
                {
                    "principal": e.principal,
                    "host": e.host,
                    "operation": int(e.operation),
                    "permission_type": int(e.permission),
                }
                for e in entries
            ],
        }
        for pattern, entries in grouped.items()
    ]


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    f = _filter(req)
    if isinstance(f, tuple):
        code, message = f
    elif not ctx.cluster_authorized(AclOperation.DESCRIBE):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        message = f"Request {NAME} v{ctx.version} from {ctx.principal} is not authorized."
    elif ctx.broker.security.authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker"
    else:
        found = ctx.broker.security.acls.describe(f)
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": resources(found)}
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "resources": []}


registry.register(API_KEY, 0, 3, handle)
