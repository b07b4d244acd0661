"""DeleteRecords: v0-1.

Behavior:
- Per partition: moves the log start offset up to ``offset`` (-1 means the high
  watermark) and deletes the segments wholly below it; answers the new log start
  offset as ``low_watermark``. An offset below the current log start offset
  changes nothing and answers the current one.
- ``offset`` above the high watermark, or negative other than -1: OFFSET_OUT_OF_RANGE.
- A topic whose cleanup.policy lacks ``delete`` (compact only): POLICY_VIOLATION, as Kafka.
- Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; an offline log: KAFKA_STORAGE_ERROR.
- The answer waits until ``log-start-offset-checkpoint`` is written, so a
  crash right after it cannot bring the deleted records back.
- Authorization (with an authorizer configured), as KafkaApis: DELETE on each
  topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED (low watermark -1).
Version notes: v0 and v1 share one layout, v2 is flexible; ``timeout_ms`` is ignored (one replica:
  nothing to wait for).
"""

from __future__ import annotations

import logging
from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from protocol.errors import ErrorCode, KafkaError

API_KEY = 21
HIGH_WATERMARK = -1

log = logging.getLogger("minikafka.delete_records")


def _delete(ctx: RequestContext, topic: str, partition: int, offset: int) -> int:
    plog = ctx.broker.replicas.leader(topic, partition).log
    if not plog.config.delete:
        raise KafkaError(
            f"records of {topic}-{partition} cannot be deleted: cleanup.policy is {plog.config.cleanup_policy}",
            ErrorCode.POLICY_VIOLATION,
        )
    if offset == HIGH_WATERMARK:
        offset = plog.high_watermark
    return plog.delete_records(offset)


def handle(ctx: RequestContext, req: Any) -> Any:
    topics = []
    moved = False
    forbidden = denied(ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                if t.name in forbidden:
                    raise KafkaError("topic authorization failed", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                low = _delete(ctx, t.name, p.partition_index, p.offset)
                code = 0
                moved = True
            except KafkaError as exc:
                log.debug("delete records %s-%d: %s", t.name, p.partition_index, exc)
                low, code = -1, exc.code
            parts.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": code})
        topics.append({"name": t.name, "partitions": parts})
    response = {"throttle_time_ms": 0, "topics": topics}
    if not moved:
        return response
    return _after_checkpoint(ctx, response)


async def _after_checkpoint(ctx: RequestContext, response: dict[str, Any]) -> dict[str, Any]:
    try:
        await ctx.broker.log_tasks.checkpoint_log_starts()
    except OSError as exc:
        log.error("log start offset checkpoint failed: %s", exc)
        for t in response["topics"]:
            for p in t["partitions"]:
                if p["error_code"] == 0:
                    p.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, low_watermark=-1)
    return response


registry.register(API_KEY, 0, 2, handle)
