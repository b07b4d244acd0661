"""Fetch: v4-11.

Behavior:
- Every requested partition is in the answer, empty ones included (kafka-python
  drops a response that misses one).
- Records are whole batches read from the segment files as bytes, starting at
  the batch holding fetch_offset, never past the high watermark; no per-record
  work. The first partition with data gets at least one whole batch even when
  it exceeds max_bytes / partition_max_bytes; later partitions only what fits
  in the response budget.
- fetch_offset outside [log start offset, high watermark]: OFFSET_OUT_OF_RANGE.
- A partition this broker hosts but does not lead: NOT_LEADER_OR_FOLLOWER.
- Long poll: fewer than min_bytes ready and max_wait_ms > 0 parks the fetch on
  its partitions until an append wakes it or max_wait_ms passes; then it is
  answered with whatever is there. A partition error (out of range, unknown
  partition) is answered at once, as Kafka does. Shutdown answers parked fetches at once.
- last_stable_offset = high watermark and an empty aborted-transactions list
  (no transactions yet), which read_committed consumers need.
Version notes: v7+ answer session_id 0 (no incremental fetch sessions) and
  ignore forgotten_topics_data; v11 answers preferred_read_replica -1.
- Follower fetches (replica_id >= 0) read up to the log end offset, not the
  high watermark; their fetch offset is the follower's LEO, which moves the
  leader's HW and the ISR (`ReplicaManager.follower_fetched`).
- v9+ current_leader_epoch older than the partition's: FENCED_LEADER_EPOCH;
  newer: UNKNOWN_LEADER_EPOCH.
Leaves out: fetch sessions, throttling.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from broker import registry
from broker.broker import Broker
from broker.context import RequestContext
from broker.replica import TopicPartition
from protocol.errors import ErrorCode, KafkaError
from protocol.records import validate_batches

API_KEY = 1


def _partition(index: int, code: int, hw: int = -1, start: int = -1, records: bytes = b"") -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": hw,
        "last_stable_offset": hw,
        "log_start_offset": start,
        "aborted_transactions": [] if code == 0 else None,
        "preferred_read_replica": -1,
        "records": records,
    }


def _read(broker: Broker, req: Any) -> tuple[list[dict[str, Any]], int, bool]:
    """(topic responses, record bytes in them, whether any partition answers an error)."""
    budget = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    errored = False
    responses = []
    follower = req.replica_id >= 0
    now_ms = int(time.time() * 1000)
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            try:
                part = broker.replicas.leader(topic.topic, p.partition)
                part.check_epoch(p.get("current_leader_epoch", -1))
                plog = part.log
                if follower:
                    broker.replicas.follower_fetched(part, req.replica_id, p.fetch_offset, now_ms)
                hw = plog.high_watermark
                start = plog.log_start_offset
                end = plog.log_end_offset if follower else hw
                records: bytes | memoryview = b""
                if p.fetch_offset < start or p.fetch_offset > end:
                    # with the log's bounds, so a follower below the log start knows where to restart
                    parts.append(_partition(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, hw, start))
                    errored = True
                    continue
                left = budget - total
                if p.fetch_offset < end and (left > 0 or total == 0):
                    records = plog.read(
                        p.fetch_offset,
                        min(p.partition_max_bytes, max(left, 0)),
                        min_one_batch=total == 0,
                        to_send=True,
                        upto_leo=follower,
                    ).data
                    total += len(records)
                    if broker.metrics is not None and records:
                        count = sum(h.record_count for h in validate_batches(records, check_crc=False))
                        broker.metrics.fetched(topic.topic, len(records), count)
                parts.append(_partition(p.partition, 0, hw, start, records))
            except KafkaError as exc:
                parts.append(_partition(p.partition, exc.code))
                errored = True
        responses.append({"topic": topic.topic, "partitions": parts})
    return responses, total, errored


def _answer(responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


def handle(ctx: RequestContext, req: Any) -> Any:
    responses, total, errored = _read(ctx.broker, req)
    if errored or total >= req.min_bytes or req.max_wait_ms <= 0:
        return _answer(responses)
    return _long_poll(ctx.broker, req)


async def _long_poll(broker: Broker, req: Any) -> dict[str, Any]:
    tps: list[TopicPartition] = [(t.topic, p.partition) for t in req.topics for p in t.partitions]
    deadline = time.monotonic() + req.max_wait_ms / 1000
    while True:
        wait = deadline - time.monotonic()
        if wait > 0 and not broker.shutting_down:
            fut = broker.replicas.park(tps)
            try:
                await asyncio.wait_for(fut, wait)
            except TimeoutError:
                pass
            finally:
                broker.replicas.unpark(fut, tps)
        responses, total, errored = _read(broker, req)
        if errored or total >= req.min_bytes or time.monotonic() >= deadline or broker.shutting_down:
            return _answer(responses)


registry.register(API_KEY, 4, 11, handle)
