"""OffsetFetch: v1-9.

Behavior:
- Returns the group's committed offset and metadata per requested partition;
  a partition (or group, or topic) without a commit answers offset -1,
  metadata "" and error 0. Commits are visible once they were acknowledged.
- v2+: a null topic list returns every partition the group has committed.
- While the coordinator loads: COORDINATOR_LOAD_IN_PROGRESS (per partition in
  v1, also top-level in v2+).
- v8+: several groups in one request, each answered with its own error code
  (a group-level error, e.g. NOT_COORDINATOR for a group another broker
  coordinates, leaves that group's topic list empty, as Kafka does).
Version notes: v2 makes `topics` nullable and adds a top-level error_code; v3 adds
  throttle_time_ms; v5 returns the committed leader epoch; v6 is flexible; v7 adds
  require_stable: a partition with an offset committed by a transaction still
  open (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT and no offset, and
  the client retries; v8 the groups array; v9
  member_id and member_epoch, which consumer-protocol groups check when set
  (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), as Kafka does.
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on each
  group, else that group answers GROUP_AUTHORIZATION_FAILED (like the other
  group-level errors above); the partitions of a named topic the principal may
  not DESCRIBE answer TOPIC_AUTHORIZATION_FAILED (offset -1) unless the group
  failed; with a null topic list such topics are left out.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.groups.model import TopicPartition
from broker.groups.records import OffsetValue
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 9


def _partition(index: int, value: OffsetValue | None, code: int = 0) -> dict[str, Any]:
    if value is None:
        return {
            "partition_index": index,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": code,
        }
    return {
        "partition_index": index,
        "committed_offset": value.offset,
        "committed_leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "error_code": code,
    }


def _group(
    ctx: RequestContext,
    group_id: str,
    topics: Any,
    member_id: str | None = None,
    member_epoch: int = -1,
    stable: bool = False,
) -> tuple[int, list[dict[str, Any]]]:
    """One group's answer: (error code, topics); ``topics`` None asks for every committed partition."""
    groups = ctx.broker.groups
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        if topics is None:
            return error, []
        return error, [
            {"name": t.name, "partitions": [_partition(p, None, error) for p in t.partition_indexes]}
            for t in topics
        ]
    requested: list[TopicPartition] | None = None
    hidden: frozenset[str] = frozenset()
    if topics is not None:
        hidden = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in topics))
        requested = [(t.name, p) for t in topics if t.name not in hidden for p in t.partition_indexes]
    error, offsets = groups.fetch_offsets(group_id, requested, member_id, member_epoch)

    def partition(topic: str, p: int, value: OffsetValue | None, code: int) -> dict[str, Any]:
        if stable and not code and groups.unstable(group_id, (topic, p)):
            return _partition(p, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        return _partition(p, value, code)

    if topics is None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(partition(topic, p, value, 0))
        # offsets of topics the principal may not describe stay hidden
        hidden = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, by_topic)
        return error, [
            {"name": name, "partitions": parts} for name, parts in by_topic.items() if name not in hidden
        ]
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return error, [
        {
            "name": t.name,
            "partitions": [
                _partition(p, None, error or refused)
                if t.name in hidden
                else partition(t.name, p, offsets.get((t.name, p)), error)
                for p in t.partition_indexes
            ],
        }
        for t in topics
    ]


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    stable = ctx.version >= 7 and req.require_stable
    if ctx.version < 8:
        error, topics = _group(ctx, req.group_id, req.topics, stable=stable)
        return {"throttle_time_ms": 0, "topics": topics, "error_code": error}
    groups = []
    for g in req.groups:
        if ctx.version >= 9:
            error, topics = _group(ctx, g.group_id, g.topics, g.member_id, g.member_epoch, stable)
        else:
            error, topics = _group(ctx, g.group_id, g.topics, stable=stable)
        groups.append({"group_id": g.group_id, "topics": [] if error else topics, "error_code": error})
    return {"throttle_time_ms": 0, "groups": groups}


registry.register(API_KEY, 1, 9, handle)
