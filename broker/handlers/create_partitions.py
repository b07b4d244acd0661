"""CreatePartitions: v0-3.

Behavior:
- Raises a topic's partition count to ``count``; the new partitions are
  empty and led like any other (cluster: placed by Kafka's round robin,
  rack-aware when the brokers have racks, continuing from partition 0's
  first replica, unless ``assignments`` names their replicas).
- While some live brokers have a ``broker.rack`` and others do not, every
  topic of the request answers UNKNOWN_SERVER_ERROR, assignments given or
  not, as Kafka (ZooKeeper mode) fails the whole request when it reads the
  brokers' racks; Kafka's answer has no message, this one says why.
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; ``count`` not above the current
  count (or above the maximum): INVALID_PARTITIONS; assignments of the wrong
  number, or naming brokers that are not distinct live ones, or a replica
  count other than the topic's: INVALID_REPLICA_ASSIGNMENT; more replicas
  than live brokers: INVALID_REPLICATION_FACTOR; an internal topic (its
  partition count is what maps groups to coordinators): INVALID_REQUEST; the
  same topic twice in one request: INVALID_REQUEST.
- validate_only checks everything and changes nothing.
- Authorization (with an authorizer configured), as KafkaApis: ALTER on each
  topic, else TOPIC_AUTHORIZATION_FAILED (after a duplicate's INVALID_REQUEST,
  before any other check).
- Quotas: the added partitions count against the client's
  controller_mutation_rate (not with validate_only); from v3 a topic is
  refused with THROTTLING_QUOTA_EXCEEDED once the quota is exceeded, below v3
  the answer is throttled instead (broker/security/quotas.py).
Version notes: v0-1 share one layout (v1 only changes quota throttling); v2 is
  flexible; v3 may answer THROTTLING_QUOTA_EXCEEDED.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.cluster.assignment import MixedRacks, check_racks
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.security.quotas import MutationQuota
from broker.topic_results import per_topic
from protocol.errors import ErrorCode, KafkaError

API_KEY = 37
STRICT_QUOTA_SINCE = 3  # controller_mutation_rate refuses topics from v3 (KIP-599)


def _add(ctx: RequestContext, t: Any, validate_only: bool, quota: MutationQuota | None) -> None:
    if not ctx.authorized(AclOperation.ALTER, ResourceType.TOPIC, t.name):
        raise KafkaError("The topic authorization is failed.", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if t.name in INTERNAL_TOPICS:
        raise KafkaError(f"the partition count of {t.name} cannot change", ErrorCode.INVALID_REQUEST)
    if quota is not None and not validate_only:
        state = ctx.broker.cluster.topic(t.name)
        added = t.count - len(state.partitions) if state is not None else 0
        if added > 0:
            quota.admit(added)
    given = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
    ctx.broker.admin.add_partitions(t.name, t.count, given, validate_only=validate_only)


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    try:
        check_racks({b.node_id: b.rack for b in ctx.broker.cluster.brokers()})
    except MixedRacks as exc:  # Kafka fails the whole request before looking at any topic
        results = [{"name": t.name, "error_code": exc.code, "error_message": str(exc)} for t in req.topics]
        return {"throttle_time_ms": 0, "results": results}
    quota = ctx.broker.security.quotas.mutation_quota(ctx, STRICT_QUOTA_SINCE)
    results = per_topic(req.topics, lambda t: _add(ctx, t, req.validate_only, quota))
    answer = {"throttle_time_ms": 0, "results": results}
    return answer if quota is None else quota.finish(answer)


registry.register(API_KEY, 0, 3, handle)
