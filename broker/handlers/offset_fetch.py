"""OffsetFetch: v1-3.

Behavior:
- Returns the group's committed offset and metadata per requested partition;
  a partition (or group, or topic) without a commit answers offset -1,
  metadata "" and error 0. Commits are visible once they were acknowledged.
- v2+: a null topic list returns every partition the group has committed.
- While the coordinator loads: COORDINATOR_LOAD_IN_PROGRESS (per partition in
  v1, also top-level in v2+).
Version notes: v2 makes `topics` nullable and adds a top-level error_code; v3 adds throttle_time_ms.
Leaves out: throttling; authorization; require_stable (v7).
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.groups.model import TopicPartition
from broker.groups.records import OffsetValue

API_KEY = 9


def _partition(index: int, value: OffsetValue | None, code: int = 0) -> dict[str, Any]:
    if value is None:
        return {"partition_index": index, "committed_offset": -1, "metadata": "", "error_code": code}
    return {
        "partition_index": index,
        "committed_offset": value.offset,
        "metadata": value.metadata,
        "error_code": code,
    }


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    requested: list[TopicPartition] | None = None
    if req.topics is not None:
        requested = [(t.name, p) for t in req.topics for p in t.partition_indexes]
    error, offsets = ctx.broker.groups.fetch_offsets(req.group_id, requested)
    if req.topics is None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(_partition(p, value))
        topics = [{"name": name, "partitions": parts} for name, parts in by_topic.items()]
    else:
        topics = [
            {
                "name": t.name,
                "partitions": [_partition(p, offsets.get((t.name, p)), error) for p in t.partition_indexes],
            }
            for t in req.topics
        ]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error}


registry.register(API_KEY, 1, 3, handle)
