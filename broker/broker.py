"""The broker process state: storage, producer state, fetch waiters, connections.

All of it lives on the event loop thread; handlers mutate it without locks and
without awaiting in the middle of a state change. Blocking work (fsync) runs in
the default executor through `GroupCommit`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.frame_pool import FramePool
from broker.group_commit import GroupCommit
from broker.groups import create_coordinator
from broker.log_tasks import LogTasks
from broker.producer_state import (
    PartitionProducers,
    ProducerIdAllocator,
    load_producer_state,
    write_snapshot,
)
from protocol.errors import ErrorCode, KafkaError
from storage.config import LogConfig
from storage.fs import FileSystem
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.connection import KafkaConnection
    from broker.metrics import BrokerMetrics

log = logging.getLogger("minikafka.broker")

TopicPartition = tuple[str, int]

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def log_defaults(config: BrokerConfig) -> LogConfig:
    """Broker-level `log.*` keys become the default topic configuration."""
    # Only keys set explicitly: Kafka's precedence (ms over minutes over hours) applies among them.
    return LogConfig.from_broker_configs(
        {k: str(v) for k, v in config.values.items() if config.sources[k] != "default"}
    )


class Broker:
    def __init__(self, config: BrokerConfig, fs: FileSystem | None = None) -> None:
        """``fs``: the storage engine's filesystem (tests pass a `storage.fs.FaultyFileSystem`)."""
        self.config = config
        self.node_id = config.node_id
        self.port = int(config["port"])  # the advertised port (the bound one by default), set by the server
        self.data_dir = config.data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.logs = LogManager(
            str(self.data_dir),
            log_defaults(config),
            fs,
            node_id=self.node_id,
            cleaner_dedupe_buffer_bytes=int(config["log.cleaner.dedupe.buffer.size"]),
        )
        self.cluster_id = self.logs.cluster_id
        self.leader_epoch = 0
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.producers: dict[TopicPartition, PartitionProducers] = {}
        self._snapshot_offsets: dict[TopicPartition, int] = {}  # offset of each partition's newest snapshot
        self.group_commit = GroupCommit()
        self.waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self.connections: set[KafkaConnection] = set()
        self.frames = FramePool()  # buffers for large request frames, shared by the connections
        self.shutting_down = False
        self.metrics: BrokerMetrics | None = None  # set by the server when metrics.port is configured
        self._rebuild_producer_state()
        self.log_tasks = LogTasks(self)  # started and stopped by the server
        self.groups = create_coordinator(self)  # creates and replays __consumer_offsets

    # -- topics ----------------------------------------------------------
    def get_log(self, topic: str, partition: int) -> PartitionLog:
        plog = self.logs.get_log(topic, partition)
        if plog is None:
            raise KafkaError(
                f"unknown topic-partition {topic}-{partition}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        return plog

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str | None] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        self.logs.create_topic(name, partitions, configs or {}, validate_only=validate_only)
        if not validate_only:
            for p in range(partitions):
                self.get_log(name, p).become_leader(self.leader_epoch)
            log.info("created topic %s with %d partitions", name, partitions)

    def delete_topic(self, name: str) -> None:
        info = self.logs.topics().get(name)
        self.logs.delete_topic(name)
        if info is not None:
            for p in range(info.partitions):
                self.producers.pop((name, p), None)
                self._snapshot_offsets.pop((name, p), None)
                self.wake((name, p))
            self.groups.remove_offsets_of_topic(name)
        log.info("deleted topic %s", name)

    # -- producer state ---------------------------------------------------
    def producer_state(self, tp: TopicPartition) -> PartitionProducers:
        state = self.producers.get(tp)
        if state is None:
            state = self.producers[tp] = PartitionProducers()
        return state

    def _rebuild_producer_state(self) -> None:
        """Each partition's producers from its newest snapshot plus the log after it (producer_state.py)."""
        started = time.monotonic()
        expiration = int(self.config["producer.id.expiration.ms"])
        for tp, plog in self.logs.logs():
            if plog.offline:
                continue
            state, used = load_producer_state(plog, expiration_ms=expiration)
            if state.producers:
                self.producers[tp] = state
            self._snapshot_offsets[tp] = used
        log.debug("producer state rebuilt in %.3fs", time.monotonic() - started)

    def snapshot_producers(self, tp: TopicPartition, plog: PartitionLog, offset: int) -> None:
        """Write the producer state of ``tp`` as ``<offset>.snapshot``, in the background.

        Called when a segment rolls at ``offset``, before the batches appended there
        update the state, so the snapshot describes exactly the batches below ``offset``.
        """
        state = self.producers.get(tp)
        data = (state or PartitionProducers()).to_snapshot()
        self._snapshot_offsets[tp] = offset
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
        expiration = int(self.config["producer.id.expiration.ms"])
        return sum(state.expire(now_ms, expiration) for state in self.producers.values())

    def producer_last_offsets(self, tp: TopicPartition) -> dict[int, int]:
        state = self.producers.get(tp)
        return state.last_offsets() if state is not None else {}

    def _snapshot_all_producers(self) -> None:
        """At shutdown: a snapshot at the log end of every partition that moved since its last one."""
        for tp, plog in self.logs.logs():
            leo = plog.log_end_offset
            if plog.offline or plog.closed or self._snapshot_offsets.get(tp, -1) == leo:
                continue
            if tp not in self.producers and plog.log_start_offset >= leo:
                continue  # empty log, no producers: nothing to remember or replay
            state = self.producers.get(tp) or PartitionProducers()
            try:
                write_snapshot(plog.fs, plog.directory, leo, state.to_snapshot())
            except OSError as exc:
                log.warning("producer snapshot of %s-%d not written: %s", tp[0], tp[1], exc)

    # -- fetch waiters -----------------------------------------------------
    def wake(self, tp: TopicPartition) -> None:
        """Resolve every fetch parked on `tp` (new data, or the partition went away)."""
        futures = self.waiters.pop(tp, None)
        if futures:
            for f in futures:
                if not f.done():
                    f.set_result(None)

    def park(self, tps: list[TopicPartition]) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in tps:
            self.waiters.setdefault(tp, set()).add(fut)
        return fut

    def unpark(self, fut: asyncio.Future[None], tps: list[TopicPartition]) -> None:
        for tp in tps:
            futures = self.waiters.get(tp)
            if futures is not None:
                futures.discard(fut)
                if not futures:
                    del self.waiters[tp]

    # -- lifecycle -----------------------------------------------------------
    def close_waiters(self) -> None:
        """Answer every parked fetch now, and any that parks later (shutdown); same for group requests."""
        self.shutting_down = True
        self.groups.shutdown()
        for tp in list(self.waiters):
            self.wake(tp)

    def close(self) -> None:
        self.close_waiters()
        self._snapshot_all_producers()
        self.logs.close()
