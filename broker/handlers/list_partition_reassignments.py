"""ListPartitionReassignments: v0 (kafka-reassign-partitions --verify/--list, Admin.listPartitionReassignments).

Behavior, as Kafka's ZK-mode controller:
- ``topics`` null: every partition being reassigned; else those of the named
  partitions that are (partitions not being reassigned, or that do not
  exist, are left out without an error).
- Each: ``replicas`` (the target replicas followed by the original ones),
  ``adding_replicas``, ``removing_replicas``.
- NOT_CONTROLLER at the top level on any broker but the controller.
- Authorization (with an authorizer configured): DESCRIBE on the CLUSTER,
  else CLUSTER_AUTHORIZATION_FAILED with the partitions asked for listed
  without replicas, as Kafka's error response.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode

API_KEY = 46


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    asked = None if req.topics is None else [(t.name, p) for t in req.topics for p in t.partition_indexes]
    if not ctx.cluster_authorized(AclOperation.DESCRIBE):
        by_name: dict[str, list[dict[str, Any]]] = {}
        for topic, index in asked or ():
            by_name.setdefault(topic, []).append(
                {"partition_index": index, "replicas": [], "adding_replicas": [], "removing_replicas": []}
            )
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",
            "topics": [{"name": t, "partitions": parts} for t, parts in by_name.items()],
        }
    ongoing = ctx.broker.cluster.list_partition_reassignments(asked)
    if ongoing is None:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NOT_CONTROLLER,
            "error_message": "This is not the correct controller for this cluster.",
            "topics": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), a in sorted(ongoing.items()):
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": index,
                "replicas": list(a.replicas),
                "adding_replicas": list(a.adding),
                "removing_replicas": list(a.removing),
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }


registry.register(API_KEY, 0, 0, handle)
