"""OffsetCommit: v2-9.

Behavior:
- Per partition: a topic or partition that does not exist is
  UNKNOWN_TOPIC_OR_PARTITION; metadata longer than offset.metadata.max.bytes
  is OFFSET_METADATA_TOO_LARGE (null metadata is stored as ""); the rest are
  committed by the coordinator in one batch on the group's __consumer_offsets
  partition and answered only once that batch is fsynced (acks=all).
- Who may commit: members of the group's current generation while it is
  Stable or preparing a rebalance; anyone with generation -1 while the group
  has no members (standalone consumers). Otherwise ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS (waiting for SyncGroup).
- retention_time_ms -1 uses offsets.retention.minutes (counted from when the
  group became empty); any other value gives the offset an expire timestamp
  (stored as offset value v1).
- A group that does not exist, committed to with a generation >= 0: GROUP_ID_NOT_FOUND
  from v9, ILLEGAL_GENERATION before.
- A consumer-protocol (KIP-848) group: generation_id_or_member_epoch is the member's
  epoch (STALE_MEMBER_EPOCH if it is not the current one, UNKNOWN_MEMBER_ID for a
  stranger, UNSUPPORTED_VERSION below v9); -1 with no member id commits while the
  group has no members.
Version notes: v3 adds throttle_time_ms; v5 drops retention_time_ms (the broker's
  offsets.retention.minutes applies); v6 adds committed_leader_epoch, kept with the
  offset and returned by OffsetFetch v5+; v7 adds group_instance_id (static members:
  FENCED_INSTANCE_ID for a stale member id); v8 is flexible; v9 is v8's layout.
- Authorization (with an authorizer configured), as KafkaApis: READ on the
  group, else every partition answers GROUP_AUTHORIZATION_FAILED; READ on each
  topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED (before
  UNKNOWN_TOPIC_OR_PARTITION), and the rest are committed.
Leaves out: throttling; transactional offset commits.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.commit_requests import commit_requests
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.model import TopicPartition
from broker.security.acls import AclOperation, ResourceType
from broker.topic_results import partition_codes
from protocol.errors import ErrorCode

API_KEY = 8


def handle(ctx: RequestContext, req: Any) -> Any:
    allowed = ctx.authorized(AclOperation.READ, ResourceType.GROUP, req.group_id)
    refusal = None if allowed else ErrorCode.GROUP_AUTHORIZATION_FAILED
    codes, commits = commit_requests(ctx, req.topics, refusal, leader_epochs=ctx.version >= 6)

    def respond(results: dict[TopicPartition, ErrorCode]) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "topics": partition_codes(req.topics, {**codes, **results})}

    if not commits:
        return respond({})
    return deferred(
        lambda cb: ctx.broker.groups.commit_offsets(
            req.group_id,
            req.generation_id_or_member_epoch,
            req.member_id,
            req.group_instance_id if ctx.version >= 7 else None,
            req.retention_time_ms if 2 <= ctx.version <= 4 else -1,
            commits,
            cb,
            missing_group=ErrorCode.GROUP_ID_NOT_FOUND if ctx.version >= 9 else ErrorCode.ILLEGAL_GENERATION,
            api_version=ctx.version,
        ),
        respond,
    )


registry.register(API_KEY, 2, 9, handle)
