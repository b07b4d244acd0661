"""ConsumerGroupDescribe: v0-1, the consumer-protocol groups (KIP-848) as admin tools see them.

Behavior:
- Per group id asked: its state (Empty, Assigning, Reconciling, Stable), group
  epoch, assignment epoch, assignor (the one most members ask for, else the
  first of ``group.consumer.assignors``) and members, each with its
  subscription, epoch, current and target assignment (topic id, name and
  partitions; a topic deleted since is left out) and (v1, KIP-1099) its type:
  0 for a member speaking the classic protocol inside the group (it joined
  with JoinGroup), 1 for a consumer-protocol one.
- An unknown group, or one using the classic protocol, is GROUP_ID_NOT_FOUND
  with Kafka's message; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS as the
  other group APIs.
- include_authorized_operations: the operations the principal may perform on
  each group described (every one without an authorizer).
- Authorization (with an authorizer configured), as KafkaApis (Kafka 4,
  KAFKA-18813): DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED; a
  group some of whose members subscribe to or are (to be) assigned a topic the
  principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED, with nothing
  of the group described.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import authorized_operations, registry
from broker.authorized_operations import denied, unrestricted
from broker.context import RequestContext
from broker.groups.consumer_model import Assignment
from broker.groups.consumer_records import topic_partitions
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 69
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # v1 member_type


def _assignment(ctx: RequestContext, assignment: Assignment) -> dict[str, Any]:
    named = []
    for entry in topic_partitions(assignment):
        name = ctx.broker.cluster.topic_name(entry["topic_id"])
        if name is not None:
            named.append({**entry, "topic_name": name})
    return {"topic_partitions": named}


def _failed(group_id: str, code: int, message: str | None, operations: int) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": operations,
    }


def _topics_hidden(ctx: RequestContext, members: list[dict[str, Any]]) -> bool:
    """Whether the described members name a topic the principal may not DESCRIBE."""
    names: set[str] = set()
    for m in members:
        names.update(m["subscribed_topic_names"])
        for part in ("assignment", "target_assignment"):
            names.update(t["topic_name"] for t in m[part]["topic_partitions"])
    return bool(denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names))


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    consumer = ctx.broker.groups.consumer
    not_requested = authorized_operations.NOT_REQUESTED
    groups = []
    for group_id in req.group_ids:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None, not_requested))
            continue
        error, message, cg = consumer.describe(group_id)
        if cg is None:
            groups.append(_failed(group_id, error, message, not_requested))
            continue
        members = [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": _assignment(ctx, m.assigned),
                "target_assignment": _assignment(ctx, cg.target.get(m.member_id, {})),
                "member_type": CLASSIC_MEMBER if m.classic is not None else CONSUMER_MEMBER,
            }
            for m in cg.members.values()
        ]
        if not unrestricted(ctx) and _topics_hidden(ctx, members):
            groups.append(
                _failed(
                    group_id,
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "The described group uses topics that the client is not authorized to describe.",
                    not_requested,
                )
            )
            continue
        operations = not_requested
        if req.include_authorized_operations:
            operations = authorized_operations.operations(ctx, ResourceType.GROUP, group_id)
        groups.append(
            {
                "error_code": 0,
                "error_message": None,
                "group_id": group_id,
                "group_state": cg.state(),
                "group_epoch": cg.group_epoch,
                "assignment_epoch": cg.assignment_epoch,
                "assignor_name": consumer.assignor_of(cg),
                "members": members,
                "authorized_operations": operations,
            }
        )
    return {"throttle_time_ms": 0, "groups": groups}


registry.register(API_KEY, 0, 1, handle)
