"""DescribeClientQuotas: v0-1.

Behavior (Kafka's KafkaApis and ClientQuotasImage.describe):
- Needs DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED
  (top-level error, null entries).
- Each filter component names an entity type (``user``, ``client-id``,
  ``ip``) and a match: 0 exact name, 1 the default entity, 2 any name
  (defaults included). An entity passes when it has every component's type
  with a matching name; ``strict`` also leaves out entities with a type the
  filter does not name. No components and not strict: every entity.
- Refused as a whole with Kafka's messages: an empty or repeated entity type,
  a match string with match types 1 and 2 or none with 0, an unknown match
  type, ``ip`` together with ``user``/``client-id`` (INVALID_REQUEST); an
  unknown entity type (UNSUPPORTED_VERSION).
- Answers every matching entity with its quota keys and values (doubles);
  a default entity's name is null. IP quotas are not kept here: a filter on
  ``ip`` matches nothing.
- In a cluster the quotas are read from ZooKeeper for each request, so a
  change made through another broker is seen at once.
Version notes: v1 is flexible.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from broker.security.quota_config import QuotaError, parse_filter, wire_entity
from protocol.errors import ErrorCode

API_KEY = 48


def _error(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.cluster_authorized(AclOperation.DESCRIBE_CONFIGS):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    try:
        flt = parse_filter(((c.entity_type, c.match_type, c.match) for c in req.components), req.strict)
    except QuotaError as exc:
        return _error(exc.code, exc.message)
    entries = [
        {"entity": wire_entity(entity), "values": [{"key": k, "value": v} for k, v in sorted(values.items())]}
        for entity, values in await ctx.broker.security.quotas.describe(flt)
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": entries}


registry.register(API_KEY, 0, 1, handle)
