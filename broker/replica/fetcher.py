"""Replica fetchers: a follower copies its partitions from their leaders, byte for byte.

One `ReplicaFetcher` per leader broker, each an asyncio task with one
long-lived connection (`LeaderLink`; request header v1, Fetch v11 with
replica_id = our id, OffsetForLeaderEpoch v3). Fetch responses are decoded
by `protocol.fetch_fast`, and their record sets appended straight from the
link's frame buffer. For every partition it follows from that leader:

1. Truncation first (``Partition.needs_truncation``, set when it became a
   follower): ask the leader for the end offset of our latest leader epoch and
   truncate to min(that, our end offset for the epoch the leader answered),
   Kafka's leader-epoch rule; never to the high watermark. An epoch the
   leader does not know (-1) truncates to our HW, below which every replica
   agrees.
2. Then fetch from our LEO with the leader epoch we know (fenced requests come
   back FENCED/UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER: wait for the
   cluster metadata to move), append the leader's batches as they are
   (`ReplicaManager.follower_append`), HW = min(leader HW, own LEO). A
   partition copied under the follower throttle has its bytes written back
   to disk as they arrive (``throttled``), not left for the kernel's flusher.
   A follower whose end is below the leader's log start offset (the leader's
   retention ran while it was down) drops its log and starts empty at the
   leader's log start (`PartitionLog.truncate_fully_and_start_at`), or at
   the base offset of the batch holding it (DeleteRecords moves the log start
   inside batches), as Kafka does.
3. A fetch answered OFFSET_MOVED_TO_TIERED_STORAGE (tiered storage, KIP-405:
   our fetch offset lies below the leader's local log start, those records
   are only in the object store) hands the partition to
   ``on_offset_moved_to_tiered`` (set by the broker when tiered storage is on:
   the remote log manager rebuilds the follower's state from remote storage,
   Kafka's TierStateMachine) and leaves it out of the fetches until that
   finishes; the other partitions keep being fetched meanwhile. A rebuild that
   could not be done (False, or an exception) is tried again after
   `REBUILD_RETRY_S` (Kafka's replica.fetch.backoff.ms), on the next fetch that
   gets the error again. Without the hook, the error is retried like any other.
   Fetch stays at v11: Kafka documents the error from v14 on, but its leaders
   answer it to every version, and so do ours.

`FetcherManager.follow` is called by the cluster side whenever roles change;
fetchers for leaders we no longer follow anything from are stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from broker.replica.link import LeaderLink, LinkSecurity
from broker.replica.manager import ReplicaManager
from broker.replica.partition import Partition
from protocol.errors import ErrorCode, ProtocolError
from protocol.fetch_fast import decode_fetch_response
from protocol.headers import encode_request_header
from protocol.messages import decode_response, encode_request
from protocol.records import validate_batches

log = logging.getLogger("minikafka.replica_fetcher")

FETCH_VERSION = 11
EPOCH_VERSION = 3
_SIZE = struct.Struct(">i")
MAX_WAIT_MS = 500
MAX_BYTES = 16 << 20
PARTITION_MAX_BYTES = 1 << 20
RETRY_S = 0.2
REBUILD_RETRY_S = 1.0

Address = tuple[str, int]
# (the partition, the leader's log start offset) -> rebuilt (fetch from the new log end) or not yet
OnTiered = Callable[[Partition, int], Awaitable[bool]]


class ReplicaFetcher:
    """Fetches every partition we follow from one leader broker."""

    def __init__(
        self, replicas: ReplicaManager, leader_id: int, address: Callable[[int], Address | None]
    ) -> None:
        self.replicas = replicas
        self.leader_id = leader_id
        self._address = address
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._correlation = 0
        self._link: LeaderLink | None = None
        self.link_security: LinkSecurity | None = None
        self.on_offset_moved_to_tiered: OnTiered | None = None
        self._rebuilding: dict[tuple[str, int], asyncio.Task[bool]] = {}
        self._rebuild_after: dict[tuple[str, int], float] = {}  # monotonic time of the next try

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        self._stopping = True
        tasks = [self._task, *self._rebuilding.values()]
        for task in tasks:
            if task is not None:
                task.cancel()
        for task in tasks:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._close()

    # -- connection ---------------------------------------------------------------------------
    def _close(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None

    async def _request(self, api_key: int, version: int, body: dict[str, Any]) -> Any:
        """Send one request; its decoded response. Fetch's record sets are views into the link's
        frame buffer, valid until the next request: `_fetch` appends them before asking again."""
        if self._link is None:
            address = self._address(self.leader_id)
            if address is None:
                raise ConnectionError(f"broker {self.leader_id} is not registered")
            async with asyncio.timeout(10):
                self._link = await LeaderLink.connect(
                    *address, self.link_security, f"replica-{self.replicas.node_id}"
                )
        self._correlation += 1
        header = encode_request_header(
            api_key, version, self._correlation, f"replica-{self.replicas.node_id}"
        )
        frame = await self._link.request(header + encode_request(api_key, version, body))
        if _SIZE.unpack_from(frame)[0] != self._correlation:
            raise ProtocolError("correlation id mismatch")
        if api_key == 1:
            return decode_fetch_response(frame, version, 4)
        return decode_response(api_key, version, frame[4:])

    # -- the loop -----------------------------------------------------------------------------
    async def _run(self) -> None:
        while not self._stopping:
            try:
                if not self.partitions:
                    await asyncio.sleep(RETRY_S)
                    continue
                await self._truncate()
                await self._fetch()
            except asyncio.CancelledError:
                raise
            except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError, ProtocolError) as exc:
                log.debug("fetcher for broker %d: %s", self.leader_id, exc)
                self._close()
                await asyncio.sleep(RETRY_S)
            except Exception:
                log.exception("fetcher for broker %d failed", self.leader_id)
                self._close()
                await asyncio.sleep(RETRY_S)

    def _ready(self) -> list[Partition]:
        now = time.monotonic()
        return [
            p
            for p in self.partitions.values()
            if p.leader_id == self.leader_id
            and not p.log.closed
            and not p.log.offline
            and p.tp not in self._rebuilding
            and self._rebuild_after.get(p.tp, 0.0) <= now
        ]

    # -- tiered storage -----------------------------------------------------------------------
    def _rebuild(self, part: Partition, leader_log_start: int) -> None:
        """Hand ``part`` to ``on_offset_moved_to_tiered``; it is not fetched until that is done."""
        assert self.on_offset_moved_to_tiered is not None
        tp = part.tp
        self._rebuild_after.pop(tp, None)
        task = asyncio.ensure_future(self.on_offset_moved_to_tiered(part, leader_log_start))
        self._rebuilding[tp] = task

        def done(task: asyncio.Task[bool]) -> None:
            if self._rebuilding.get(tp) is task:
                del self._rebuilding[tp]
            if task.cancelled():
                return
            exc = task.exception()
            if exc is not None:
                log.error("%s-%d: rebuilding from remote storage failed", *tp, exc_info=exc)
            if exc is not None or not task.result():
                self._rebuild_after[tp] = time.monotonic() + REBUILD_RETRY_S

        task.add_done_callback(done)

    async def _truncate(self) -> None:
        pending = [p for p in self._ready() if p.needs_truncation]
        if not pending:
            return
        body = {
            "replica_id": self.replicas.node_id,
            "topics": _by_topic(
                pending,
                lambda p: {
                    "partition": p.index,
                    "current_leader_epoch": p.leader_epoch,
                    "leader_epoch": p.log.latest_epoch,
                },
            ),
        }
        response = await self._request(23, EPOCH_VERSION, body)
        by_tp = {(t.topic, p.partition): p for t in response.topics for p in t.partitions}
        for part in pending:
            answer = by_tp.get(part.tp)
            if answer is None or answer.error_code:
                continue  # retried on the next round
            self._truncate_one(part, answer.leader_epoch, answer.end_offset)

    def _truncate_one(self, part: Partition, leader_epoch: int, end_offset: int) -> None:
        plog = part.log
        if leader_epoch < 0 or end_offset < 0:
            target = plog.high_watermark
        else:
            _, own_end = plog.leader_epochs.end_offset_for(leader_epoch, plog.log_end_offset)
            target = min(end_offset, own_end if own_end >= 0 else plog.log_end_offset)
        target = max(target, plog.log_start_offset)
        if target < plog.log_end_offset:
            log.info(
                "%s-%d: truncating from %d to %d (leader %d epoch %d)",
                part.topic,
                part.index,
                plog.log_end_offset,
                target,
                self.leader_id,
                part.leader_epoch,
            )
            plog.truncate_to(target)
            self.replicas.rebuild_producers(part)
        part.needs_truncation = False

    def _throttled(self, part: Partition) -> bool:
        """A partition this broker copies without being in sync, over the follower throttle: skipped."""
        return self.replicas.node_id not in part.isr and self.replicas.throttles.follower_throttled(
            self.replicas.logs.topic_overrides(part.topic), part.index
        )

    def _chunk(self, part: Partition) -> int:
        """How much of ``part`` one fetch asks for: a throttled copy asks for a tenth of a second's
        worth (at least 64 KiB), so it arrives in small steps beside the in-sync partitions it shares
        this fetcher with, instead of a full megabyte now and then."""
        throttles = self.replicas.throttles
        rate = throttles.follower.rate
        if (
            rate is None
            or self.replicas.node_id in part.isr
            or not throttles.follower_counts(self.replicas.logs.topic_overrides(part.topic), part.index)
        ):
            return PARTITION_MAX_BYTES
        return max(64 << 10, min(PARTITION_MAX_BYTES, int(rate) // 10))

    async def _fetch(self) -> None:
        ready = [p for p in self._ready() if not p.needs_truncation and not self._throttled(p)]
        if not ready:
            await asyncio.sleep(RETRY_S)
            return
        body = {
            "replica_id": self.replicas.node_id,
            "max_wait_ms": MAX_WAIT_MS,
            "min_bytes": 1,
            "max_bytes": MAX_BYTES,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": _by_topic(
                ready,
                lambda p: {
                    "partition": p.index,
                    "current_leader_epoch": p.leader_epoch,
                    "fetch_offset": p.log.log_end_offset,
                    "log_start_offset": p.log.log_start_offset,
                    "partition_max_bytes": self._chunk(p),
                },
            ),
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        response = await self._request(1, FETCH_VERSION, body)
        now_ms = int(time.time() * 1000)
        backoff = False
        for t in response.responses:
            for r in t.partitions:
                part = self.partitions.get((t.topic, r.partition_index))
                if part is None or part.leader_id != self.leader_id or part.needs_truncation:
                    continue
                if (
                    r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
                    and r.log_start_offset > part.log.log_end_offset
                ):
                    # the leader's retention removed what we would fetch next: start over where it starts
                    log.warning(
                        "%s-%d: our end offset %d is below the leader's log start %d; starting the log there",
                        part.topic,
                        part.index,
                        part.log.log_end_offset,
                        r.log_start_offset,
                    )
                    part.log.truncate_fully_and_start_at(r.log_start_offset, now_ms)
                    self.replicas.rebuild_producers(part)
                    continue
                if (
                    r.error_code == ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE
                    and self.on_offset_moved_to_tiered is not None
                ):
                    self._rebuild(part, r.log_start_offset)
                    continue
                if r.error_code:
                    backoff = True
                    continue
                records = r.records  # a writable view into the response frame: appended without a copy
                throttles = self.replicas.throttles
                counted = bool(  # Kafka counts every throttled partition's bytes, in sync or not
                    records
                    and throttles.follower.rate is not None
                    and throttles.follower_counts(self.replicas.logs.topic_overrides(part.topic), part.index)
                )
                if counted:
                    throttles.follower.record(len(records))
                if records:
                    headers = validate_batches(records)
                    plog, first = part.log, headers[0]
                    if plog.log_end_offset == plog.log_start_offset and (
                        first.base_offset < plog.log_end_offset <= first.last_offset
                    ):
                        # we started at the leader's log start, which lies inside this batch: start at the batch
                        plog.truncate_fully_and_start_at(first.base_offset, now_ms)
                    self.replicas.follower_append(
                        part, records, headers, r.high_watermark, now_ms, throttled=counted
                    )
                else:
                    self.replicas.follower_append(part, bytearray(), [], r.high_watermark, now_ms)
        if backoff:
            await asyncio.sleep(RETRY_S)


def _by_topic(parts: list[Partition], entry: Callable[[Partition], dict[str, int]]) -> list[dict[str, Any]]:
    """A request's ``topics`` array: ``[{"topic": t, "partitions": [entry(p), ...]}, ...]``."""
    topics: dict[str, list[dict[str, int]]] = {}
    for p in parts:
        topics.setdefault(p.topic, []).append(entry(p))
    return [{"topic": t, "partitions": ps} for t, ps in topics.items()]


