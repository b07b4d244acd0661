"""ConsumerGroupHeartbeat: v0-1, the member side of the consumer group protocol (KIP-848).

Behavior (see `broker.groups.consumer_protocol` for the coordinator's rules):
- Joins (epoch 0), heartbeats, leaves (-1) and static leaves (-2) a
  consumer-protocol group; answers the member id (v0: generated here when the
  request's is empty), its epoch, the heartbeat interval
  (``group.consumer.heartbeat.interval.ms``) and, when it changed or the
  request was a full one, the member's assignment by topic id.
- Errors carry Kafka's message: INVALID_REQUEST for a malformed heartbeat,
  UNSUPPORTED_ASSIGNOR, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID,
  FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID,
  GROUP_MAX_SIZE_REACHED; NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS as
  the other group APIs.
Version notes: v1 adds subscribed_topic_regex (a regular expression matched in
  full against the topic names, internal topics left out; an invalid one is
  INVALID_REGULAR_EXPRESSION) and has the client generate the member id
  (Kafka 4.0 made v1 stable).
- A heartbeat that changes what is stored (a join, a new epoch or
  assignment, a leave) is answered once its records are on the in-sync
  replicas of ``__consumer_offsets``, as Kafka's coordinator runtime does;
  one that writes nothing once every earlier write of its partition is
  (its answer may rest on them), at once when none is pending.
- Authorization (with an authorizer configured), as KafkaApis (Kafka 4,
  KAFKA-18813): READ on the group, else GROUP_AUTHORIZATION_FAILED; then, when
  the request lists subscribed topic names, DESCRIBE on every one of them,
  else TOPIC_AUTHORIZATION_FAILED (the heartbeat is not processed).
Leaves out: throttling; Kafka matches regular expressions with RE2/J, here with
  Python's `re` (the common syntax is the same), and leaves out the topics a
  principal may not DESCRIBE from what a regex matches, which is not done here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.groups.consumer_protocol import Heartbeat, HeartbeatResult
from broker.groups.consumer_records import assignment_of, topic_partitions
from broker.handlers.join_group import client_host
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 68


def _refused(code: ErrorCode) -> dict[str, Any]:
    """Kafka's error response: the code and nothing else."""
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": None,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if req.subscribed_topic_names and denied(
        ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, req.subscribed_topic_names
    ):
        return _refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    beat = Heartbeat(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=(
            tuple(req.subscribed_topic_names) if req.subscribed_topic_names is not None else None
        ),
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=req.server_assignor,
        owned=assignment_of(req.topic_partitions) if req.topic_partitions is not None else None,
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
    )

    def respond(result: HeartbeatResult) -> dict[str, Any]:
        assignment = None
        if result.assignment is not None:
            assignment = {"topic_partitions": topic_partitions(result.assignment)}
        return {
            "throttle_time_ms": 0,
            "error_code": result.error,
            "error_message": result.message,
            "member_id": result.member_id,
            "member_epoch": result.member_epoch,
            "heartbeat_interval_ms": result.heartbeat_interval_ms,
            "assignment": assignment,
        }

    answered: asyncio.Future[HeartbeatResult] = asyncio.get_running_loop().create_future()

    def answer(result: HeartbeatResult) -> None:
        if not answered.done():  # a connection gone meanwhile cancelled it
            answered.set_result(result)

    ctx.broker.groups.consumer.heartbeat(beat, answer)
    if answered.done():  # at once: nothing to store
        return respond(answered.result())
    return _when_stored(answered, respond)


async def _when_stored(
    stored: asyncio.Future[HeartbeatResult], respond: Callable[[HeartbeatResult], dict[str, Any]]
) -> dict[str, Any]:
    return respond(await stored)


registry.register(API_KEY, 0, 1, handle)
