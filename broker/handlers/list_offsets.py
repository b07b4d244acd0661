"""ListOffsets: v1-10.

Behavior:
- timestamp -2 (earliest): the log start offset, with the epoch it was written
  under; for a tiered topic that is the start of its remote part.
- -4 (earliest local, KIP-405, v8+): the local log start offset of a tiered
  topic (the first offset still on this broker's disk), else as -2.
- -1 (latest): the high watermark; with isolation_level 1 (read_committed, v2+)
  the last stable offset
  for consumers, the log end offset for replicas (replica_id >= 0); answered
  with timestamp -1 and the partition's current leader epoch. A leader whose
  epoch starts past the high watermark (just elected, not caught up) answers
  OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before) to consumers.
- -3 (max timestamp, KIP-734): the first record carrying the largest timestamp
  in the log, with that timestamp; none below the high watermark (for
  read_committed: the last stable offset): -1, -1.
- -5 (latest tiered, KIP-1005, v9+): the highest offset copied to remote
  storage with its epoch; -1, -1 when nothing is yet, or the topic is not tiered.
- A special timestamp the request version does not know (-3 before v7, -4
  before v8, -5 before v9): UNSUPPORTED_VERSION, as Kafka.
- Any other timestamp >= 0: the first offset whose timestamp is >= it, with that
  timestamp, from the time index; none below the high watermark (for
  read_committed: the last stable offset): -1, -1. Another negative
  timestamp: INVALID_REQUEST.
- A timestamp >= 0 on a tiered topic (KIP-405) first searches the remote
  segments below the local log start (`RemoteLogManager.offset_for_timestamp`),
  then the local log if no remote record reaches it; the answer waits for the
  object store up to the request's timeout_ms (v10; before that, or 0:
  ``remote.list.offsets.request.timeout.ms``), else REQUEST_TIMED_OUT for that
  partition, and a failing store answers KAFKA_STORAGE_ERROR (retriable).
- A leader not caught up (above) answers consumers OFFSET_NOT_AVAILABLE also
  for -3 and timestamps that find nothing readable, as Kafka's
  fetchOffsetForTimestamp; earliest is answered.
- v4+ current_leader_epoch older than the partition's: FENCED_LEADER_EPOCH;
  newer: UNKNOWN_LEADER_EPOCH.
- Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; not the leader:
  NOT_LEADER_OR_FOLLOWER. A partition named twice: INVALID_REQUEST for both.
Version notes: v2 adds isolation_level and throttle_time_ms; v4 the leader
  epochs; v6 is flexible; v7-v10 add the special timestamps above and
  timeout_ms (how long a search of tiered storage may take).
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on each
  topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED (before any other check).
Leaves out: throttling.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.replica.markers import last_stable_offset
from broker.security.acls import AclOperation, ResourceType
from broker.tiered.manager import FAILURES as REMOTE_FAILURES
from protocol.errors import ErrorCode, KafkaError

API_KEY = 2
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
CONSUMER_REPLICA_ID = -1

_NOTHING = (-1, -1, -1)
# the first version that knows each special timestamp (Kafka's timestampMinSupportedVersion)
_MIN_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}


def _lookup(ctx: RequestContext, req: Any, topic: str, p: Any) -> tuple[int, int, int]:
    """``(timestamp, offset, leader_epoch)`` for one partition."""
    part = ctx.broker.replicas.leader(topic, p.partition_index)
    if ctx.version >= 4:
        part.check_epoch(p.current_leader_epoch)
    plog = part.log
    epochs = plog.leader_epochs
    timestamp = p.timestamp
    if ctx.version < _MIN_VERSION.get(timestamp, 0):
        raise KafkaError(
            f"timestamp {timestamp} needs ListOffsets v{_MIN_VERSION[timestamp]}",
            ErrorCode.UNSUPPORTED_VERSION,
        )
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        start = plog.log_start_offset if timestamp == EARLIEST else plog.local_log_start_offset
        return -1, start, epochs.epoch_for_offset(start)
    consumer = req.replica_id < 0
    committed = consumer and ctx.version >= 2 and req.isolation_level == 1
    if timestamp == LATEST:
        if not consumer:
            return -1, plog.log_end_offset, part.leader_epoch
        _not_caught_up(ctx, plog)
        if committed:
            return -1, last_stable_offset(part), part.leader_epoch
        return -1, plog.high_watermark, part.leader_epoch
    if timestamp == LATEST_TIERED:
        highest = plog.remote.highest_offset if plog.remote is not None else -1
        return (-1, highest, epochs.epoch_for_offset(highest)) if highest >= 0 else _NOTHING
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_record()
    elif timestamp < 0:
        raise KafkaError(f"invalid timestamp {timestamp}", ErrorCode.INVALID_REQUEST)
    else:
        found = plog.offset_for_timestamp(timestamp)
    # found below the HW; read_committed consumers also only below the LSO
    if found is None or (committed and found[0] >= last_stable_offset(part)):
        if consumer:
            _not_caught_up(ctx, plog)
        return _NOTHING
    offset, ts = found
    return ts, offset, epochs.epoch_for_offset(offset)


def _not_caught_up(ctx: RequestContext, plog: Any) -> None:
    """A leader whose epoch starts past its high watermark (just elected, HW not caught up) cannot
    tell a consumer what is readable: OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before)."""
    entries = plog.leader_epochs.entries
    if entries and entries[-1][1] > plog.high_watermark:
        code = ErrorCode.OFFSET_NOT_AVAILABLE if ctx.version >= 5 else ErrorCode.LEADER_NOT_AVAILABLE
        raise KafkaError("the new leader has not caught up with the high watermark yet", code)


def _answer(index: int, code: int, found: tuple[int, int, int]) -> dict[str, Any]:
    ts, offset, epoch = found
    return {
        "partition_index": index,
        "error_code": code,
        "timestamp": ts,
        "offset": offset,
        "leader_epoch": epoch,
    }


def _searches_remote(ctx: RequestContext, req: Any, topic: str, p: Any) -> bool:
    """A timestamp search of a tiered partition with a remote part (asynchronous)."""
    if p.timestamp < 0 or ctx.broker.remote_logs is None:
        return False
    part = ctx.broker.replicas.leader(topic, p.partition_index)
    if ctx.version >= 4:
        part.check_epoch(p.current_leader_epoch)
    plog = part.log
    return plog.remote is not None and plog.log_start_offset < plog.local_log_start_offset


def handle(ctx: RequestContext, req: Any) -> dict[str, Any] | Coroutine[Any, Any, dict[str, Any]]:
    named = Counter((t.name, p.partition_index) for t in req.topics for p in t.partitions)
    forbidden = denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in req.topics))
    topics = []
    remote: list[tuple[dict[str, Any], str, Any]] = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code = 0
            found = _NOTHING
            try:
                if t.name in forbidden:
                    raise KafkaError("topic authorization failed", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                if named[(t.name, p.partition_index)] > 1:
                    raise KafkaError("partition named twice", ErrorCode.INVALID_REQUEST)
                if _searches_remote(ctx, req, t.name, p):
                    remote.append((_answer(p.partition_index, 0, _NOTHING), t.name, p))
                    parts.append(remote[-1][0])
                    continue
                found = _lookup(ctx, req, t.name, p)
            except KafkaError as exc:
                code = exc.code
            parts.append(_answer(p.partition_index, code, found))
        topics.append({"name": t.name, "partitions": parts})
    answer = {"throttle_time_ms": 0, "topics": topics}
    if remote:
        return _search_remote(ctx, req, answer, remote)
    return answer


async def _search_remote(
    ctx: RequestContext, req: Any, answer: dict[str, Any], searches: list[tuple[dict[str, Any], str, Any]]
) -> dict[str, Any]:
    """Fill in the partitions whose timestamp search goes to the object store."""
    broker = ctx.broker
    rlm = broker.remote_logs
    timeout_ms = req.get("timeout_ms", 0) if ctx.version >= 10 else 0
    timeout_s = (timeout_ms or broker.remote_list_offsets_timeout_ms) / 1000

    async def one(result: dict[str, Any], topic: str, p: Any) -> None:
        try:
            part = broker.replicas.leader(topic, p.partition_index)
            async with asyncio.timeout(timeout_s):
                found = await rlm.offset_for_timestamp(part, p.timestamp)
            if found is None:
                result.update(_answer(p.partition_index, 0, _lookup(ctx, req, topic, p)))
            else:
                offset, ts = found
                result.update(
                    _answer(
                        p.partition_index, 0, (ts, offset, part.log.leader_epochs.epoch_for_offset(offset))
                    )
                )
        except TimeoutError:
            result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
        except KafkaError as exc:
            result["error_code"] = exc.code
        except REMOTE_FAILURES:
            result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR

    await asyncio.gather(*(one(result, topic, p) for result, topic, p in searches))
    return answer


registry.register(API_KEY, 1, 10, handle)
