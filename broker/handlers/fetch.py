"""Fetch: v4-18.

Behavior:
- Every requested partition is in the answer, empty ones included (kafka-python
  drops a response that misses one).
- Records are whole batches read from the segment files as bytes, starting at
  the batch holding fetch_offset, never past the high watermark; no per-record
  work. The first partition with data gets at least one whole batch even when
  it exceeds max_bytes / partition_max_bytes; later partitions only what fits
  in the response budget.
- fetch_offset outside [log start offset, log end offset]: OFFSET_OUT_OF_RANGE.
  A consumer between the high watermark and the log end offset (a leader that
  just took over may have a lower HW than the one before it) gets no records
  and no error, as Kafka answers: resetting it would make it read again.
- A partition this broker hosts but does not lead: NOT_LEADER_OR_FOLLOWER for
  followers and for consumers before v11. From v11 a consumer's fetch carries
  client metadata (its rack), and any local replica serves it, as Kafka's
  fetchOnlyLeader rule has it (KIP-392): a follower reads up to its own high
  watermark (read_committed: its own LSO, from the transactions and markers it
  replicated, with its own aborted-transaction index), and answers an offset
  outside its log OFFSET_OUT_OF_RANGE, as any replica does.
- Preferred read replica (v11+, ``replica.selector.class`` set to Kafka's
  RackAwareReplicaSelector): a leader answers a consumer that gives a rack_id
  with preferred_read_replica = the in-sync follower in that rack that has
  the fetch offset (`broker.replica.selector`), no records, the leader's HW,
  LSO and log start, and the answer is sent at once rather than parked (as
  Kafka's fetchMessages); -1 (read here) when the leader itself is chosen.
  Without a selector every answer says -1.
- Long poll: fewer than min_bytes ready and max_wait_ms > 0 parks the fetch on
  its partitions until an append wakes it or max_wait_ms passes; then it is
  answered with whatever is there. A partition error (out of range, unknown
  partition) is answered at once, as Kafka does. Shutdown answers parked fetches at once.
- last_stable_offset is the partition's LSO (`broker.replica.markers`).
  isolation_level 1 (read_committed) reads only below it and gets the aborted
  transactions overlapping the records returned (producer id, first offset),
  from the transaction index; read_uncommitted reads up to the high watermark
  and gets none. Control batches are returned as stored: clients skip them.
- Tiered topics (KIP-405): a fetch_offset in [log start, local log start) is
  only in the object store. A follower gets OFFSET_MOVED_TO_TIERED_STORAGE
  with the log's bounds (it rebuilds its state from the remote metadata). For
  a consumer, the first such partition of the request is read from the object
  store (`broker.tiered.manager.RemoteLogManager.read`) and the answer is sent
  when that read completes, at most ``remote.fetch.max.wait.ms`` later (then
  with no records and no error, as Kafka's DelayedRemoteFetch); other such
  partitions of the same request answer no records and no error. A failing
  object store answers KAFKA_STORAGE_ERROR for that partition: retriable, every
  client retries it (Kafka answers UNKNOWN_SERVER_ERROR, which the Java
  consumer only logs and retries).
Version notes: v7+ answer session_id 0 (no incremental fetch sessions) and
  ignore forgotten_topics_data; v11 adds rack_id and preferred_read_replica.
- Follower fetches (replica_id >= 0) read up to the log end offset, not the
  high watermark; their fetch offset is the follower's LEO, which moves the
  leader's HW and the ISR (`ReplicaManager.follower_fetched`, which also keeps
  the follower's log start offset for the replica selector).
- v9+ current_leader_epoch older than the partition's: FENCED_LEADER_EPOCH;
  newer: UNKNOWN_LEADER_EPOCH.
- v12+ last_fetched_epoch (>= 0): if this log's end offset for that epoch is
  below fetch_offset, or the log has only older epochs, the fetcher's log
  diverged: the answer carries diverging_epoch (the largest epoch <= it and
  its end offset) and no records, and a follower's fetch state is not
  updated; it truncates there and fetches again. An epoch newer than any
  here has no end offset: OFFSET_OUT_OF_RANGE, as Kafka's readRecords.
- v12+: NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH come with the leader
  this broker knows of (current_leader); v16+ the response lists the
  addresses of those leaders (node_endpoints), as KIP-951.
- v13+ names topics by ID, in requests and answers: an unknown ID answers
  UNKNOWN_TOPIC_ID for each of its partitions.
Version notes: v12 is flexible, v13 topic IDs, v15 replica_state instead of
  replica_id, v16 node_endpoints, v17 replica_directory_id (ignored), v18 a
  tagged high_watermark that KRaft's replication sends (KIP-1166; ignored: a
  consumer's v18 fetch is answered as v17).
- Authorization (with an authorizer configured; none: nothing is checked), as
  KafkaApis: a follower fetch (replica id >= 0) needs CLUSTER_ACTION on the
  cluster, else every partition answers TOPIC_AUTHORIZATION_FAILED; a consumer
  fetch needs READ on each topic, else its partitions answer
  TOPIC_AUTHORIZATION_FAILED (an unknown topic ID stays UNKNOWN_TOPIC_ID).
  One check per distinct topic per request, answered at once like other
  partition errors.
- Client quotas: a consumer's record bytes count against its
  consumer_byte_rate; an answer that puts it over is sent without records,
  with throttle_time_ms, and the connection reads nothing for that long
  (broker/security/quotas.py). An answer carries at most the quota's bytes
  over its window (rate x (quota.window.num - 1) x window seconds): Kafka
  caps max_bytes, and min_bytes to that. Follower fetches are exempt.
- Metrics (with metrics.port): a consumer's record bytes count in
  consumer_fetch_bytes_total by whether this broker served them as the
  partition's leader or as a follower.
Leaves out: fetch sessions; replica selectors other than Kafka's rack-aware one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from broker import leader_hints, registry
from broker.authorized_operations import ALL_NAMES, denied
from broker.context import RequestContext
from broker.replica import TopicPartition
from broker.replica.markers import aborted_in, bytes_below, last_stable_offset
from broker.replica.selector import LEADER, preferred_read_replica
from broker.security.acls import AclOperation, ResourceType
from broker.tiered.manager import FAILURES as FETCH_FAILURES
from protocol.errors import ErrorCode, KafkaError
from protocol.records import validate_batches

log = logging.getLogger("minikafka.fetch")

API_KEY = 1
READ_COMMITTED = 1


def _partition(
    index: int,
    code: int,
    hw: int = -1,
    start: int = -1,
    records: bytes | memoryview = b"",
    lso: int = -1,
    preferred: int = -1,
) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "high_watermark": hw,
        "last_stable_offset": lso,
        "log_start_offset": start,
        "aborted_transactions": [] if code == 0 else None,
        "preferred_read_replica": preferred,
        "records": records,
    }


def _replica_id(version: int, req: Any) -> int:
    return req.replica_state.replica_id if version >= 15 else req.replica_id


def _diverging(plog: Any, p: Any) -> dict[str, int] | None:
    """The fetcher's diverging epoch, or None if its log agrees with ours (v12+ requests with a
    last_fetched_epoch, which consumers leave at -1)."""
    last_epoch = p.last_fetched_epoch
    epoch, end = plog.leader_epochs.end_offset_for(last_epoch, plog.log_end_offset)
    if end < 0:  # an epoch newer than any here: nothing to truncate to (Kafka: out of range)
        raise KafkaError(f"no end offset for epoch {last_epoch}", ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < last_epoch or end < p.fetch_offset:
        return {"epoch": epoch, "end_offset": end}
    return None


def _topic_names(ctx: RequestContext, req: Any) -> list[str | None]:
    """Each request topic's name (v13+: looked up by ID; None if no topic has it)."""
    if ctx.version < 13:
        return [t.topic for t in req.topics]
    return [ctx.broker.cluster.topic_name(t.topic_id) for t in req.topics]


