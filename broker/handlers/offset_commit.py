"""OffsetCommit: v2-3.

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
Version notes: v3 adds throttle_time_ms; v2 and v3 share the request layout.
Leaves out: throttling; authorization; transactional offset commits.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.coordinator import OffsetCommit
from broker.groups.model import TopicPartition
from protocol.errors import ErrorCode

API_KEY = 8


def handle(ctx: RequestContext, req: Any) -> Any:
    known = ctx.broker.cluster.topics()
    codes: dict[TopicPartition, ErrorCode] = {}
    commits: dict[TopicPartition, OffsetCommit] = {}
    for topic in req.topics:
        info = known.get(topic.name)
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if info is None or not 0 <= p.partition_index < len(info.partitions):
                codes[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commits[tp] = OffsetCommit(p.committed_offset, p.committed_metadata)

    def respond(results: dict[TopicPartition, ErrorCode]) -> dict[str, Any]:
        merged = {**codes, **results}
        return {
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": merged[(topic.name, p.partition_index)],
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in req.topics
            ],
        }

    if not commits:
        return respond({})
    return deferred(
        lambda cb: ctx.broker.groups.commit_offsets(
            req.group_id,
            req.generation_id_or_member_epoch,
            req.member_id,
            None,
            req.retention_time_ms,
            commits,
            cb,
        ),
        respond,
    )


registry.register(API_KEY, 2, 3, handle)
