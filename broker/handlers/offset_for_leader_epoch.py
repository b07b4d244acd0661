"""OffsetForLeaderEpoch: v2-4.

Behavior:
- Per partition, as its leader: the largest leader epoch <= the requested one
  that this log has, and its end offset (the next epoch's start offset, or the
  log end offset for the latest epoch); a follower truncates its log to that
  point before fetching, never blindly to its high watermark.
- A requested epoch older than every epoch here (the log starts after that
  epoch's data was removed): that epoch and the start offset of the first
  epoch here, as Kafka answers; a consumer checking its position after a
  leader change then keeps it instead of resetting. Epoch -1, or one newer
  than every epoch here: epoch -1, offset -1 (UNDEFINED_EPOCH /
  UNDEFINED_EPOCH_OFFSET).
- current_leader_epoch older than the partition's: FENCED_LEADER_EPOCH; newer:
  UNKNOWN_LEADER_EPOCH. Not the leader: NOT_LEADER_OR_FOLLOWER; unknown
  partition: UNKNOWN_TOPIC_OR_PARTITION.
Version notes: v3 adds replica_id (-1 for consumers checking for truncation);
  v4 is flexible.
- Authorization (with an authorizer configured), as KafkaApis: CLUSTER_ACTION on
  the cluster (brokers) covers every topic; otherwise (consumers checking for
  truncation, KIP-320) DESCRIBE on each topic, else its partitions answer
  TOPIC_AUTHORIZATION_FAILED.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.authorized_operations import denied, unrestricted
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, KafkaError

API_KEY = 23


def _end_offset(ctx: RequestContext, topic: str, p: Any) -> tuple[int, int]:
    part = ctx.broker.replicas.leader(topic, p.partition)
    part.check_epoch(p.current_leader_epoch)
    plog = part.log
    return plog.leader_epochs.end_offset_for(p.leader_epoch, plog.log_end_offset)


def _forbidden(ctx: RequestContext, req: Any) -> frozenset[str]:
    if unrestricted(ctx) or ctx.cluster_authorized(AclOperation.CLUSTER_ACTION):
        return frozenset()
    return denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.topic for t in req.topics))


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    forbidden = _forbidden(ctx, req)
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                if t.topic in forbidden:
                    raise KafkaError("topic authorization failed", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                epoch, end = _end_offset(ctx, t.topic, p)
                code = 0
            except KafkaError as exc:
                epoch, end, code = -1, -1, exc.code
            parts.append(
                {"error_code": code, "partition": p.partition, "leader_epoch": epoch, "end_offset": end}
            )
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


registry.register(API_KEY, 2, 4, handle)