def _forbidden(ctx: RequestContext, req: Any, names: list[str | None]) -> Collection[str | None]:
    """The topics of the request its principal may not fetch (empty, unread, without an authorizer)."""
    if ctx.broker.security.authorizer is None:
        return frozenset()
    if _replica_id(ctx.version, req) >= 0:
        return frozenset() if ctx.cluster_authorized(AclOperation.CLUSTER_ACTION) else ALL_NAMES
    return denied(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _budget(ctx: RequestContext, req: Any) -> int:
    """The response's record-byte budget: max_bytes, capped by the consumer's quota window."""
    budget = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
    quotas = ctx.broker.security.quotas
    if quotas.enabled:
        cap = quotas.fetch_cap(ctx, req)
        if cap is not None:
            budget = min(budget, cap)
    return budget


def _rack_of(ctx: RequestContext) -> Callable[[int], str | None]:
    """A broker's rack as the consumer's listener shows it (None: no rack, not registered, or no
    endpoint on that listener), for `preferred_read_replica`."""
    cluster, listener = ctx.broker.cluster, ctx.listener

    def rack_of(node_id: int) -> str | None:
        node = cluster.broker(node_id)
        return node.rack if node is not None and node.address(listener) is not None else None

    return rack_of


@dataclass(slots=True)
class _RemoteRead:
    """The partition of a consumer fetch to be read from the object store (its answer, filled in)."""

    result: dict[str, Any]
    part: Any
    offset: int
    max_bytes: int
    min_one: bool
    aborted_upper: int | None


def _read(
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    forbidden: Collection[str | None],
    budget: int,
    remote: list[_RemoteRead] | None = None,
) -> tuple[list[dict[str, Any]], int, bool, bool]:
    """(topic responses, record bytes in them, whether any partition answers an error, whether
    any names a preferred read replica). ``remote``: where a consumer fetch's read from the object
    store is put (at most one; None: such partitions answer no records)."""
    broker = ctx.broker
    total = 0
    errored = redirected = False
    responses = []
    replica_id = _replica_id(ctx.version, req)
    follower = replica_id >= 0
    # Kafka's fetchOnlyLeader: consumers with client metadata (v11+) may read any replica
    leader_only = follower or ctx.version < 11
    client_rack = "" if leader_only or broker.replica_selector is None else req.rack_id
    rack_of = _rack_of(ctx) if client_rack else None
    local = broker.replicas.leader if leader_only else broker.replicas.partition
    committed = not follower and req.isolation_level == READ_COMMITTED
    now_ms = int(time.time() * 1000)
    for topic, name in zip(req.topics, names, strict=True):
        parts = []
        if forbidden and name in forbidden:
            parts = [_partition(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
            responses.append({"topic": name, "topic_id": topic.get("topic_id"), "partitions": parts})
            errored = True
            continue
        for p in topic.partitions:
            try:
                if name is None:
                    raise KafkaError("unknown topic id", ErrorCode.UNKNOWN_TOPIC_ID)
                part = local(name, p.partition)
                part.check_epoch(p.get("current_leader_epoch", -1))
                plog = part.log
                if rack_of is not None and part.is_leader:
                    preferred = preferred_read_replica(part, client_rack, p.fetch_offset, now_ms, rack_of)
                    if preferred != LEADER:  # no records: the consumer goes there (and asks at once)
                        hw = plog.high_watermark
                        lso = last_stable_offset(part)
                        parts.append(
                            _partition(
                                p.partition, 0, hw, plog.log_start_offset, lso=lso, preferred=preferred
                            )
                        )
                        redirected = True
                        continue
                diverging = _diverging(plog, p) if p.get("last_fetched_epoch", -1) >= 0 else None
                if diverging is not None:
                    hw = plog.high_watermark
                    result = _partition(p.partition, 0, hw, plog.log_start_offset, lso=hw)
                    result["diverging_epoch"] = diverging
                    parts.append(result)
                    continue
                if follower:
                    broker.replicas.follower_fetched(
                        part, replica_id, p.fetch_offset, now_ms, p.get("log_start_offset", -1)
                    )
                hw = plog.high_watermark
                lso = last_stable_offset(part)
                start = plog.log_start_offset
                leo = plog.log_end_offset
                end = leo if follower else hw
                records: bytes | memoryview = b""
                if p.fetch_offset < start or p.fetch_offset > leo:
                    # with the log's bounds, so a follower below the log start knows where to restart
                    parts.append(_partition(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, hw, start, lso=lso))
                    errored = True
                    continue
                if plog.remote is not None and p.fetch_offset < plog.local_log_start_offset:
                    if follower:
                        code = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
                        parts.append(_partition(p.partition, code, hw, start, lso=lso))
                        errored = True
                        continue
                    result = _partition(p.partition, 0, hw, start, b"", lso)
                    parts.append(result)
                    if remote is not None and not remote and broker.remote_logs is not None:
                        left = budget - total
                        remote.append(
                            _RemoteRead(
                                result,
                                part,
                                p.fetch_offset,
                                min(p.partition_max_bytes, max(left, 0)),
                                total == 0,
                                lso if committed else None,
                            )
                        )
                    continue
                if committed:
                    end = lso
                left = budget - total
                catching_up = follower and replica_id not in part.isr
                if catching_up and broker.replicas.throttles.leader_throttled(
                    broker.logs.topic_overrides(name), p.partition
                ):
                    end = p.fetch_offset  # a reassignment's copy, over its rate: nothing this time
                if p.fetch_offset < end and (left > 0 or total == 0):
                    records = plog.read(
                        p.fetch_offset,
                        min(p.partition_max_bytes, max(left, 0)),
                        min_one_batch=total == 0,
                        to_send=True,
                        upto_leo=follower,
                    ).data
                    if committed and lso < hw:
                        records = records[: bytes_below(records, lso)]
                    total += len(records)
                    throttles = broker.replicas.throttles
                    # Kafka counts every throttled partition's bytes, in-sync followers' too
                    if (
                        follower
                        and throttles.leader.rate is not None
                        and records
                        and throttles.leader_counts(broker.logs.topic_overrides(name), p.partition)
                    ):
                        throttles.leader.record(len(records))
                    if broker.metrics is not None and records:
                        count = sum(h.record_count for h in validate_batches(records, check_crc=False))
                        served = None if follower else ("leader" if part.is_leader else "follower")
                        broker.metrics.fetched(name, len(records), count, served)
                result = _partition(p.partition, 0, hw, start, records, lso)
                if committed and records:
                    result["aborted_transactions"] = aborted_in(plog, p.fetch_offset, lso)
                parts.append(result)
            except KafkaError as exc:
                result = _partition(p.partition, exc.code)
                if ctx.version >= 12 and exc.code in leader_hints.WRONG_LEADER and name is not None:
                    result["current_leader"] = leader_hints.current_leader(ctx, name, p.partition)
                parts.append(result)
                errored = True
        responses.append({"topic": name, "topic_id": topic.get("topic_id"), "partitions": parts})
    return responses, total, errored, redirected


def _answer(ctx: RequestContext, req: Any, responses: list[dict[str, Any]], errored: bool) -> dict[str, Any]:
    answer = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
    quotas = ctx.broker.security.quotas
    if quotas.enabled:  # consumer_byte_rate (broker/security/quotas.py)
        quotas.record_fetch(ctx, req, answer)
    if errored and ctx.version >= 16:  # leader hints come with errors only: no loop on the hot path
        leaders = [
            p["current_leader"]["leader_id"]
            for t in responses
            for p in t["partitions"]
            if "current_leader" in p
        ]
        if leaders:
            answer["node_endpoints"] = leader_hints.node_endpoints(ctx, leaders)
    return answer


def handle(ctx: RequestContext, req: Any) -> Any:
    names = _topic_names(ctx, req)
    forbidden = _forbidden(ctx, req, names)
    budget = _budget(ctx, req)
    min_bytes = min(req.min_bytes, budget)  # as Kafka (fetchMinBytes): never wait for more than may be sent
    remote: list[_RemoteRead] = []
    responses, total, errored, redirected = _read(ctx, req, names, forbidden, budget, remote)
    if remote:
        return _remote_read(ctx, req, responses, errored, remote[0])
    if errored or redirected or total >= min_bytes or req.max_wait_ms <= 0:
        return _answer(ctx, req, responses, errored)
    return _long_poll(ctx, req, names, forbidden, budget, min_bytes)


async def _remote_read(
    ctx: RequestContext, req: Any, responses: list[dict[str, Any]], errored: bool, read: _RemoteRead
) -> dict[str, Any]:
    """Answer once ``read`` is done, or after remote.fetch.max.wait.ms with no records for it."""
    broker = ctx.broker
    rlm = broker.remote_logs
    result = read.result
    try:
        async with asyncio.timeout(broker.remote_fetch_max_wait_s):
            data, aborted = await rlm.read(
                read.part, read.offset, read.max_bytes, read.min_one, read.aborted_upper
            )
        result["records"] = data
        if read.aborted_upper is not None:
            result["aborted_transactions"] = [
                {"producer_id": t.producer_id, "first_offset": t.first_offset} for t in aborted
            ]
        if broker.metrics is not None and data:
            count = sum(h.record_count for h in validate_batches(data, check_crc=False))
            served = "leader" if read.part.is_leader else "follower"
            broker.metrics.fetched(read.part.topic, len(data), count, served)
    except TimeoutError:
        pass  # as Kafka: no records, no error; the consumer asks again
    except KafkaError as exc:
        result.update(_partition(result["partition_index"], exc.code))
        errored = True
    except FETCH_FAILURES as exc:
        log.debug("remote read of %s-%d at %d failed: %s", read.part.topic, read.part.index, read.offset, exc)
        result.update(_partition(result["partition_index"], ErrorCode.KAFKA_STORAGE_ERROR))
        errored = True
    return _answer(ctx, req, responses, errored)


async def _long_poll(
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    forbidden: Collection[str | None],
    budget: int,
    min_bytes: int,
) -> dict[str, Any]:
    broker = ctx.broker
    tps: list[TopicPartition] = [
        (name, p.partition) for t, name in zip(req.topics, names, strict=True) if name for p in t.partitions
    ]
    deadline = time.monotonic() + req.max_wait_ms / 1000
    while True:
        wait = deadline - time.monotonic()
        if wait > 0 and not broker.shutting_down:
            fut = broker.replicas.park(tps)
            try:
                async with asyncio.timeout(wait):
                    await fut
            except TimeoutError:
                pass
            finally:
                broker.replicas.unpark(fut, tps)
        responses, total, errored, redirected = _read(ctx, req, names, forbidden, budget)
        if (
            errored
            or redirected
            or total >= min_bytes
            or time.monotonic() >= deadline
            or broker.shutting_down
        ):
            return _answer(ctx, req, responses, errored)


registry.register(API_KEY, 4, 18, handle)
