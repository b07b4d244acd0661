"""ListOffsets: v1-3.

Behavior:
- timestamp -2 (earliest): the log start offset; -1 (latest): the high
  watermark (= last stable offset: no transactions yet); answered with timestamp -1.
- Any other timestamp: the first offset whose timestamp is >= it, with that
  timestamp, from the time index; none: offset -1, timestamp -1.
- Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; not the leader: NOT_LEADER_OR_FOLLOWER.
Version notes: v2 adds isolation_level and throttle_time_ms; v3 is v2's layout.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

API_KEY = 2
EARLIEST = -2
LATEST = -1


def _lookup(ctx: RequestContext, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
    plog = ctx.broker.replicas.leader(topic, partition).log
    if timestamp == EARLIEST:
        return -1, plog.log_start_offset
    if timestamp == LATEST:
        return -1, plog.high_watermark
    if timestamp < 0:
        raise KafkaError(f"invalid timestamp {timestamp}", ErrorCode.INVALID_REQUEST)
    found = plog.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1
    offset, ts = found
    return ts, offset


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            try:
                ts, offset = _lookup(ctx, t.name, p.partition_index, p.timestamp)
                code = 0
            except KafkaError as exc:
                ts, offset, code = -1, -1, exc.code
            parts.append(
                {"partition_index": p.partition_index, "error_code": code, "timestamp": ts, "offset": offset}
            )
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


registry.register(API_KEY, 1, 3, handle)
