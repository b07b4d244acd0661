"""`ReplicaManager`: the partitions this broker hosts, and the one way to append to and wait on them.

Contracts:

- `partition` answers UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted
  here; `leader` also answers NOT_LEADER_OR_FOLLOWER when this broker hosts it
  but does not lead it. Produce, consumer Fetch, ListOffsets and DeleteRecords
  go through `leader`.
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
  the log tasks (`expire_producers`).

Everything runs on the event loop thread; snapshot files are written in the
default executor.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from broker.producer_state import PartitionProducers, load_producer_state, write_snapshot
from broker.replica.partition import Partition
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader
from storage.log_manager import LogManager

log = logging.getLogger("minikafka.replicas")

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """What `ReplicaManager.append` did: offsets for the response, and whether bytes were appended."""

    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    appended: bool  # False for a duplicate of a recent idempotent batch


class ReplicaManager:
    def __init__(self, logs: LogManager, node_id: int, producer_expiration_ms: int) -> None:
        self.logs = logs
        self.node_id = node_id
        self.producer_expiration_ms = producer_expiration_ms
        self.closing = False
        self._partitions: dict[TopicPartition, Partition] = {}
        started = time.monotonic()
        for (topic, index), plog in logs.logs():
            part = Partition(topic, index, plog, node_id)
            self._partitions[(topic, index)] = part
            if plog.offline:
                continue
            state, part.snapshot_offset = load_producer_state(plog, expiration_ms=producer_expiration_ms)
            if state.producers:
                part.producers = state
        log.debug(
            "producer state of %d partitions rebuilt in %.3fs",
            len(self._partitions),
            time.monotonic() - started,
        )

    # -- lookup -------------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        part = self._partitions.get((topic, index))
        if part is None:
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

    def drop_topic(self, topic: str) -> None:
        """Forget the partitions of ``topic`` (before its logs are deleted); parked fetches are answered."""
        for tp in [tp for tp in self._partitions if tp[0] == topic]:
            self._partitions.pop(tp).wake()

    # -- writing ------------------------------------------------------------------------------
    def append(
        self, part: Partition, buf: bytearray | memoryview, headers: list[BatchHeader], now_ms: int
    ) -> AppendOutcome:
        """Append validated batches as the leader (see the module docstring). Raises `KafkaError`."""
        plog = part.log
        producers = part.producer_state() if headers[0].producer_id >= 0 else None
        if producers is not None:
            duplicate = producers.check(headers[0])
            if duplicate is not None:
                return AppendOutcome(duplicate, -1, plog.log_start_offset, appended=False)
            for h in headers[1:]:
                if h.producer_id != headers[0].producer_id:
                    raise KafkaError(
                        "batches of several producers in one record set", ErrorCode.INVALID_RECORD
                    )
        result = plog.append(buf, headers, leader_epoch=part.leader_epoch, now_ms=now_ms)
        self._advance_high_watermark(part)
        if result.rolled:
            self.snapshot_producers(part, result.base_offset)
        if producers is not None:
            offset = result.base_offset
            for h in headers:
                producers.update(h, offset)
                offset += h.last_offset_delta + 1
        part.wake()
        return AppendOutcome(
            result.base_offset, result.log_append_time_ms, plog.log_start_offset, appended=True
        )

    def _advance_high_watermark(self, part: Partition) -> None:
        # ISR = [this broker]: every appended offset is on every in-sync replica.
        part.log.advance_high_watermark(part.log.log_end_offset)

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
    def snapshot_producers(self, part: Partition, offset: int) -> None:
        """Write the producer state of ``part`` as ``<offset>.snapshot``, in the background.

        Called when a segment rolls at ``offset``, before the batches appended there
        update the state, so the snapshot describes exactly the batches below ``offset``.
        """
        data = (part.producers or PartitionProducers()).to_snapshot()
        part.snapshot_offset = offset
        plog = part.log
        fs, directory = plog.fs, plog.directory

        def write() -> None:
            if plog.closed:  # deleted meanwhile (its directory name may already be reused)
                return
            try:
                write_snapshot(fs, directory, offset, data)
            except OSError as exc:  # the partition may have been deleted meanwhile
                log.warning("producer snapshot %s at %d not written: %s", directory, offset, exc)

        asyncio.get_running_loop().run_in_executor(None, write)

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
                write_snapshot(plog.fs, plog.directory, leo, state.to_snapshot())
            except OSError as exc:
                log.warning("producer snapshot of %s-%d not written: %s", part.topic, part.index, exc)

    def close(self) -> None:
        """Answer parked fetches, snapshot producer state, close the logs."""
        self.close_waiters()
        self._snapshot_all_producers()
        self.logs.close()