class FetcherManager:
    """The fetchers of this broker, one per leader it follows something from."""

    def __init__(self, replicas: ReplicaManager, address: Callable[[int], Address | None]) -> None:
        self.replicas = replicas
        self._address = address
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self.link_security: LinkSecurity | None = None  # set by the broker for a secured listener
        # set by the broker when tiered storage is on: rebuilds a follower below its leader's local log start
        self.on_offset_moved_to_tiered: OnTiered | None = None

    def follow(self, followed: list[Partition]) -> None:
        """Make the fetchers fetch exactly ``followed`` (each from its current leader)."""
        wanted: dict[int, dict[tuple[str, int], Partition]] = {}
        for part in followed:
            if part.leader_id >= 0:
                wanted.setdefault(part.leader_id, {})[part.tp] = part
        for leader_id, parts in wanted.items():
            fetcher = self._fetchers.get(leader_id)
            if fetcher is None:
                fetcher = self._fetchers[leader_id] = ReplicaFetcher(self.replicas, leader_id, self._address)
                fetcher.link_security = self.link_security
                fetcher.on_offset_moved_to_tiered = self.on_offset_moved_to_tiered
                fetcher.start()
            fetcher.partitions = parts
        for leader_id in [i for i in self._fetchers if i not in wanted]:
            self._fetchers[leader_id].partitions = {}

    async def close(self) -> None:
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        for fetcher in fetchers:
            await fetcher.stop()
