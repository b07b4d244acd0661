"""Transactions: the transaction coordinator and its `__transaction_state` topic.

Modules: `records` (Kafka's key/value formats), `state` (an id's states and
epoch rules), `coordinator` (the requests and timers), `log` (the topic on the
broker's storage), `markers` (writing COMMIT/ABORT markers on the
transaction's partitions, here or on other brokers), `add_partitions_manager`
(a partition leader or group coordinator adding partitions for a
transactions-v2 producer, or verifying them with a coordinator elsewhere),
`verification` (the first-write check with a coordinator here),
`broker_links` (their requests to other brokers).

`Transactions` wires them for the broker. `__transaction_state` is created
the first time a client looks for a transaction coordinator, as Kafka does:
on a single broker it is created and replayed at once; in a cluster it is
created in ZooKeeper (replication factor
``transaction.state.log.replication.factor`` capped at the live brokers) and
each broker coordinates the partitions it comes to lead (`elect`/`resign`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from broker.txn.add_partitions_manager import AddPartitionsManager
from broker.txn.coordinator import TransactionCoordinator, TxnSettings
from broker.txn.log import TXN_TOPIC, TxnLog, ensure_txn_topic, txn_topic_configs
from broker.txn.markers import MarkerWriter
from protocol.errors import KafkaError

if TYPE_CHECKING:
    from broker.cluster import TopicAdmin
    from broker.cluster.view import ClusterView
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.groups.coordinator import GroupCoordinator
    from broker.producer_state import BlockProducerIds
    from broker.replica import ReplicaManager

log = logging.getLogger("minikafka.txn")


def txn_settings(config: BrokerConfig) -> TxnSettings:
    return TxnSettings(
        max_timeout_ms=int(config["transaction.max.timeout.ms"]),
        abort_check_interval_ms=int(config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]),
        id_expiration_ms=int(config["transactional.id.expiration.ms"]),
        expiry_check_interval_ms=int(config["transaction.remove.expired.transaction.cleanup.interval.ms"]),
    )


class Transactions(TransactionCoordinator):
    """The broker's transaction coordinator, with the topic's lifecycle and its timers."""

    def __init__(
        self,
        config: BrokerConfig,
        replicas: ReplicaManager,
        group_commit: GroupCommit,
        groups: GroupCoordinator,
        cluster: ClusterView,
        admin: TopicAdmin,
        producer_ids: BlockProducerIds,
        *,
        local: bool,
    ) -> None:
        self._config = config
        self._replicas = replicas
        self._cluster = cluster
        self._admin = admin
        self._local = local
        self.marker_writer = MarkerWriter(
            replicas, group_commit, groups, cluster, config.inter_broker_listener
        )
        partitions = int(config["transaction.state.log.num.partitions"])
        info = replicas.logs.topics().get(TXN_TOPIC)
        if info is not None:
            partitions = info.partitions
        super().__init__(
            txn_settings(config),
            TxnLog(replicas, group_commit, partitions),
            self.marker_writer,
            producer_ids.allocate,
        )
        self.adds = AddPartitionsManager(self, cluster, replicas.node_id, config.inter_broker_listener)
        self._timers: asyncio.Task[None] | None = None
        if local and info is not None:
            self.load_all()

    def ensure_topic(self) -> None:
        """Create `__transaction_state` if it does not exist yet (see the package docstring)."""
        if self._cluster.topic(TXN_TOPIC) is not None:
            return
        if self._local:
            ensure_txn_topic(self._config, self._replicas, self._admin)
            self.load_all()
            return
        rf = min(int(self._config["transaction.state.log.replication.factor"]), len(self._cluster.brokers()))
        with contextlib.suppress(KafkaError):  # another broker got there first
            self._admin.create_topic(
                TXN_TOPIC,
                self._store.num_partitions,
                txn_topic_configs(self._config, rf),
                replication_factor=rf,
            )

    def elect(self, partition: int) -> None:
        super().elect(partition)
        if self._timers is None:
            with contextlib.suppress(RuntimeError):  # no running loop: started with the next election
                self._timers = asyncio.get_running_loop().create_task(self.run_timers())

    def close(self) -> None:
        super().close()
        if self._timers is not None:
            self._timers.cancel()
        self.marker_writer.close()
        self.adds.close()
