"""`__remote_log_metadata`: where remote segment metadata is written and read back.

Kafka's topic-based remote log metadata manager, in our terms:

- One record per state change of a remote segment (`broker.tiered.metadata_records`):
  key null, value the serialized metadata, in partition
  `metadata_partition(topic id, partition, n)` of ``__remote_log_metadata``
  (``rlmm.config.remote.log.metadata.topic.num.partitions``, default 50).
- `publish` produces one record with acks=all to that partition's leader through
  the inter-broker listener (`broker.txn.broker_links.BrokerLinks`), retrying
  retriable errors and leader moves until its timeout, then waits until this
  broker's reader of the partition has applied it (Kafka's
  waitTillConsumptionCatchesUp), so the caller's next step sees its own write in
  the store. A retried produce may write a record twice: state changes are
  idempotent (a self-transition), so a duplicate changes nothing.
- One reader per metadata partition this broker needs (those of the tiered
  partitions it hosts): fetches the partition from offset 0 from its leader,
  as a consumer would, and applies every record to the `RemoteLogMetadataStore`.
  `load(tip)` starts the reader of ``tip``'s partition if needed and returns once
  it has read everything written before the reader started (the initial load);
  the partition is then marked loaded in the store. `catch_up(tip)` returns once
  the reader has read everything committed before the call (it asks the
  partition's leader for its high watermark).
- The topic is created on first use (`ensure_topic`) with ``cleanup.policy=delete``,
  ``retention.ms=-1`` and the configured partitions and replication factor (capped
  at the live brokers, with a warning: Kafka would fail instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from broker.tiered.metadata_cache import RemoteLogMetadataError, RemoteLogMetadataStore
from broker.tiered.metadata_records import (
    MetadataRecord,
    TopicIdPartition,
    decode_metadata,
    encode_metadata,
    metadata_partition,
)
from broker.txn.broker_links import LINK_ERRORS, BrokerLinks
from protocol.errors import ErrorCode, KafkaError, ProtocolError
from protocol.records import Record, build_batch, decode_batch, validate_batches

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView, TopicAdmin

log = logging.getLogger("minikafka.tiered")

METADATA_TOPIC = "__remote_log_metadata"
PRODUCE_VERSION = 8
FETCH_VERSION = 11
LIST_OFFSETS_VERSION = 4
FETCH_WAIT_MS = 500
RETRY_S = 0.1
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.OFFSET_OUT_OF_RANGE,
    }
)


class MetadataUnavailable(Exception):
    """The metadata topic could not be written or read in time (retriable: the caller tries later)."""


class _Reader:
    """Reads one metadata partition from its leader and applies its records."""

    def __init__(self, owner: MetadataTopic, partition: int) -> None:
        self.owner = owner
        self.partition = partition
        self.position = 0  # next offset to read
        self.loaded_to: int | None = None  # the partition's end when the reader started
        self._progress = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"rlmm-reader-{partition}")

    async def wait_past(self, offset: int, timeout_s: float) -> None:
        """Until every record below ``offset`` + 1 is applied; MetadataUnavailable after ``timeout_s``."""
        await self._wait(lambda: self.position > offset, timeout_s)

    async def wait_loaded(self, timeout_s: float) -> None:
        await self._wait(lambda: self.loaded_to is not None and self.position >= self.loaded_to, timeout_s)

    async def _wait(self, done: Any, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise MetadataUnavailable(
                    f"{METADATA_TOPIC}-{self.partition} not read up to date within {timeout_s:.0f}s"
                )
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._progress.wait()

    async def _run(self) -> None:
        while True:
            try:
                await self._fetch()
            except asyncio.CancelledError:
                raise
            except (*LINK_ERRORS, MetadataUnavailable) as exc:
                log.debug("%s-%d: %s", METADATA_TOPIC, self.partition, exc)
                await asyncio.sleep(RETRY_S)
            except Exception:
                log.exception("%s-%d: reader failed; retrying", METADATA_TOPIC, self.partition)
                await asyncio.sleep(1.0)

    async def _fetch(self) -> None:
        owner = self.owner
        leader = owner.leader(self.partition)
        body = {
            "replica_id": -1,
            "max_wait_ms": FETCH_WAIT_MS if self.loaded_to is not None else 0,
            "min_bytes": 1,
            "max_bytes": 4 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition": self.partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": self.position,
                            "log_start_offset": -1,
                            "partition_max_bytes": 4 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        answer = await owner.links.call(
            leader, 1, FETCH_VERSION, body, FETCH_WAIT_MS / 1000 + owner.timeout_s
        )
        part = answer.responses[0].partitions[0]
        if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and part.log_start_offset > self.position:
            # the topic keeps everything (retention.ms=-1); a shortened log is not ours to refuse
            log.warning(
                "%s-%d starts at %d: records below it are lost to this reader",
                METADATA_TOPIC,
                self.partition,
                part.log_start_offset,
            )
            self.position = part.log_start_offset
            return
        if part.error_code:
            raise MetadataUnavailable(f"fetch answered error {part.error_code}")
        if self.loaded_to is None:
            self.loaded_to = part.high_watermark
        records = part.records or b""
        if records:
            self._apply(records)
        if records or (self.loaded_to is not None and self.position >= self.loaded_to):
            self._progress.set()
        if not records:
            await asyncio.sleep(0)  # the long poll waited already

    def _apply(self, records: bytes | memoryview) -> None:
        store = self.owner.store
        for header in validate_batches(records, check_crc=True):
            if header.last_offset < self.position:
                continue
            if not header.is_control:
                _, decoded = decode_batch(records, header.position)
                for record in decoded:
                    offset = header.base_offset + record.offset_delta
                    if offset < self.position or record.value is None:
                        continue
                    try:
                        store.apply(decode_metadata(record.value))
                    except ProtocolError as exc:
                        log.error("%s-%d offset %d: %s", METADATA_TOPIC, self.partition, offset, exc)
                    except RemoteLogMetadataError as exc:  # e.g. a deposed leader's late update, as Kafka
                        log.warning("%s-%d offset %d: %s", METADATA_TOPIC, self.partition, offset, exc)
            self.position = header.last_offset + 1


class MetadataTopic:
    def __init__(
        self,
        *,
        links: BrokerLinks,
        cluster: ClusterView,
        admin: TopicAdmin,
        store: RemoteLogMetadataStore,
        num_partitions: int,
        replication_factor: int,
        timeout_s: float,
    ) -> None:
        self.links = links
        self.cluster = cluster
        self.admin = admin
        self.store = store
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s
        self._readers: dict[int, _Reader] = {}

    def ensure_topic(self) -> None:
        """Create ``__remote_log_metadata`` if no broker has yet."""
        state = self.cluster.topic(METADATA_TOPIC)
        if state is not None:
            if len(state.partitions) != self.num_partitions:
                self.num_partitions = len(
                    state.partitions
                )  # the topic decides, as Kafka's partitioner reads it
            return
        live = max(1, len(self.cluster.brokers()))
        factor = min(self.replication_factor, live)
        if factor < self.replication_factor:
            log.warning(
                "%s created with replication factor %d: only %d broker(s) alive (configured %d)",
                METADATA_TOPIC,
                factor,
                live,
                self.replication_factor,
            )
        try:
            self.admin.create_topic(
                METADATA_TOPIC,
                self.num_partitions,
                {"cleanup.policy": "delete", "retention.ms": "-1", "remote.storage.enable": "false"},
                replication_factor=factor,
            )
            log.info("created %s with %d partitions", METADATA_TOPIC, self.num_partitions)
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise

    def partition_of(self, tip: TopicIdPartition) -> int:
        return metadata_partition(tip.topic_id, tip.partition, self.num_partitions)

    def leader(self, partition: int) -> int:
        state = self.cluster.topic(METADATA_TOPIC)
        if state is None or partition >= len(state.partitions) or state.partitions[partition].leader < 0:
            raise MetadataUnavailable(f"{METADATA_TOPIC}-{partition} has no leader")
        return state.partitions[partition].leader

    def _reader(self, partition: int) -> _Reader:
        reader = self._readers.get(partition)
        if reader is None:
            reader = self._readers[partition] = _Reader(self, partition)
        return reader

    async def load(self, tip: TopicIdPartition) -> None:
        """Read ``tip``'s metadata partition up to its current end, then mark ``tip`` loaded."""
        self.ensure_topic()
        await self._reader(self.partition_of(tip)).wait_loaded(self.timeout_s)
        self.store.mark_loaded(tip)

    async def catch_up(self, tip: TopicIdPartition) -> None:
        """Until this broker has read ``tip``'s metadata partition up to the high watermark its leader
        answers now: every record committed before the call is in the store. For a decision that
        must not miss the latest copies of another broker (a new leader's copied offset, a follower
        rebuilding); MetadataUnavailable if that takes longer than the timeout."""
        partition = self.partition_of(tip)
        reader = self._reader(partition)
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": METADATA_TOPIC,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        }
        deadline = time.monotonic() + self.timeout_s
        try:
            answer = await self.links.call(
                self.leader(partition), 2, LIST_OFFSETS_VERSION, body, self.timeout_s
            )
        except LINK_ERRORS as exc:
            raise MetadataUnavailable(f"{METADATA_TOPIC}-{partition}: no high watermark ({exc})") from exc
        result = answer.topics[0].partitions[0]
        if result.error_code:
            raise MetadataUnavailable(f"{METADATA_TOPIC}-{partition}: ListOffsets error {result.error_code}")
        if result.offset > 0:
            await reader.wait_past(result.offset - 1, max(0.1, deadline - time.monotonic()))

    async def publish(self, rec: MetadataRecord) -> None:
        """Write ``rec`` (acks=all) and wait until this broker has read it back; MetadataUnavailable if
        that does not happen within the timeout."""
        self.ensure_topic()
        partition = self.partition_of(rec.tip)
        batch = build_batch([Record(0, 0, None, encode_metadata(rec))])
        deadline = time.monotonic() + self.timeout_s
        while True:
            code, offset = await self._produce(partition, batch, deadline)
            if code == 0:
                break
            if code not in RETRIABLE or time.monotonic() >= deadline:
                raise MetadataUnavailable(f"producing to {METADATA_TOPIC}-{partition}: error {code}")
            await asyncio.sleep(RETRY_S)
        await self._reader(partition).wait_past(offset, max(0.1, deadline - time.monotonic()))

    async def _produce(self, partition: int, batch: bytes, deadline: float) -> tuple[int, int]:
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": int(self.timeout_s * 1000),
            "topic_data": [
                {"name": METADATA_TOPIC, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        try:
            leader = self.leader(partition)
            answer = await self.links.call(
                leader, 0, PRODUCE_VERSION, body, max(0.1, deadline - time.monotonic())
            )
        except (*LINK_ERRORS, MetadataUnavailable) as exc:
            log.debug("%s-%d: produce failed: %s", METADATA_TOPIC, partition, exc)
            return ErrorCode.REQUEST_TIMED_OUT, -1
        result = answer.responses[0].partition_responses[0]
        return result.error_code, result.base_offset

    def close(self) -> None:
        for reader in self._readers.values():
            reader.task.cancel()
        self._readers.clear()
        self.links.close()
