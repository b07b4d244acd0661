"""AlterPartitionReassignments: v0-1 (kafka-reassign-partitions --execute/--cancel, Admin.alterPartitionReassignments).

Behavior, as Kafka's ZK-mode controller (broker/cluster/zk/reassignment.py has the rules):
- Each partition's ``replicas`` start a reassignment to them (replacing one
  in progress); null cancels the one in progress. The answer comes once the
  reassignment is written to ZooKeeper, not when it completes:
  ListPartitionReassignments shows it until then.
- Per partition: NONE, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS,
  UNKNOWN_TOPIC_OR_PARTITION (checked in Kafka's order), INVALID_REPLICATION_FACTOR
  (v1's ``allow_replication_factor_change`` false and a target of another
  size), REQUEST_TIMED_OUT (not known to be written within ``timeout_ms``:
  it may still start).
- Top level, with no partitions listed: NOT_CONTROLLER (clients send it to
  the controller). A request named twice for one partition: the last wins.
- Authorization (with an authorizer configured): ALTER on the CLUSTER, else
  CLUSTER_AUTHORIZATION_FAILED at the top level and for every partition.
- A single broker: a partition's only possible replica is this broker, so
  moving it there succeeds at once and any other broker is not alive.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode

API_KEY = 45


def _response(
    answers: dict[tuple[str, int], tuple[int, str | None]], code: int, message: str | None, allow: bool = True
) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (error, text) in answers.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": index, "error_code": error, "error_message": text}
        )
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": allow,  # v1: the request's, echoed
        "error_code": code,
        "error_message": message,
        "responses": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    targets: dict[tuple[str, int], list[int] | None] = {}
    for topic in req.topics:
        for p in topic.partitions:
            targets[(topic.name, p.partition_index)] = None if p.replicas is None else list(p.replicas)
    if not ctx.cluster_authorized(AclOperation.ALTER):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        return _response({tp: (code, message) for tp in targets}, code, message)
    allow = req.allow_replication_factor_change if ctx.version >= 1 else True
    answers = await ctx.broker.cluster.alter_partition_reassignments(
        targets, allow, max(req.timeout_ms, 0) / 1000
    )
    if answers is None:
        return _response(
            {}, ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.", allow
        )
    return _response(answers, ErrorCode.NONE, None, allow)


registry.register(API_KEY, 0, 1, handle)
