"""`__consumer_offsets` on the broker's storage: the coordinator's `OffsetsLog`.

- The topic is created at broker start if missing: `offsets.topic.num.partitions`
  partitions (default 50), cleanup.policy=compact, segment.bytes =
  `offsets.topic.segment.bytes`. An existing topic keeps its partition count
  (changing it would move groups to other partitions).
- `append` queues the (key, value) pairs; at the event loop's next turn the
  appends queued for a partition are written in the order they came, the
  consecutive plain ones (no producer) as one uncompressed RecordBatch v2
  (producer id -1, CreateTime = now), each transactional one as its own
  batch, through the replica manager as Produce does (`ReplicaManager.append`:
  leader epoch, high watermark, parked fetches woken). A coordinator handling
  the heartbeats or commits of many members in one turn thus writes one batch,
  not one per request. Durability is the acks=all rule, as Kafka's
  coordinator appends with acks=-1: ``done`` runs after the broker's group
  commit has fsynced the partition and the ISR has it (the HW passed the
  batch), with NOT_LEADER_OR_FOLLOWER if this broker stopped leading the
  partition meanwhile, REQUEST_TIMED_OUT after ``timeout_s``
  (`offsets.commit.timeout.ms`) or NOT_ENOUGH_REPLICAS_AFTER_APPEND; a
  coordinator cut off from its followers thus acknowledges nothing it could
  lose.
- Acknowledgements of one partition reach their ``done`` callbacks in the
  order the batches were written, whichever finished replicating first, so a
  later commit's answer never precedes an earlier one's (the coordinator
  applies commits to its cache as they are answered).
- ``min.insync.replicas``: a replicated write to a partition whose ISR is
  smaller is refused before it is appended (NOT_ENOUGH_REPLICAS), as Kafka's
  acks=-1 append.
- `read` replays a partition from its log start offset to its log end (as
  Kafka loads a coordinator partition: a new leader's HW may still lag the
  acknowledged writes its log holds);
  transactional offset commits (`append` with a producer) count at their
  COMMIT marker and are dropped at an ABORT one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from broker.groups.coordinator import Done, RecordKV
from protocol.control_records import COMMIT, marker_type
from protocol.errors import ErrorCode, KafkaError, ProtocolError
from protocol.records import Record, build_batch, decode_batch, scan_valid_prefix, validate_batches

if TYPE_CHECKING:
    from broker.cluster import TopicAdmin
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.replica import Partition, ReplicaManager

log = logging.getLogger("minikafka.groups.store")

OFFSETS_TOPIC = "__consumer_offsets"
READ_CHUNK_BYTES = 1 << 20
# queued appends are merged into one batch up to this many bytes, and never beyond the
# partition's max.message.bytes (a merged batch is not refused where its parts would not be)
MERGE_BYTES = 64 << 10
RECORD_OVERHEAD = 24  # a record's length, attributes, deltas and key/value lengths at most
BATCH_OVERHEAD = 61


def _size(records: list[RecordKV]) -> int:
    """An upper bound of the bytes ``records`` take in a batch."""
    return sum(RECORD_OVERHEAD + len(k) + (len(v) if v is not None else 0) for k, v in records)


def offsets_topic_configs(config: BrokerConfig) -> dict[str, str]:
    """The topic configs `__consumer_offsets` is created with."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config["offsets.topic.segment.bytes"]),
        "compression.type": "producer",
    }


def ensure_offsets_topic(config: BrokerConfig, replicas: ReplicaManager, topics: TopicAdmin) -> int:
    """Create `__consumer_offsets` if it does not exist; returns its partition count.

    An existing topic that lost its internal configs (a topic registry rebuilt
    from the partition directories) gets them back: without
    ``cleanup.policy=compact`` retention would delete committed offsets.
    """
    required = offsets_topic_configs(config)
    info = replicas.logs.topics().get(OFFSETS_TOPIC)
    if info is None:
        partitions = int(config["offsets.topic.num.partitions"])
        topics.create_topic(OFFSETS_TOPIC, partitions, required)
        return partitions
    if "cleanup.policy" not in info.configs:
        log.warning("%s had no topic configs (rebuilt registry?): restoring %s", OFFSETS_TOPIC, required)
        topics.alter_topic_configs(OFFSETS_TOPIC, {**required, **info.configs})
    return info.partitions


class _Unanswered:
    """A written batch whose callbacks are not answered yet; ``outcome`` once it is known."""

    __slots__ = ("dones", "outcome")

    def __init__(self, dones: list[Done]) -> None:
        self.dones = dones
        self.outcome: ErrorCode | None = None


