"""DescribeCluster: v0-2.

Behavior:
- The cluster id, the controller (the ZooKeeper controller in a cluster, this
  broker on its own) and every live broker at its address on the listener the
  request came in on, as Metadata lists them, each with its rack
  (``broker.rack``; null when it has none).
- cluster_authorized_operations when asked: the cluster operations the
  principal may perform (every one without an authorizer, as Kafka), 0 when
  it may not DESCRIBE the cluster; otherwise INT32_MIN. Nothing else is
  checked (Kafka's DescribeCluster needs no ACL).
- v1 endpoint_type: 1 (brokers) is what a broker answers; 2 (controllers):
  MISMATCHED_ENDPOINT_TYPE, as a Kafka broker answers (only KRaft controllers
  serve it); any other: UNSUPPORTED_ENDPOINT_TYPE.
- v2 include_fenced_brokers / is_fenced (KIP-1073): a fenced broker is a KRaft
  one that registered but is not unfenced yet; a broker here is listed once it
  holds its ZooKeeper registration and never fenced, so every broker answers
  is_fenced false and there are no others to include.
Version notes: flexible from v0; v1 adds endpoint_type; v2 the fencing fields.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import authorized_operations, leader_hints, registry
from broker.context import RequestContext
from protocol.errors import ErrorCode

API_KEY = 60
BROKERS, CONTROLLERS = 1, 2


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    endpoint_type = req.endpoint_type if ctx.version >= 1 else BROKERS
    cluster = ctx.broker.cluster
    if endpoint_type != BROKERS:
        mismatched = endpoint_type == CONTROLLERS
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.MISMATCHED_ENDPOINT_TYPE
            if mismatched
            else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            "error_message": "this is a broker; ask it for brokers (endpoint type 1)"
            if mismatched
            else f"unknown endpoint type {endpoint_type}",
            "endpoint_type": endpoint_type,
            "cluster_id": cluster.cluster_id,
            "brokers": [],
        }
    brokers = [
        {
            "broker_id": n["node_id"],
            "host": n["host"],
            "port": n["port"],
            "rack": n["rack"],
            "is_fenced": False,
        }
        for n in leader_hints.node_endpoints(ctx)
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "endpoint_type": BROKERS,
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "brokers": brokers,
        "cluster_authorized_operations": authorized_operations.cluster_operations(ctx)
        if req.include_cluster_authorized_operations
        else authorized_operations.NOT_REQUESTED,
    }


registry.register(API_KEY, 0, 2, handle)
