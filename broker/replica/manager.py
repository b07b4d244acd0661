"""`ReplicaManager`: the partitions this broker hosts, and the one way to append to and wait on them.

Contracts:

- `partition` answers UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted
  here, NOT_LEADER_OR_FOLLOWER if the cluster has it elsewhere; `leader` also answers NOT_LEADER_OR_FOLLOWER when this broker hosts it
  but does not lead it. Produce, follower Fetch, consumer Fetch before v11,
  ListOffsets and DeleteRecords go through `leader`; a consumer Fetch v11+
  (it carries client metadata) through `partition`: any local replica
  serves it, as Kafka's fetchOnlyLeader rule has it (KIP-392).
- `append` is the leader's append for everything that writes a partition
  (Produce, the group coordinator): idempotent-producer checks (a duplicate of
  one of the last five batches returns its original offset and appends
  nothing), the log append stamped with the partition's leader epoch, a
  producer snapshot when the append rolled a segment, the high watermark
  advanced to min LEO over the ISR (ISR = [self] on a single broker: the LEO),
  and parked fetches woken. Batch validation (CRC, sizes, keys) is the
  caller's: it differs between clients and the broker's own writes.
- Parked fetches (`park`/`unpark`) are answered by `wake` after an append or
  when the partition goes away, and at once after `close_waiters` (shutdown).
- Producer state lives on each `Partition`: rebuilt from snapshots and the log
  tail at start, snapshotted on rolls, at shutdown (`close`) and expired by
  the log tasks (`expire_producers`). Transactional batches open a producer's
  transaction; markers (`broker.replica.markers`) close it. The log's
  ``first_unstable_offset`` (the cleaner stops below it) follows every change
  (`refresh_unstable`).

Everything runs on the event loop thread; snapshot files are written in the
default executor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from broker.producer_state import PartitionProducers, load_producer_state, write_snapshot
from broker.replica import markers
from broker.replica.partition import Partition
from broker.replica.throttle import ReplicationThrottles
from protocol.control_records import build_marker_batch
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader, validate_batches
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog

log = logging.getLogger("minikafka.replicas")

TopicPartition = tuple[str, int]

COPY_WRITEBACK_BYTES = 1 << 20
"""How much of a throttled copy may wait in the page cache before its writeback starts: at most
a few milliseconds of the disk's time when the kernel gets to it."""


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """What `ReplicaManager.append` did: offsets for the response, and whether bytes were appended."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    appended: bool  # False for a duplicate of a recent idempotent batch


class ReplicaManager:
    def __init__(self, logs: LogManager, node_id: int, producer_expiration_ms: int) -> None:
        self.logs = logs
        self.node_id = node_id
        self.producer_expiration_ms = producer_expiration_ms
        self.closing = False
        # set by the cluster side when ISR changes are written somewhere (ZooKeeper): (partition, wanted ISR)
        self.isr_requests: Callable[[Partition, list[int]], None] | None = None
        # set by the cluster side: whether a broker is alive, so that its follower may join an ISR
        self.isr_eligible: Callable[[int], bool] | None = None
        # set by the cluster side: whether the cluster has this partition (hosted here or not)
        self.in_cluster: Callable[[str, int], bool] | None = None
        self._partitions: dict[TopicPartition, Partition] = {}
        self.throttles = ReplicationThrottles(node_id)  # a reassignment's copying, leader and follower side
        started = time.monotonic()
        for (topic, index), plog in logs.logs():
            part = Partition(topic, index, plog, node_id)
            self._partitions[(topic, index)] = part
            if plog.offline:
                continue
            state, part.snapshot_offset = load_producer_state(plog, expiration_ms=producer_expiration_ms)
            if state.producers:
                part.producers = state
                self.refresh_unstable(part)
        log.debug(
            "producer state of %d partitions rebuilt in %.3fs",
            len(self._partitions),
            time.monotonic() - started,
        )

    # -- lookup -------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        part = self._partitions.get((topic, index))
        if part is None:
            if self.in_cluster is not None and self.in_cluster(topic, index):
                # Kafka's getPartitionOrError: the partition exists, elsewhere (a reassignment moved it
                # away, or this replica is not created yet): the client should look for its leader
                raise KafkaError(
                    f"broker {self.node_id} holds no replica of {topic}-{index}",
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                )
            raise KafkaError(f"unknown topic-partition {topic}-{index}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return part

    def leader(self, topic: str, index: int) -> Partition:
        part = self.partition(topic, index)
        if not part.is_leader:
            raise KafkaError(
                f"broker {self.node_id} does not lead {topic}-{index} (leader {part.leader_id})",
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
            )
        return part

    def get(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> Iterator[Partition]:
        return iter(list(self._partitions.values()))

    # -- hosting ------------------------------------------------------------------------------
    def host(self, topic: str, partitions: Iterable[int]) -> list[Partition]:
        """Partition objects for logs the log manager has just created."""
        hosted = []
        for index in partitions:
            plog = self.logs.get_log(topic, index)
            if plog is None:
                raise KafkaError(f"no local log for {topic}-{index}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            part = self._partitions.get((topic, index))
            if part is None or part.log is not plog:
                part = self._partitions[(topic, index)] = Partition(topic, index, plog, self.node_id)
            hosted.append(part)
        return hosted

    def drop_partition(self, tp: TopicPartition) -> None:
        """Forget one partition (before its log is deleted); parked fetches are answered."""
        part = self._partitions.pop(tp, None)
        if part is not None:
            part.wake()

    def drop_topic(self, topic: str) -> None:
        """Forget the partitions of ``topic`` (before its logs are deleted); parked fetches are answered."""
        for tp in [tp for tp in self._partitions if tp[0] == topic]:
            self._partitions.pop(tp).wake()

    # -- writing ------------------------------------------------------------------------------
    def append(
        self,
        part: Partition,
        buf: bytearray | memoryview,
        headers: list[BatchHeader],
        now_ms: int,
        *,
        from_coordinator: bool = False,
    ) -> AppendOutcome:
        """Append validated batches as the leader (see the module docstring). Raises `KafkaError`.

        ``from_coordinator``: the group coordinator's transactional offset commits, which
        carry no sequence numbers: only the producer epoch is checked (Kafka's coordinator origin).
        """
        plog = part.log
        producers = part.producer_state() if headers[0].producer_id >= 0 else None
        if producers is not None and from_coordinator:
            producers.check_epoch(headers[0].producer_id, headers[0].producer_epoch)
        elif producers is not None:
            duplicate = producers.check(headers[0])
            if duplicate is not None:
                last = duplicate + sum(h.last_offset_delta + 1 for h in headers) - 1
                return AppendOutcome(duplicate, last, -1, plog.log_start_offset, appended=False)
            for h in headers[1:]:
                if h.producer_id != headers[0].producer_id:
                    raise KafkaError(
                        "batches of several producers in one record set", ErrorCode.INVALID_RECORD
                    )
        result = plog.append(buf, headers, leader_epoch=part.leader_epoch, now_ms=now_ms)
        if not self.advance_high_watermark(part):
            part.wake()  # followers read up to the LEO: they want the new batch even below the HW
        if result.rolled:
            self.snapshot_producers(part, result.base_offset)
        if producers is not None:
            offset = result.base_offset
            for h in headers:
                producers.update(h, offset)
                offset += h.last_offset_delta + 1
            if headers[0].is_transactional:
                self.refresh_unstable(part)
        return AppendOutcome(
            result.base_offset,
            result.last_offset,
            result.log_append_time_ms,
            plog.log_start_offset,
            appended=True,
        )

    def write_marker(
        self,
        part: Partition,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> AppendOutcome:
        """Append a COMMIT or ABORT marker of ``producer_id`` as the leader (`broker.replica.markers`).

        Raises `KafkaError`: INVALID_PRODUCER_EPOCH for an older producer epoch,
        TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch.
        """
        plog = part.log
        part.producer_state().check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = build_marker_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        headers = validate_batches(batch, check_crc=False)  # just built: the CRC is right
        result = plog.append(batch, headers, leader_epoch=part.leader_epoch, now_ms=now_ms)
        if result.rolled:
            self.snapshot_producers(part, result.base_offset)
        markers.close_transaction(
            part, producer_id, producer_epoch, coordinator_epoch, commit, result.base_offset, now_ms
        )
        if not self.advance_high_watermark(part):
            part.wake()
        self.refresh_unstable(part)
        return AppendOutcome(result.base_offset, result.last_offset, -1, plog.log_start_offset, appended=True)

    def advance_high_watermark(self, part: Partition) -> bool:
        """HW = min LEO over the maximal ISR: the committed ISR and any follower whose addition is
        pending (a follower not heard from since this leadership began holds it back).

        When it moves, acks=all waiters it passed are answered and parked fetches
        woken; returns whether it moved.
        """
        hw = part.log.log_end_offset
        for replica in part.maximal_isr:
            if replica != self.node_id:
                hw = min(hw, part.follower_leo.get(replica, part.log.high_watermark))
        if not part.log.advance_high_watermark(hw):
            return False
        if part.producers is not None and part.producers.unreplicated:
            self.refresh_unstable(part)
        part.release_hw_waiters()
        part.wake()
        return True

    # -- replication, leader side ---------------------------------------------------------------
    def follower_fetched(
        self, part: Partition, replica_id: int, fetch_offset: int, now_ms: int, log_start_offset: int = -1
    ) -> None:
        """A follower fetched from ``fetch_offset``: everything below it is on that replica.

        Updates its LEO, log start offset (what its request says) and caught-up
        time, the HW, and asks (`request_isr`) for it to join the ISR when it has
        caught up to the HW within this leadership.
        """
        leo = part.log.log_end_offset
        part.follower_leo[replica_id] = min(fetch_offset, leo)
        part.follower_log_start[replica_id] = log_start_offset
        if fetch_offset >= leo:
            part.caught_up_ms[replica_id] = now_ms
        if replica_id in part.maximal_isr:
            self.advance_high_watermark(part)
        elif (
            replica_id in part.replicas
            and fetch_offset >= part.log.high_watermark
            and fetch_offset >= part.epoch_start
            and (self.isr_eligible is None or self.isr_eligible(replica_id))
        ):
            order = {r: i for i, r in enumerate(part.replicas)}
            self.request_isr(part, sorted({*part.isr, replica_id}, key=lambda r: order.get(r, len(order))))

    def lagging_followers(self, part: Partition, now_ms: int, lag_ms: int) -> list[int]:
        """ISR followers that have not caught up to the leader's LEO for ``lag_ms``."""
        return [r for r in part.isr if r != self.node_id and now_ms - part.caught_up_ms.get(r, 0) > lag_ms]

    def request_isr(self, part: Partition, isr: list[int]) -> None:
        """Ask the cluster side to make ``isr`` the partition's ISR.

        One change at a time. A removal counts once written; an addition counts
        for the HW at once (`Partition.maximal_isr`) and for everything else
        once written."""
        if isr != part.isr and part.pending_isr is None and self.isr_requests is not None:
            part.pending_isr = list(isr)
            self.isr_requests(part, isr)

    def isr_write_failed(self, part: Partition) -> None:
        """The pending ISR change was certainly not written: the committed ISR alone counts again."""
        part.pending_isr = None
        if part.is_leader:
            self.advance_high_watermark(part)

    def isr_changed(self, part: Partition, isr: list[int], partition_epoch: int) -> None:
        """The cluster side wrote ``isr`` for ``part`` (or read a newer one): apply it.

        A state no newer than the one applied (a write's answer arriving after
        the refresh read what it wrote, or something newer) changes nothing."""
        if partition_epoch <= part.partition_epoch:
            return
        part.pending_isr = None
        part.isr = list(isr)
        part.partition_epoch = partition_epoch
        if part.is_leader:
            self.advance_high_watermark(part)
            if len(part.isr) < part.log.config.min_insync_replicas:
                part.fail_hw_waiters()  # they answer NOT_ENOUGH_REPLICAS_AFTER_APPEND now

    async def wait_for_replication(self, part: Partition, offset: int, timeout_s: float) -> int:
        """acks=all: wait until the HW passes ``offset`` (the end of the appended batch).

        Returns an error code: NONE once the HW is there and the maximal ISR
        holds ``min.insync.replicas``; NOT_LEADER_OR_FOLLOWER if leadership was
        lost meanwhile (a new leader epoch with this broker still leading, as
        when the controller drops a dead follower, keeps the wait: only a
        replica that stopped leading may have lost the batch, as Kafka's
        DelayedProduce); NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is below
        ``min.insync.replicas`` once the HW gets there (as Kafka's
        checkEnoughReplicasReachOffset: a follower dropped from the ISR lets the
        HW jump to the leader's LEO, and the write is then on fewer replicas
        than the producer asked for); REQUEST_TIMED_OUT.
        """
        deadline = asyncio.get_running_loop().time() + timeout_s
        term = part.lead_term
        while True:
            if not part.is_leader or part.lead_term != term:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if part.log.high_watermark >= offset:
                if len(part.maximal_isr) < part.log.config.min_insync_replicas:
                    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                return ErrorCode.NONE
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return ErrorCode.REQUEST_TIMED_OUT
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            part.hw_waiters.append((offset, fut))
            try:
                async with asyncio.timeout(left):
                    await fut
            except TimeoutError:
                return ErrorCode.REQUEST_TIMED_OUT

    # -- replication, follower side -------------------------------------------------------------
    def follower_append(
        self,
        part: Partition,
        buf: bytearray | memoryview,
        headers: list[BatchHeader],
        leader_hw: int,
        now_ms: int,
        *,
        throttled: bool = False,
    ) -> None:
        """Append batches fetched from the leader, then HW = min(leader HW, own LEO) (never backwards).

        ``throttled``: the partition's copy counts against the follower throttle (a
        reassignment's): its bytes start for the disk every `COPY_WRITEBACK_BYTES`
        (`PartitionLog.write_back`), so that a copy lasting longer than the kernel
        keeps dirty pages (30 s) does not reach the disk in one burst that stalls
        every fsync on the filesystem, acks=all produces' included.
        """
        plog = part.log
        if headers:
            producers = part.producer_state()
            result = plog.append_as_follower(buf, headers, now_ms)
            if throttled:
                plog.write_back(COPY_WRITEBACK_BYTES)
            if result.rolled:
                self.snapshot_producers(part, result.base_offset)
            transactional = False
            for h in headers:
                if h.producer_id < 0:
                    continue
                if h.is_control:
                    markers.replicated_marker(part, buf, h, now_ms)
                    transactional = True
                else:
                    producers.update(h, h.base_offset, now_ms)
                    transactional = transactional or h.is_transactional
            if transactional:
                self.refresh_unstable(part)
        if plog.advance_high_watermark(min(leader_hw, plog.log_end_offset)):
            if part.producers is not None and part.producers.unreplicated:
                self.refresh_unstable(part)
            part.wake()

    # -- parked fetches -----------------------------------------------------------------------
    def park(self, tps: Iterable[TopicPartition]) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in tps:
            part = self._partitions.get(tp)
            if part is not None:
                part.waiters.add(fut)
        return fut

    def unpark(self, fut: asyncio.Future[None], tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            part = self._partitions.get(tp)
            if part is not None:
                part.waiters.discard(fut)

    def close_waiters(self) -> None:
        """Answer every parked fetch now, and any that parks later (shutdown)."""
        self.closing = True
        for part in self._partitions.values():
            part.wake()

    # -- producer state -----------------------------------------------------------------------
    @staticmethod
    def refresh_unstable(part: Partition) -> None:
        """Tell the log (its cleaner) where the first undecided transaction starts."""
        producers = part.producers
        part.log.first_unstable_offset = (
            None if producers is None else producers.first_unstable_offset(part.log.high_watermark)
        )

    def snapshot_producers(self, part: Partition, offset: int) -> None:
        """Write the producer state of ``part`` as ``<offset>.snapshot``, in the background.

        Called when a segment rolls at ``offset``, before the batches appended there
        update the state, so the snapshot describes exactly the batches below ``offset``.
        ``offset`` is in ``part.snapshots_pending`` until the write is over (the tiered copier
        uploads a segment with the snapshot at its end, so it waits for it).
        """
        data = (part.producers or PartitionProducers()).to_snapshot()
        part.snapshot_offset = offset
        plog = part.log
        fs, directory = plog.fs, plog.directory
        keep_above = _snapshots_kept_above(plog)

        def write() -> None:
            if plog.closed:  # deleted meanwhile (its directory name may already be reused)
                return
            try:
                write_snapshot(fs, directory, offset, data, keep_above)
            except OSError as exc:  # the partition may have been deleted meanwhile
                log.warning("producer snapshot %s at %d not written: %s", directory, offset, exc)

        pending = part.snapshots_pending
        pending.add(offset)
        written = asyncio.get_running_loop().run_in_executor(None, write)
        written.add_done_callback(lambda _: pending.discard(offset))

    def snapshot_rolled_segments(self) -> None:
        """A producer snapshot at the base of each tiered log's active segment that local retention
        rolled (after `LogManager.delete_old_segments`): a tiered log rolls its active segment when
        local retention wants it gone, so that it can be copied, and the copier uploads each segment
        with the snapshot at its end. Appends snapshot their own rolls; this catches the others."""
        for part in self._partitions.values():
            plog = part.log
            if plog.remote is None or plog.offline or plog.closed or len(plog.segments) < 2:
                continue
            base = plog.active_segment.base_offset
            if base == plog.log_end_offset and part.snapshot_offset != base:
                self.snapshot_producers(part, base)

    def rebuild_producers(self, part: Partition) -> None:
        """Producer state from the log again (after a follower truncated its log)."""
        state, part.snapshot_offset = load_producer_state(part.log, expiration_ms=self.producer_expiration_ms)
        part.producers = state if state.producers else None
        self.refresh_unstable(part)

    def expire_producers(self, now_ms: int) -> int:
        expiration = self.producer_expiration_ms
        return sum(p.producers.expire(now_ms, expiration) for p in self._partitions.values() if p.producers)

    def producer_last_offsets(self, tp: TopicPartition) -> dict[int, int]:
        part = self._partitions.get(tp)
        return part.producers.last_offsets() if part is not None and part.producers is not None else {}

    def _snapshot_all_producers(self) -> None:
        """At shutdown: a snapshot at the log end of every partition that moved since its last one."""
        for part in self._partitions.values():
            plog = part.log
            leo = plog.log_end_offset
            if plog.offline or plog.closed or part.snapshot_offset == leo:
                continue
            if part.producers is None and plog.log_start_offset >= leo:
                continue  # empty log, no producers: nothing to remember or replay
            state = part.producers or PartitionProducers()
            try:
                write_snapshot(plog.fs, plog.directory, leo, state.to_snapshot(), _snapshots_kept_above(plog))
            except OSError as exc:
                log.warning("producer snapshot of %s-%d not written: %s", part.topic, part.index, exc)

    def close(self) -> None:
        """Answer parked fetches, snapshot producer state, close the logs."""
        self.close_waiters()
        self._snapshot_all_producers()
        self.logs.close()


def _snapshots_kept_above(plog: PartitionLog) -> int | None:
    """A tiered log keeps the producer snapshots of the segments not yet copied (`write_snapshot`)."""
    return plog.remote.highest_offset + 1 if plog.remote is not None else None