class BrokerOffsetsLog:
    """`OffsetsLog` backed by the broker's partition logs and group commit.

    ``topic``: the internal topic it writes (the transaction coordinator uses
    one for `__transaction_state`).
    """

    def __init__(
        self,
        replicas: ReplicaManager,
        group_commit: GroupCommit,
        num_partitions: int,
        topic: str = OFFSETS_TOPIC,
        *,
        timeout_s: float | None = 5.0,
    ) -> None:
        """``timeout_s``: how long ``done`` waits for the ISR; None: it does not wait (the caller does)."""
        self._replicas = replicas
        self._timeout_s = timeout_s
        self._group_commit = group_commit
        self._num_partitions = num_partitions
        self.topic = topic
        # partition -> producer id -> records of transactions open at the end of the last `read`
        self.open_transactions: dict[int, dict[int, list[RecordKV]]] = {}
        # partition -> appends not written yet: (records, done, producer)
        # (records None: a `when_committed` barrier)
        self._queued: dict[int, list[tuple[list[RecordKV] | None, Done | None, tuple[int, int] | None]]] = {}
        # partition -> written batches not answered yet, in write order
        self._unanswered: dict[int, deque[_Unanswered]] = {}

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    def append(
        self,
        partition: int,
        records: Sequence[RecordKV],
        done: Done | None,
        producer: tuple[int, int] | None = None,
    ) -> None:
        """Queue ``records`` for ``partition`` (module docstring); ``done`` gets the outcome.

        ``producer``: (id, epoch) of a transactional offset commit; its batch is then
        transactional and an older epoch than the partition knows answers INVALID_PRODUCER_EPOCH."""
        queued = self._queued.get(partition)
        if queued is None:
            queued = self._queued[partition] = []
            asyncio.get_running_loop().call_soon(self._write_queued, partition)
        queued.append((list(records), done, producer))

    def when_committed(self, partition: int, done: Done) -> None:
        """``done`` once everything appended to ``partition`` so far is on the in-sync replicas
        (`OffsetsLog`); at once when nothing is queued, unanswered or above the high watermark."""
        queued = self._queued.get(partition)
        if queued is not None:  # appends not written yet: the barrier goes after them
            queued.append((None, done, None))
            return
        self._barrier(partition, done, at_once=True)

    def _barrier(self, partition: int, done: Done, *, at_once: bool) -> None:
        try:
            part = self._replicas.leader(self.topic, partition)
        except KafkaError as exc:
            done(exc.code) if at_once else asyncio.get_running_loop().call_soon(done, exc.code)
            return
        end = part.log.log_end_offset
        committed = self._timeout_s is None or part.log.high_watermark >= end
        if committed and partition not in self._unanswered:
            done(ErrorCode.NONE) if at_once else asyncio.get_running_loop().call_soon(done, ErrorCode.NONE)
            return
        entry = _Unanswered([done])  # answered in order, after the writes before it
        self._unanswered.setdefault(partition, deque()).append(entry)
        if committed:
            self._answer(partition, entry, ErrorCode.NONE)
        else:
            asyncio.ensure_future(self._replicated(part, end, entry))

    def _write_queued(self, partition: int) -> None:
        queued = self._queued.pop(partition, [])
        limit = MERGE_BYTES
        with contextlib.suppress(KafkaError):  # not the leader: `_write` answers each append so
            max_bytes = self._replicas.leader(self.topic, partition).log.config.max_message_bytes
            limit = min(limit, max_bytes - BATCH_OVERHEAD)
        i = 0
        while i < len(queued):
            records, done, producer = queued[i]
            i += 1
            if records is None:  # a `when_committed` barrier
                assert done is not None
                self._barrier(partition, done, at_once=False)
                continue
            dones = [done]
            size = _size(records)
            while producer is None and i < len(queued) and queued[i][2] is None and queued[i][0] is not None:
                more, more_done, _ = queued[i]
                more_size = _size(more)
                if size + more_size > limit:
                    break
                records, size = records + more, size + more_size
                dones.append(more_done)
                i += 1
            self._write(partition, records, dones, producer)

    def _write(
        self,
        partition: int,
        records: list[RecordKV],
        dones: list[Done | None],
        producer: tuple[int, int] | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        waiting = [d for d in dones if d is not None]
        try:
            part = self._replicas.leader(self.topic, partition)
            plog = part.log
            pid, epoch = producer if producer is not None else (-1, -1)
            batch = bytearray(
                build_batch(
                    [Record(i, 0, k, v) for i, (k, v) in enumerate(records)],
                    producer_id=pid,
                    producer_epoch=epoch,
                    is_transactional=producer is not None,
                )
            )
            if len(batch) > plog.config.max_message_bytes:
                raise KafkaError(f"batch of {len(batch)} bytes", ErrorCode.MESSAGE_TOO_LARGE)
            if self._timeout_s is not None and len(part.isr) < plog.config.min_insync_replicas:
                raise KafkaError(
                    f"{len(part.isr)} in-sync replicas, min.insync.replicas is "
                    f"{plog.config.min_insync_replicas}",
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                )
            headers = validate_batches(batch, check_crc=False)  # just built: the CRC is right
            now_ms = int(time.time() * 1000)
            self._replicas.append(part, batch, headers, now_ms, from_coordinator=producer is not None)
        except (KafkaError, OSError) as exc:
            code = exc.code if isinstance(exc, KafkaError) else ErrorCode.KAFKA_STORAGE_ERROR
            if code not in (
                ErrorCode.MESSAGE_TOO_LARGE,
                ErrorCode.INVALID_PRODUCER_EPOCH,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
            ):
                code = ErrorCode.KAFKA_STORAGE_ERROR
            log.error("%s-%d: append failed: %s", self.topic, partition, exc)
            for d in waiting:
                loop.call_soon(d, code)
            return
        if not waiting:
            return

        end = plog.log_end_offset
        term = part.lead_term
        entry = _Unanswered(waiting)
        self._unanswered.setdefault(partition, deque()).append(entry)

        def synced(f: asyncio.Future[None]) -> None:
            if f.cancelled() or f.exception() is not None:
                log.error("%s-%d: fsync failed; not acknowledging", self.topic, partition)
                code = ErrorCode.KAFKA_STORAGE_ERROR
            elif not part.is_leader or part.lead_term != term:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif self._timeout_s is not None and plog.high_watermark < end:
                asyncio.ensure_future(self._replicated(part, end, entry))
                return
            else:
                code = ErrorCode.NONE
            self._answer(partition, entry, code)

        self._group_commit.sync(plog).add_done_callback(synced)

    async def _replicated(self, part: Partition, end: int, entry: _Unanswered) -> None:
        assert self._timeout_s is not None
        code = ErrorCode(await self._replicas.wait_for_replication(part, end, self._timeout_s))
        if code != ErrorCode.NONE:
            log.warning("%s-%d: write not replicated: %s", self.topic, part.index, code.name)
        self._answer(part.index, entry, code)

    def _answer(self, partition: int, entry: _Unanswered, code: ErrorCode) -> None:
        """Record ``entry``'s outcome, then answer every written batch at the head that has one."""
        entry.outcome = code
        unanswered = self._unanswered[partition]
        while unanswered and unanswered[0].outcome is not None:
            head = unanswered.popleft()
            for d in head.dones:
                d(head.outcome)
        if not unanswered:
            del self._unanswered[partition]

    def read(self, partition: int) -> Iterator[RecordKV]:
        """Every record in offset order; a transaction's records come at its COMMIT marker (none if
        aborted). Those of transactions still open at the end are left in `open_transactions`."""
        plog = self._replicas.partition(self.topic, partition).log
        offset = plog.log_start_offset
        pending: dict[int, list[RecordKV]] = {}
        self.open_transactions.pop(partition, None)
        while offset < plog.log_end_offset:
            data = plog.read(offset, READ_CHUNK_BYTES, upto_leo=True).data
            headers, _ = scan_valid_prefix(data)
            if not headers:
                break
            for h in headers:
                if h.next_offset <= offset:
                    continue
                if h.is_control:
                    committed = pending.pop(h.producer_id, [])
                    if marker_type(data, h) == COMMIT:
                        yield from committed
                    continue
                try:
                    _, recs = decode_batch(data, h.position)
                except ProtocolError as exc:
                    log.warning(
                        "%s-%d: skipping an unreadable batch at %d: %s",
                        self.topic,
                        partition,
                        h.base_offset,
                        exc,
                    )
                    continue
                if h.is_transactional:
                    pending.setdefault(h.producer_id, []).extend(
                        (rec.key, rec.value) for rec in recs if rec.key is not None
                    )
                    continue
                for rec in recs:
                    if rec.key is not None:
                        yield rec.key, rec.value
            offset = headers[-1].next_offset
        self.open_transactions[partition] = pending
