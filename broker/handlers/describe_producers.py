"""DescribeProducers: v0.

Behavior:
- Per partition, as its leader: the producers with state in that partition
  (idempotent producers that wrote to it and have not expired after
  ``transactional.id.expiration.ms``): id, epoch, last sequence written, and
  the wall-clock time of their last append, the coordinator epoch of their
  last transaction marker and the first offset of their open transaction
  (-1: none).
- Not the leader: NOT_LEADER_OR_FOLLOWER; unknown topic or partition:
  UNKNOWN_TOPIC_OR_PARTITION; each with a message.
Version notes: flexible from v0.
- Authorization (with an authorizer configured), as KafkaApis: READ on each
  topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED with Kafka's message.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, KafkaError

API_KEY = 61


def _partition(ctx: RequestContext, topic: str, index: int, readable: bool) -> dict[str, Any]:
    try:
        if not readable:
            raise KafkaError("Topic authorization failed.", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        part = ctx.broker.replicas.leader(topic, index)
    except KafkaError as exc:
        return {
            "partition_index": index,
            "error_code": exc.code,
            "error_message": str(exc),
            "active_producers": [],
        }
    producers = [] if part.producers is None else part.producers.describe()
    return {
        "partition_index": index,
        "error_code": 0,
        "error_message": None,
        "active_producers": [
            {
                "producer_id": pid,
                "producer_epoch": epoch,
                "last_sequence": last_seq,
                "last_timestamp": last_ms,
                "coordinator_epoch": coordinator_epoch,
                "current_txn_start_offset": txn_start,
            }
            for pid, epoch, last_seq, last_ms, coordinator_epoch, txn_start in producers
        ],
    }


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = []
    for t in req.topics:
        readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, t.name)
        topics.append(
            {
                "name": t.name,
                "partitions": [_partition(ctx, t.name, p, readable) for p in t.partition_indexes],
            }
        )
    return {"throttle_time_ms": 0, "topics": topics}


registry.register(API_KEY, 0, 0, handle)
