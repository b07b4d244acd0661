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
from broker.group_commit import GroupCommit
from broker.producer_state import PartitionProducers, ProducerIdAllocator
from protocol.errors import ErrorCode, KafkaError
from storage.config import LogConfig
from storage.log_manager import LogManager
from storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.connection import KafkaConnection

log = logging.getLogger("minikafka.broker")

TopicPartition = tuple[str, int]

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def log_defaults(config: BrokerConfig) -> LogConfig:
    """Broker-level `log.*` keys become the default topic configuration."""
    return LogConfig.from_broker_configs({k: str(v) for k, v in config.values.items()})


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.port = int(config["port"])  # the bound port once the server listens
        self.data_dir = config.data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.logs = LogManager(self.data_dir, log_defaults(config), node_id=self.node_id)
        self.cluster_id = self.logs.cluster_id
        self.leader_epoch = 0
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.producers: dict[TopicPartition, PartitionProducers] = {}
        self.group_commit = GroupCommit()
        self.waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self.connections: set[KafkaConnection] = set()
        self.shutting_down = False
        self._rebuild_producer_state()

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
            log.info("created topic %s with %d partitions", name, partitions)

    def delete_topic(self, name: str) -> None:
        info = self.logs.topics().get(name)
        self.logs.delete_topic(name)
        if info is not None:
            for p in range(info.partitions):
                self.producers.pop((name, p), None)
                self.wake((name, p))
        log.info("deleted topic %s", name)

    # -- producer state ---------------------------------------------------
    def producer_state(self, tp: TopicPartition) -> PartitionProducers:
        state = self.producers.get(tp)
        if state is None:
            state = self.producers[tp] = PartitionProducers()
        return state

    def _rebuild_producer_state(self) -> None:
        started = time.monotonic()
        for name, info in self.logs.topics().items():
            for p in range(info.partitions):
                plog = self.logs.get_log(name, p)
                if plog is not None:
                    self.producer_state((name, p)).rebuild(plog.iter_batch_headers())
        log.debug("producer state rebuilt in %.3fs", time.monotonic() - started)

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
        """Answer every parked fetch now, and any that parks later (shutdown)."""
        self.shutting_down = True
        for tp in list(self.waiters):
            self.wake(tp)

    def close(self) -> None:
        self.close_waiters()
        self.logs.close()
