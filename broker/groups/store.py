"""`__consumer_offsets` on the broker's storage: the coordinator's `OffsetsLog`.

- The topic is created at broker start if missing: `offsets.topic.num.partitions`
  partitions (default 50), cleanup.policy=compact, segment.bytes =
  `offsets.topic.segment.bytes`. An existing topic keeps its partition count
  (changing it would move groups to other partitions).
- `append` builds one uncompressed RecordBatch v2 (producer id -1, CreateTime =
  now) from the (key, value) pairs and appends it through the replica manager
  as Produce does (`ReplicaManager.append`: leader epoch, high watermark,
  parked fetches woken). Durability is the acks=all rule: ``done`` runs after the broker's
  group commit has fsynced the partition.
- `read` replays a partition from its log start offset to its high watermark,
  skipping control batches.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from broker.groups.coordinator import Done, RecordKV
from protocol.errors import ErrorCode, KafkaError, ProtocolError
from protocol.records import Record, build_batch, decode_batch, scan_valid_prefix, validate_batches

if TYPE_CHECKING:
    from broker.cluster import TopicAdmin
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.replica import ReplicaManager

log = logging.getLogger("minikafka.groups.store")

OFFSETS_TOPIC = "__consumer_offsets"
READ_CHUNK_BYTES = 1 << 20


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


class BrokerOffsetsLog:
    """`OffsetsLog` backed by the broker's partition logs and group commit."""

    def __init__(self, replicas: ReplicaManager, group_commit: GroupCommit, num_partitions: int) -> None:
        self._replicas = replicas
        self._group_commit = group_commit
        self._num_partitions = num_partitions

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    def append(self, partition: int, records: Sequence[RecordKV], done: Done | None) -> None:
        loop = asyncio.get_running_loop()
        try:
            part = self._replicas.leader(OFFSETS_TOPIC, partition)
            plog = part.log
            batch = bytearray(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)]))
            if len(batch) > plog.config.max_message_bytes:
                raise KafkaError(f"batch of {len(batch)} bytes", ErrorCode.MESSAGE_TOO_LARGE)
            headers = validate_batches(batch, check_crc=False)  # just built: the CRC is right
            self._replicas.append(part, batch, headers, int(time.time() * 1000))
        except (KafkaError, OSError) as exc:
            code = exc.code if isinstance(exc, KafkaError) else ErrorCode.KAFKA_STORAGE_ERROR
            if code != ErrorCode.MESSAGE_TOO_LARGE:
                code = ErrorCode.KAFKA_STORAGE_ERROR
            log.error("%s-%d: append failed: %s", OFFSETS_TOPIC, partition, exc)
            if done is not None:
                loop.call_soon(done, code)
            return
        if done is None:
            return

        def synced(f: asyncio.Future[None]) -> None:
            if f.cancelled() or f.exception() is not None:
                log.error("%s-%d: fsync failed; not acknowledging", OFFSETS_TOPIC, partition)
                done(ErrorCode.KAFKA_STORAGE_ERROR)
            else:
                done(ErrorCode.NONE)

        self._group_commit.sync(plog).add_done_callback(synced)

    def read(self, partition: int) -> Iterator[RecordKV]:
        plog = self._replicas.partition(OFFSETS_TOPIC, partition).log
        offset = plog.log_start_offset
        while offset < plog.high_watermark:
            data = plog.read(offset, READ_CHUNK_BYTES).data
            headers, _ = scan_valid_prefix(data)
            if not headers:
                break
            for h in headers:
                if h.next_offset <= offset:
                    continue
                if h.is_control:
                    continue
                try:
                    _, recs = decode_batch(data, h.position)
                except ProtocolError as exc:
                    log.warning(
                        "%s-%d: skipping an unreadable batch at %d: %s",
                        OFFSETS_TOPIC,
                        partition,
                        h.base_offset,
                        exc,
                    )
                    continue
                for rec in recs:
                    if rec.key is not None:
                        yield rec.key, rec.value
            offset = headers[-1].next_offset
