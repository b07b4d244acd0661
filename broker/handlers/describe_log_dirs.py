"""DescribeLogDirs: v0-4.

Behavior:
- One result for the broker's data directory (its absolute path), listing the
  partitions this broker holds a log for: every one when ``topics`` is null,
  else those asked for that exist here (others are left out, as Kafka does).
- Per partition: ``partition_size``, the bytes of its segment files, and
  ``offset_lag`` = max(high watermark - log end offset, 0), as Kafka computes it
  for a current (not future) log; ``is_future_key`` is always false (no
  replica moves between directories).
- v4: ``total_bytes`` and ``usable_bytes`` of the file system holding the directory.
- A data directory the broker cannot stat answers KAFKA_STORAGE_ERROR for it.
Version notes: v1 is v0's layout; v2 is flexible; v3 adds a top-level error_code;
  v4 the byte totals.
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on the
  cluster, else no results and (v3+) the top-level error CLUSTER_AUTHORIZATION_FAILED.
Leaves out: throttling.
"""

from __future__ import annotations

import os
from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode


def _wanted(req: Any) -> dict[str, set[int]] | None:
    if req.topics is None:
        return None
    wanted: dict[str, set[int]] = {}
    for t in req.topics:
        wanted.setdefault(t.topic, set()).update(t.partitions)
    return wanted


API_KEY = 35


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.cluster_authorized(AclOperation.DESCRIBE):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
    logs = ctx.broker.logs
    log_dir = os.path.abspath(logs.data_dir)
    wanted = _wanted(req)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), plog in sorted(logs.logs()):
        if wanted is not None and index not in wanted.get(topic, ()):
            continue
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": index,
                "partition_size": plog.size,
                "offset_lag": max(plog.high_watermark - plog.log_end_offset, 0),
                "is_future_key": False,
            }
        )
    result: dict[str, Any] = {
        "error_code": 0,
        "log_dir": log_dir,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }
    try:
        fs = os.statvfs(log_dir)
        result["total_bytes"] = fs.f_blocks * fs.f_frsize
        result["usable_bytes"] = fs.f_bavail * fs.f_frsize
    except OSError:
        result.update(error_code=ErrorCode.KAFKA_STORAGE_ERROR, topics=[])
    return {"throttle_time_ms": 0, "error_code": 0, "results": [result]}


registry.register(API_KEY, 0, 4, handle)
