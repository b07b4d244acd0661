"""Metadata: v0-5.

Behavior:
- Brokers, controller and every partition's leader, replicas, ISR and offline
  replicas come from the cluster view (one broker: itself, leading everything
  with replicas = ISR = [node id]). A partition with no leader answers
  LEADER_NOT_AVAILABLE with leader -1.
- v0: an empty topic list means all topics; v1+: null means all, empty means none.
- A requested topic that does not exist is created with num.partitions when
  auto.create.topics.enable is on and the request allows it (v4+
  allow_auto_topic_creation; always allowed before v4), else
  UNKNOWN_TOPIC_OR_PARTITION. An illegal name: INVALID_TOPIC_EXCEPTION.
- Internal topics (__consumer_offsets) carry is_internal=true.
Version notes: v1 adds rack/controller/is_internal, v2 cluster_id, v3 throttle,
  v4 allow_auto_topic_creation, v5 offline_replicas.
Leaves out: racks (null).
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.cluster import TopicState
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

API_KEY = 3


def _topic(topic: TopicState) -> dict[str, Any]:
    return {
        "error_code": 0,
        "name": topic.name,
        "is_internal": topic.internal,
        "partitions": [
            {
                "error_code": ErrorCode.LEADER_NOT_AVAILABLE if p.leader < 0 else 0,
                "partition_index": p.index,
                "leader_id": p.leader,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": list(p.offline_replicas),
            }
            for p in topic.partitions
        ],
    }


def _error_topic(name: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": []}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    config = broker.config
    cluster = broker.cluster
    requested = req.topics
    if requested is None or (ctx.version == 0 and not requested):
        names = sorted(cluster.topics())
    else:
        names = [t.name for t in requested]
    allow_create = config["auto.create.topics.enable"] and (ctx.version < 4 or req.allow_auto_topic_creation)
    topics = []
    for name in names:
        state = cluster.topic(name)
        if state is None:
            if not allow_create:
                topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            try:
                broker.admin.create_topic(name, int(config["num.partitions"]))
            except KafkaError as exc:
                code = exc.code if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS else 0
                topics.append(_error_topic(name, code))
                continue
            state = cluster.topic(name)
            if state is None:  # created, but not yet known here (another broker's controller)
                topics.append(_error_topic(name, ErrorCode.LEADER_NOT_AVAILABLE))
                continue
        topics.append(_topic(state))
    return {
        "throttle_time_ms": 0,
        "brokers": _brokers(ctx),
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics,
    }


def _brokers(ctx: RequestContext) -> list[dict[str, Any]]:
    """Live brokers at their addresses on the listener this request came in on (Kafka leaves out
    a broker that has no such listener)."""
    out = []
    for b in ctx.broker.cluster.brokers():
        address = b.address(ctx.listener)
        if address is not None:
            out.append({"node_id": b.node_id, "host": address[0], "port": address[1], "rack": b.rack})
    return out


registry.register(API_KEY, 0, 5, handle)
