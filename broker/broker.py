"""The broker process: configuration and the parts it is wired from.

- ``logs``: the data directory (`storage.LogManager`);
- ``replicas``: the partitions hosted here (`broker.replica.ReplicaManager`);
- ``cluster``: the cluster view and topic admin (`broker.cluster`); a single
  broker with no ZooKeeper uses `LocalCluster`;
- ``groups``: the group coordinator, on `__consumer_offsets`;
- ``group_commit``, ``producer_ids``, ``frames``, ``log_tasks``, ``metrics``.

Handlers reach these through `RequestContext.broker`. All state lives on the
event loop thread; blocking work (fsync) runs in the default executor through
`GroupCommit`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.cluster import BrokerNode, LocalCluster
from broker.config import BrokerConfig
from broker.frame_pool import FramePool
from broker.group_commit import GroupCommit
from broker.groups import create_coordinator
from broker.log_tasks import LogTasks
from broker.producer_state import ProducerIdAllocator
from broker.replica import ReplicaManager
from storage.config import LogConfig
from storage.fs import FileSystem
from storage.log_manager import LogManager

if TYPE_CHECKING:
    from broker.metrics import BrokerMetrics

log = logging.getLogger("minikafka.broker")


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
        self.data_dir = config.data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.logs = LogManager(
            str(self.data_dir),
            log_defaults(config),
            fs,
            node_id=self.node_id,
            cleaner_dedupe_buffer_bytes=int(config["log.cleaner.dedupe.buffer.size"]),
        )
        self.replicas = ReplicaManager(self.logs, self.node_id, int(config["producer.id.expiration.ms"]))
        # the advertised port is the bound one unless configured: the server sets it once listening
        node = BrokerNode(
            self.node_id, config.advertised_host, int(config["advertised.port"]) or int(config["port"])
        )
        self.cluster = LocalCluster(self.replicas, node)
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.group_commit = GroupCommit()
        self.connections: set[Any] = set()  # the server's open `KafkaConnection`s
        self.frames = FramePool()  # buffers for large request frames, shared by the connections
        self.metrics: BrokerMetrics | None = None  # set by the server when metrics.port is configured
        self.log_tasks = LogTasks(config, self.logs, self.replicas, self.group_commit)  # run by the server
        self.groups = create_coordinator(config, self.replicas, self.cluster, self.group_commit)
        self.cluster.topic_deleted.append(self.groups.remove_offsets_of_topic)

    @property
    def cluster_id(self) -> str:
        return self.cluster.cluster_id

    @property
    def shutting_down(self) -> bool:
        return self.replicas.closing

    def advertise(self, port: int) -> None:
        """Tell clients this port (the server calls this once it has bound its listening socket)."""
        node = self.cluster.node
        self.cluster.node = BrokerNode(node.node_id, node.host, port, node.rack)

    def close_waiters(self) -> None:
        """Answer every parked fetch now, and any that parks later (shutdown); same for group requests."""
        self.replicas.close_waiters()
        self.groups.shutdown()

    def close(self) -> None:
        self.close_waiters()
        self.replicas.close()
