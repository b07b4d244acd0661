"""Metadata: v0-5.

Behavior:
- Lists this broker (node id, advertised host and port) and names it the
  controller, and every partition led by it with replicas = ISR = [node id].
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
from broker.broker import INTERNAL_TOPICS
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

API_KEY = 3


def _topic(name: str, partitions: int, node: int) -> dict[str, Any]:
    return {
        "error_code": 0,
        "name": name,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": node,
                "replica_nodes": [node],
                "isr_nodes": [node],
                "offline_replicas": [],
            }
            for p in range(partitions)
        ],
    }


def _error_topic(name: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "name": name, "is_internal": False, "partitions": []}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    broker = ctx.broker
    config = broker.config
    node = broker.node_id
    known = broker.logs.topics()
    requested = req.topics
    if requested is None or (ctx.version == 0 and not requested):
        names = sorted(known)
    else:
        names = [t.name for t in requested]
    allow_create = config["auto.create.topics.enable"] and (ctx.version < 4 or req.allow_auto_topic_creation)
    topics = []
    for name in names:
        info = known.get(name)
        if info is None:
            if not allow_create:
                topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            try:
                broker.create_topic(name, int(config["num.partitions"]))
            except KafkaError as exc:
                code = exc.code if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS else 0
                topics.append(_error_topic(name, code))
                continue
            info = broker.logs.topics()[name]
        topics.append(_topic(name, info.partitions, node))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": node, "host": config.advertised_host, "port": ctx.broker.port, "rack": None}],
        "cluster_id": broker.cluster_id,
        "controller_id": node,
        "topics": topics,
    }


registry.register(API_KEY, 0, 5, handle)
