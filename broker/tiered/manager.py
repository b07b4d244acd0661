"""`RemoteLogManager`: tiered storage's tasks for the partitions hosted here (Kafka's RemoteLogManager).

Built by the broker when ``remote.log.storage.system.enable`` is true; the logs
of tiered topics carry a `storage.remote_state.RemoteLogState`.

- Every ``remote.log.manager.task.interval.ms`` (and at once after `kick`, on
  a leadership or topic-config change), a pass for each hosted tiered
  partition not still in its previous one, each a task of its own, up to
  ``remote.log.manager.thread.pool.size`` at a time:
  - leader: on a new leader epoch, its remote metadata is read up to the
    metadata partition's current end and the copied offset found again
    (`broker.tiered.copier`); then closed segments are
    copied and remote retention applied (`broker.tiered.expiration`);
  - follower: the remote metadata is read so that the follower's highest remote
    offset follows the leader's copies and its local retention can delete
    what is safely remote (Kafka's RLMFollowerTask).
- A partition whose pass failed (object store or metadata topic unreachable)
  is tried again after a backoff doubling from
  ``remote.log.manager.task.retry.backoff.ms`` up to
  ``remote.log.manager.task.retry.backoff.max.ms``; the first failure and the
  recovery are logged once each (state changes), and counted in `metrics`.
- `read`: records of [log start, local log start) for the Fetch handler, from
  the object store (`broker.tiered.reader`).
- `rebuild_follower`: the replica fetcher's hook for a follower answered
  OFFSET_MOVED_TO_TIERED_STORAGE: its state is rebuilt from the remote segment
  below the leader's local log start (`broker.tiered.rebuild`, Kafka's
  TierStateMachine), asking the leader through ``leader_links``. A failure is
  logged once (then again only after a success) and retried by the fetcher.

Produce and local reads never wait on any of this: passes run as tasks on the
loop, and every object-store call is asynchronous.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.replica.markers import bytes_below
from broker.tiered.context import TieredMetrics
from broker.tiered.copier import LeaderState, copy_pass, highest_remote_offset
from broker.tiered.expiration import expire_pass
from broker.tiered.metadata_cache import RemoteLogMetadataCache, RemoteLogMetadataStore
from broker.tiered.metadata_records import (
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)
from broker.tiered.metadata_topic import MetadataTopic, MetadataUnavailable
from broker.tiered.object_store import ObjectStore, ObjectStoreError
from broker.tiered.reader import RemoteReader, segment_ref
from broker.tiered.rebuild import RebuildFailed, rebuild_follower
from broker.tiered.segment_store import RemoteSegmentStore
from broker.txn.broker_links import LINK_ERRORS
from protocol.errors import ErrorCode, KafkaError
from storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView, TopicAdmin
    from broker.replica import ReplicaManager, TopicPartition
    from broker.replica.partition import Partition
    from broker.txn.broker_links import BrokerLinks

log = logging.getLogger("minikafka.tiered")

FAILURES = (ObjectStoreError, MetadataUnavailable, OSError)


@dataclass
class _Retry:
    at: float = 0.0
    backoff_s: float = 0.0


class RemoteLogManager:
    def __init__(
        self,
        *,
        node_id: int,
        replicas: ReplicaManager,
        cluster: ClusterView,
        admin: TopicAdmin,
        links: BrokerLinks,
        leader_links: BrokerLinks,
        store: ObjectStore,
        key_prefix: str,
        interval_s: float,
        pool_size: int,
        retry_backoff_s: float,
        retry_backoff_max_s: float,
        metadata_partitions: int,
        metadata_replication_factor: int,
        metadata_timeout_s: float,
    ) -> None:
        self.node_id = node_id
        self.replicas = replicas
        self.cluster = cluster
        self.store = store
        self.segments = RemoteSegmentStore(store, key_prefix)
        self.metadata_store = RemoteLogMetadataStore()
        self.metadata = MetadataTopic(
            links=links,
            cluster=cluster,
            admin=admin,
            store=self.metadata_store,
            num_partitions=metadata_partitions,
            replication_factor=metadata_replication_factor,
            timeout_s=metadata_timeout_s,
        )
        self.reader = RemoteReader(self.segments)
        self.leader_links = leader_links  # a follower's requests to its leader while it rebuilds
        self._rebuild_failing: set[TopicPartition] = set()
        self.metrics = TieredMetrics()
        self.interval_s = interval_s
        self.retry_backoff_s = retry_backoff_s
        self.retry_backoff_max_s = retry_backoff_max_s
        self._slots = asyncio.Semaphore(max(1, pool_size))
        self._leaders: dict[TopicPartition, LeaderState] = {}
        self._retries: dict[TopicPartition, _Retry] = {}
        self._kicked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._running: dict[TopicPartition, asyncio.Task[None]] = {}  # partition passes under way

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="remote-log-manager")

    def kick(self) -> None:
        """Run a pass now (leadership or a topic's tiering changed)."""
        self._kicked.set()

    async def stop(self) -> None:
        tasks = [t for t in [self._task, *self._running.values()] if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.metadata.close()
        self.leader_links.close()
        self.store.close()

    async def _run(self) -> None:
        while True:
            self._kicked.clear()
            try:
                await self._pass()
            except Exception:
                log.exception("remote log manager pass failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._next_wait()):
                    await self._kicked.wait()

    def _next_wait(self) -> float:
        now = time.monotonic()
        soonest = min((r.at for r in self._retries.values() if r.at > now), default=now + self.interval_s)
        return max(0.01, min(self.interval_s, soonest - now))

    # -- passes ---------------------------------------------------------------------------------
    async def _pass(self) -> None:
        """Start a pass for each hosted tiered partition not already in one (each runs as a task of
        its own: a partition stuck on an unreachable store or metadata leader holds up no other)."""
        hosted = set()
        now = time.monotonic()
        loop = asyncio.get_running_loop()
        for part in self.replicas.partitions():
            tp = (part.topic, part.index)
            if part.log.remote is None or part.log.offline or part.log.closed:
                continue
            hosted.add(tp)
            retry = self._retries.get(tp)
            running = self._running.get(tp)
            if (retry is not None and retry.at > now) or (running is not None and not running.done()):
                continue
            self._running[tp] = loop.create_task(self._partition_pass(part), name=f"tiered-{tp[0]}-{tp[1]}")
        for tp in [tp for tp in self._leaders if tp not in hosted]:
            del self._leaders[tp]
        for tp in [tp for tp, task in self._running.items() if task.done()]:
            del self._running[tp]

    async def _partition_pass(self, part: Partition) -> None:
        tp = (part.topic, part.index)
        async with self._slots:
            try:
                tip = self.tip(part)
                if part.is_leader:
                    state = self._leaders.get(tp)
                    if state is None or state.leader_epoch != part.leader_epoch or state.tip != tip:
                        state = await self._become_leader(part, tip)
                    await copy_pass(self, part, state)
                    await expire_pass(self, part, state)
                else:
                    self._leaders.pop(tp, None)
                    await self._follow(part, tip)
            except FAILURES as exc:
                self._failed(tp, exc)
                return
            except KafkaError as exc:  # the partition went away or changed under the pass
                log.debug("%s-%d: tiered pass stopped: %s", part.topic, part.index, exc)
                return
        self._retries.pop(tp, None)
        if not self.metrics.store_available:
            log.info("remote storage available again")
            self.metrics.store_available = True

    def _failed(self, tp: TopicPartition, exc: BaseException) -> None:
        retry = self._retries.setdefault(tp, _Retry())
        retry.backoff_s = min(self.retry_backoff_max_s, max(self.retry_backoff_s, retry.backoff_s * 2))
        retry.at = time.monotonic() + retry.backoff_s
        if self.metrics.store_available:
            log.warning("remote storage unavailable (%s-%d: %s); retrying with backoff", *tp, exc)
            self.metrics.store_available = False
        else:
            log.debug("%s-%d: %s; next try in %.1fs", *tp, exc, retry.backoff_s)

    async def _become_leader(self, part: Partition, tip: TopicIdPartition) -> LeaderState:
        """The copied offset of a new leader (epoch), from the remote metadata read up to date: the
        previous leader's last copies must be in it (it may have died right after them, with its
        metadata partition leader too), or this leader copies them again."""
        await self.metadata.load(tip)
        await self.metadata.catch_up(tip)
        plog = part.log
        copied = highest_remote_offset(plog.leader_epochs, plog.log_end_offset, self.cache(tip))
        state = LeaderState(tip, part.leader_epoch, copied_offset=copied)
        if plog.remote is not None:
            plog.remote.update_highest(copied)
        self._leaders[(part.topic, part.index)] = state
        log.info(
            "%s-%d: tiered as leader (epoch %d), copied up to %d",
            part.topic,
            part.index,
            part.leader_epoch,
            copied,
        )
        return state

    async def _follow(self, part: Partition, tip: TopicIdPartition) -> None:
        await self.metadata.load(tip)
        plog = part.log
        if plog.remote is not None:
            plog.remote.update_highest(
                highest_remote_offset(plog.leader_epochs, plog.log_end_offset, self.cache(tip))
            )

    async def delete_segment(self, md: SegmentMetadata, *, best_effort: bool = False) -> None:
        """DELETE_SEGMENT_STARTED, the objects, DELETE_SEGMENT_FINISHED. ``best_effort``: failures are
        logged, not raised (cleaning up after a failed copy)."""

        def update(state: SegmentState) -> SegmentMetadataUpdate:
            return SegmentMetadataUpdate(
                md.tip, md.segment_id, self.node_id, time.time_ns() // 1_000_000, None, state
            )

        self.metrics.delete_requests += 1
        try:
            await self.metadata.publish(update(SegmentState.DELETE_SEGMENT_STARTED))
            await self.segments.delete(segment_ref(md))
            self.reader.forget(md.segment_id)
            await self.metadata.publish(update(SegmentState.DELETE_SEGMENT_FINISHED))
        except FAILURES as exc:
            self.metrics.delete_errors += 1
            if not best_effort:
                raise
            log.warning(
                "segment %s of %s-%d not cleaned up: %s", md.segment_id, md.tip.topic, md.tip.partition, exc
            )

    # -- followers ------------------------------------------------------------------------------
    async def rebuild_follower(self, part: Partition, leader_log_start: int) -> bool:
        """The fetcher's hook (``FetcherManager.on_offset_moved_to_tiered``): rebuild ``part`` from
        remote storage (`broker.tiered.rebuild`); True once rebuilt, False to try again later."""
        tp = (part.topic, part.index)
        self.metrics.rebuild_requests += 1
        try:
            rebuilt = await rebuild_follower(self, part, leader_log_start)
        except (RebuildFailed, *FAILURES, *LINK_ERRORS) as exc:
            self.metrics.rebuild_errors += 1
            if tp not in self._rebuild_failing:
                self._rebuild_failing.add(tp)
                log.warning("%s-%d: not rebuilt from remote storage (%s); retrying", *tp, exc)
            else:
                log.debug("%s-%d: not rebuilt from remote storage: %s", *tp, exc)
            return False
        if rebuilt:
            self._rebuild_failing.discard(tp)
        return rebuilt

    # -- reads ----------------------------------------------------------------------------------
    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache:
        """The partition's remote segments as read from the metadata topic (empty if none)."""
        return self.metadata_store.cache(tip) or RemoteLogMetadataCache(tip)

    def tip(self, part: Partition) -> TopicIdPartition:
        state = self.cluster.topic(part.topic)
        if state is None:
            raise KafkaError(f"unknown topic {part.topic}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return TopicIdPartition(part.topic, state.topic_id, part.index)

    async def read(
        self, part: Partition, offset: int, max_bytes: int, min_one: bool, aborted_upper: int | None
    ) -> tuple[bytes | memoryview, list[AbortedTxn]]:
        """Records from ``offset`` (in [log start, local log start)) from the object store, and with
        ``aborted_upper`` (read_committed) the aborted transactions overlapping [offset, it).
        OFFSET_OUT_OF_RANGE if no remote segment holds ``offset``; `ObjectStoreError` if the store fails."""
        tip = self.tip(part)
        await self.metadata.load(tip)
        cache = self.cache(tip)
        plog = part.log
        self.metrics.fetch_requests += 1
        try:
            while offset < plog.local_log_start_offset:
                epoch = plog.leader_epochs.epoch_for_offset(offset)
                md = cache.segment_for(epoch, offset)
                if md is None:
                    raise KafkaError(
                        f"no remote segment of {part.topic}-{part.index} holds offset {offset}",
                        ErrorCode.OFFSET_OUT_OF_RANGE,
                    )
                data = await self.reader.read(md, offset, max_bytes, min_one)
                if data is None:  # the segment has no batch at or after ``offset``: the next one has
                    offset = md.end_offset + 1
                    continue
                self.metrics.fetch_bytes += len(data)
                aborted = (
                    await self.reader.aborted(md, offset, aborted_upper)
                    if aborted_upper is not None and data
                    else []
                )
                return data, aborted
        except FAILURES:
            self.metrics.fetch_errors += 1
            raise
        # the remote segments ended below the local start: read on locally, as the Fetch handler would
        data = plog.read(offset, max_bytes, min_one_batch=min_one).data
        if aborted_upper is None:
            return data, []
        data = data[: bytes_below(data, aborted_upper)]
        return data, plog.aborted_transactions(offset, aborted_upper) if data else []

    async def offset_for_timestamp(self, part: Partition, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets by timestamp over the remote part [log start, local log start): ``(offset,
        timestamp)`` of the first record with a timestamp >= ``timestamp``, or None if no remote
        record has one (the local log is searched then). `ObjectStoreError` if the store fails."""
        tip = self.tip(part)
        await self.metadata.load(tip)
        plog = part.log
        start, local_start = plog.log_start_offset, plog.local_log_start_offset
        for md in self.cache(tip).segments():
            if md.state != SegmentState.COPY_SEGMENT_FINISHED or md.end_offset < start:
                continue
            if md.start_offset >= local_start:
                break
            found = await self.reader.offset_for_timestamp(md, timestamp, start)
            if found is not None:
                return found
        return None

    def remote_size(self, part: Partition) -> int:
        """Bytes of the partition's finished remote segments (0 if not known here)."""
        try:
            return self.cache(self.tip(part)).total_finished_bytes()
        except KafkaError:
            return 0
