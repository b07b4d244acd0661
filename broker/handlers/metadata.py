"""Metadata: v0-13.

Behavior:
- Brokers (each with its ``broker.rack``, null when it has none: a cluster
  member's from its ZooKeeper registration), controller and every
  partition's leader, leader epoch, replicas,
  ISR and offline replicas come from the cluster view (one broker: itself,
  leading everything with replicas = ISR = [node id]). A partition with no
  leader answers LEADER_NOT_AVAILABLE with leader -1; one whose leader has no
  endpoint on the listener the request came in on answers LISTENER_NOT_FOUND
  (v6+; LEADER_NOT_AVAILABLE before, as Kafka).
- v0: an empty topic list means all topics; v1+: null means all, empty means none.
- By name: a requested topic that does not exist is created with
  num.partitions when auto.create.topics.enable is on and the request allows
  it (v4+ allow_auto_topic_creation; always allowed before v4), else
  UNKNOWN_TOPIC_OR_PARTITION. An illegal name: INVALID_TOPIC_EXCEPTION (with
  or without auto-creation, as Kafka). `__transaction_state` is created as
  the transaction coordinator creates it, `__consumer_offsets` only by the
  broker; until a new topic has leaders here: LEADER_NOT_AVAILABLE (also when
  another broker created it at the same moment). A creation that fails
  answers its error, as Kafka's auto-creation in ZooKeeper mode (e.g.
  UNKNOWN_SERVER_ERROR while only some brokers have a rack to place it by).
- By ID (v12+, a non-zero topic_id): known IDs are described under their
  names, an unknown one answers UNKNOWN_TOPIC_ID with a null name; as in
  Kafka, once any topic is asked for by ID the names in the request are not
  looked at, and nothing is created. A topic ID or a null name in v10-11:
  INVALID_REQUEST for every topic asked for.
- Internal topics (__consumer_offsets) carry is_internal=true.
- Authorization (with an authorizer configured), as KafkaApis: the all-topics
  form lists only the topics the principal may DESCRIBE; a topic named (or,
  v12+, asked for by ID: answered with a null name) that it may not describe
  answers TOPIC_AUTHORIZATION_FAILED, whether or not it exists. Auto-creating
  a topic needs CREATE on the cluster or on the topic, else the topic
  answers TOPIC_AUTHORIZATION_FAILED.
- Authorized operations (v8+), when asked for: the operations the principal
  may perform on each topic described (every one without an authorizer), and
  v8-10 on the cluster (0 without DESCRIBE on it); else INT32_MIN.
Version notes: v1 adds rack/controller/is_internal, v2 cluster_id, v3 throttle,
  v4 allow_auto_topic_creation, v5 offline_replicas, v6 LISTENER_NOT_FOUND,
  v7 leader_epoch, v8 authorized operations, v9 flexible, v10 topic_id,
  v11 drops the cluster's operations, v12 lookups by topic ID, v13 a top-level
  error_code (KIP-1102: REBOOTSTRAP_REQUIRED, which no Kafka 4.1 broker sets;
  always 0 here too).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker import authorized_operations, leader_hints, registry
from broker.authorized_operations import denied, unrestricted
from broker.cluster import TopicState
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from broker.groups.store import OFFSETS_TOPIC
from broker.security.acls import AclOperation, ResourceType
from broker.txn.log import TXN_TOPIC
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import ZERO_UUID
from storage import naming

API_KEY = 3
# Answers that describe no topic, so carry no authorized operations (Kafka leaves them INT32_MIN).
_NOT_DESCRIBED = (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INVALID_REQUEST, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _topic(ctx: RequestContext, topic: TopicState) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    no_listener = ErrorCode.LISTENER_NOT_FOUND if ctx.version >= 6 else ErrorCode.LEADER_NOT_AVAILABLE
    partitions = []
    for p in topic.partitions:
        error = 0
        if p.leader < 0:
            error = ErrorCode.LEADER_NOT_AVAILABLE
        else:
            leader = cluster.broker(p.leader)
            if leader is not None and leader.address(ctx.listener) is None:
                error = no_listener
        partitions.append(
            {
                "error_code": error,
                "partition_index": p.index,
                "leader_id": p.leader,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr),
                "offline_replicas": list(p.offline_replicas),
            }
        )
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.internal,
        "partitions": partitions,
    }


def _error_topic(
    name: str | None, code: int, topic_id: uuid.UUID = ZERO_UUID, internal: bool = False
) -> dict[str, Any]:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": internal, "partitions": []}


def _creatable(ctx: RequestContext, names: list[str]) -> Any:
    """Which of ``names`` (topics that do not exist) the principal may create: CREATE on the
    cluster, else on the topic (checked only for those it asks about)."""
    if unrestricted(ctx) or ctx.cluster_authorized(AclOperation.CREATE):
        return lambda name: True
    cannot = denied(ctx, AclOperation.CREATE, ResourceType.TOPIC, names)
    return lambda name: name not in cannot


def _by_name(ctx: RequestContext, name: str, allow_create: bool) -> dict[str, Any]:
    broker = ctx.broker
    cluster = broker.cluster
    state = cluster.topic(name)
    if state is None:
        if naming.topic_name_error(name) is not None:
            return _error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
        if not allow_create:
            return _error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            if name == TXN_TOPIC:  # internal topics get their own layout and configs
                broker.transactions.ensure_topic()
            elif name == OFFSETS_TOPIC:
                pass  # created by the broker (the controller, in a cluster) once it can be
            else:
                broker.admin.create_topic(name, int(broker.config["num.partitions"]))
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:  # another broker got there first: below
                return _error_topic(name, exc.code)
        state = cluster.topic(name)
        if state is None:  # created, but not yet known here (another broker's controller)
            return _error_topic(name, ErrorCode.LEADER_NOT_AVAILABLE)
    return _topic(ctx, state)


def _topics(ctx: RequestContext, req: Any) -> list[dict[str, Any]]:
    cluster = ctx.broker.cluster
    requested = req.topics
    if requested is None or (ctx.version == 0 and not requested):
        listed = sorted(cluster.topics().items())
        hidden = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (name for name, _ in listed))
        return [_topic(ctx, state) for name, state in listed if name not in hidden]
    if ctx.version >= 10:
        by_id = [t.topic_id for t in requested if t.topic_id != ZERO_UUID]
        if ctx.version < 12 and (by_id or any(t.name is None for t in requested)):
            # v10-11 answers cannot carry a null name: such a topic is answered as "".
            return [_error_topic(t.name or "", ErrorCode.INVALID_REQUEST, t.topic_id) for t in requested]
        if by_id:
            out = []
            for topic_id in dict.fromkeys(by_id):
                name = cluster.topic_name(topic_id)
                state = None if name is None else cluster.topic(name)
                if state is None:
                    out.append(_error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                elif not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, state.name):
                    # topic IDs are not secret, names are: no name, as Kafka answers
                    out.append(_error_topic(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id))
                else:
                    out.append(_topic(ctx, state))
            return out
    allow_create = ctx.broker.config["auto.create.topics.enable"] and (
        ctx.version < 4 or req.allow_auto_topic_creation
    )
    names = list(dict.fromkeys(t.name for t in requested))
    hidden = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    creatable = None
    if allow_create and not unrestricted(ctx):
        missing = [n for n in names if n not in hidden and cluster.topic(n) is None]
        creatable = _creatable(ctx, missing) if missing else None
    out = []
    for name in names:
        if name in hidden:
            out.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        elif creatable is not None and cluster.topic(name) is None and not creatable(name):
            out.append(
                _error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, internal=name in INTERNAL_TOPICS)
            )
        else:
            out.append(_by_name(ctx, name, allow_create))
    return out


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    topics = _topics(ctx, req)
    cluster_operations = authorized_operations.NOT_REQUESTED
    if ctx.version >= 8:
        if req.include_topic_authorized_operations:
            for t in topics:
                if t["error_code"] not in _NOT_DESCRIBED:
                    t["topic_authorized_operations"] = authorized_operations.operations(
                        ctx, ResourceType.TOPIC, t["name"]
                    )
        if ctx.version <= 10 and req.include_cluster_authorized_operations:
            cluster_operations = authorized_operations.cluster_operations(ctx)
    return {
        "throttle_time_ms": 0,
        "brokers": leader_hints.node_endpoints(ctx),
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations,
        "error_code": ErrorCode.NONE,
    }


registry.register(API_KEY, 0, 13, handle)
