"""The broker process: configuration and the parts it is wired from.

- ``logs``: the data directory (`storage.LogManager`);
- ``replicas``: the partitions hosted here (`broker.replica.ReplicaManager`);
- ``cluster``: the cluster view (`broker.cluster`): `LocalCluster` for a single
  broker with no ZooKeeper, `ZkCluster` for a cluster member;
- ``admin``: topic creation, deletion and config changes (`TopicAdmin`);
- ``dynamic``: the dynamic broker configs (`broker.dynamic.DynamicBrokerConfigs`): the effective
  value of every broker key, read before the logs open, and the parts that follow its changes
  (broker/dynamic/effects.py);
- ``groups``: the group coordinator, on `__consumer_offsets`;
- ``remote_logs``: tiered storage's remote log manager (`broker.tiered`), None when it is off;
- ``transactions``: the transaction coordinator, on `__transaction_state` (`broker.txn`);
- ``group_commit``, ``producer_ids``, ``frames``, ``log_tasks``, ``metrics``.

Handlers reach these through `RequestContext.broker`. All state lives on the
event loop thread; blocking work (fsync) runs in the default executor through
`GroupCommit`.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from typing import TYPE_CHECKING, Any

from broker.cluster import BrokerNode, LocalCluster, TopicAdmin
from broker.config import BrokerConfig, ConfigError
from broker.dynamic import effects
from broker.dynamic.configs import DynamicBrokerConfigs
from broker.frame_pool import FramePool
from broker.group_commit import GroupCommit
from broker.groups import create_coordinator
from broker.groups.store import OFFSETS_TOPIC, offsets_topic_configs
from broker.log_tasks import LogTasks
from broker.producer_state import BlockProducerIds, ProducerIdAllocator
from broker.replica import ReplicaManager
from broker.security.broker_security import BrokerSecurity
from broker.tiered.wiring import remote_log_manager
from broker.txn import Transactions
from broker.txn.log import TXN_TOPIC
from storage.config import LogConfig
from storage.fs import FileSystem
from storage.log_manager import LogManager
from storage.remote_config import validate_broker_defaults

if TYPE_CHECKING:
    from broker.cluster.zk.cluster import ZkCluster
    from broker.cluster.zk.session import ZkSession
    from broker.groups.coordinator import GroupCoordinator
    from broker.metrics import BrokerMetrics
    from broker.tiered.manager import RemoteLogManager

log = logging.getLogger("minikafka.broker")


def _connect_zookeeper(config: BrokerConfig, broker: Broker) -> ZkSession | None:
    """The ZooKeeper session of a cluster member (None without ``zookeeper.connect``); RuntimeError if unreachable."""
    hosts = str(config["zookeeper.connect"])
    if not hosts:
        return None
    from broker.cluster.zk.session import ZkSession

    session = ZkSession(
        hosts,
        int(config["zookeeper.session.timeout.ms"]),
        asyncio.get_running_loop(),
        on_change=lambda: broker.cluster.on_change(),  # type: ignore[union-attr]
        on_state=lambda state: broker.cluster.on_state(state),  # type: ignore[union-attr]
    )
    try:
        session.start(int(config["zookeeper.connection.timeout.ms"]) / 1000)
    except Exception as exc:
        session.close()
        raise RuntimeError(f"cannot reach ZooKeeper at {hosts}: {exc!r}") from None
    return session


def log_defaults(config: BrokerConfig) -> LogConfig:
    """Broker-level `log.*` keys become the default topic configuration."""
    # Only keys set explicitly: Kafka's precedence (ms over minutes over hours) applies among them.
    return LogConfig.from_broker_configs(
        {k: str(v) for k, v in config.values.items() if config.sources[k] != "default"}
    )


class Broker:
    def __init__(self, config: BrokerConfig, fs: FileSystem | None = None) -> None:
        """``fs``: the storage engine's filesystem (tests pass a `storage.fs.FaultyFileSystem`).

        With ``zookeeper.connect`` set this connects to ZooKeeper (blocking, up to
        ``zookeeper.connection.timeout.ms``) and must run inside the event loop.
        """
        self.config = config
        self.node_id = config.node_id
        self.data_dir = config.data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.security = BrokerSecurity(
            config, self.data_dir
        )  # first: its config errors come before ZooKeeper
        session = _connect_zookeeper(config, self)
        self.security.zk = session
        cluster_id = None
        if session is not None:
            from broker.cluster.zk.admin import ensure_cluster_id

            proposed = (
                str(config["cluster.id"])
                or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
            )
            cluster_id = ensure_cluster_id(session, proposed)
        # Dynamic broker configs before the logs open: their topic defaults apply from the start.
        self.dynamic = DynamicBrokerConfigs(config, None if session is not None else self.data_dir)
        self.dynamic.load(session)
        dynamic = self.dynamic
        defaults = LogConfig.from_broker_configs(dynamic.explicit())
        try:  # tiered storage on: log.local.retention.* must fit log.retention.* (Kafka's start-up check)
            validate_broker_defaults(defaults, config.remote_log_storage_system_enable)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.logs = LogManager(
            str(self.data_dir),
            defaults,
            fs,
            node_id=self.node_id,
            cluster_id=cluster_id,
            cleaner_dedupe_buffer_bytes=dynamic.int_value("log.cleaner.dedupe.buffer.size")
            // max(1, dynamic.int_value("log.cleaner.threads")),
            remote_log_system_enabled=bool(config["remote.log.storage.system.enable"]),
        )
        self.replicas = ReplicaManager(
            self.logs, self.node_id, dynamic.int_value("producer.id.expiration.ms")
        )
        self.rack: str | None = str(config["broker.rack"]) or None  # registered in ZooKeeper, in Metadata
        # KIP-392: leaders point consumers at a replica in their rack (broker/replica/selector.py)
        self.replica_selector: str | None = str(config["replica.selector.class"]) or None
        # an advertised port of 0 is the bound one: the server fills it in once listening
        self._listeners = config.served_listeners()
        node = self._node({})
        self.cluster: LocalCluster | ZkCluster
        self.producer_ids: BlockProducerIds
        if session is None:
            self.cluster = LocalCluster(self.replicas, node)
            self.admin: TopicAdmin = self.cluster
            self.producer_ids = ProducerIdAllocator(self.data_dir)
        else:
            from broker.cluster.zk.cluster import ZkCluster
            from broker.cluster.zk.elections import LeaderBalance

            self.cluster = ZkCluster(
                session,
                self.replicas,
                node,
                self.logs.cluster_id,
                default_replication_factor=int(config["default.replication.factor"]),
                offsets_partitions=int(config["offsets.topic.num.partitions"]),
                offsets_replication_factor=int(config["offsets.topic.replication.factor"]),
                offsets_configs=offsets_topic_configs(config),
                replica_lag_ms=int(config["replica.lag.time.max.ms"]),
                balance=LeaderBalance(
                    auto_rebalance=bool(config["auto.leader.rebalance.enable"]),
                    check_interval_s=float(config["leader.imbalance.check.interval.seconds"]),
                    imbalance_percentage=int(config["leader.imbalance.per.broker.percentage"]),
                    unclean=dynamic.bool_value("unclean.leader.election.enable"),
                ),
                inter_broker_listener=config.inter_broker_listener,
            )
            self.admin = self.cluster.admin
            self.producer_ids = BlockProducerIds(self.cluster.admin.allocate_producer_id_block)
        self.group_commit = GroupCommit()
        self.connections: set[Any] = set()  # the server's open `KafkaConnection`s
        self.handshaking: set[Any] = set()  # accepted TLS connections still handshaking (`TlsAccept`)
        self.frames = FramePool()  # buffers for large request frames, shared by the connections
        self.metrics: BrokerMetrics | None = None  # set by the server when metrics.port is configured
        self.log_tasks = LogTasks(config, self.logs, self.replicas, self.group_commit)  # run by the server
        self.groups = create_coordinator(
            config, self.replicas, self.admin, self.group_commit, local=session is None
        )
        self.groups.consumer.topics = self.cluster.topics
        self.cluster.topic_deleted.append(self.groups.remove_offsets_of_topic)
        self.transactions = Transactions(
            config,
            self.replicas,
            self.group_commit,
            self.groups,
            self.cluster,
            self.admin,
            self.producer_ids,
            local=session is None,
        )
        self.transactions.marker_writer.links.link_security = self.security.link_security
        self.transactions.adds.links.link_security = self.security.link_security
        # tiered storage (KIP-405): None unless remote.log.storage.system.enable
        self.remote_logs: RemoteLogManager | None = remote_log_manager(
            config,
            replicas=self.replicas,
            cluster=self.cluster,
            admin=self.admin,
            link_security=self.security.link_security,
        )
        self.remote_fetch_max_wait_s = int(config["remote.fetch.max.wait.ms"]) / 1000
        self.remote_list_offsets_timeout_ms = int(config["remote.list.offsets.request.timeout.ms"])
        if session is not None:
            self.cluster.fetchers.link_security = self.security.link_security
            self.cluster.leadership_changed.append(self._coordinator_leadership)
            if self.remote_logs is not None:
                rlm = self.remote_logs
                self.cluster.leadership_changed.append(lambda _t, _p, _leads: rlm.kick())
                self.cluster.fetchers.on_offset_moved_to_tiered = rlm.rebuild_follower
        effects.connect(
            dynamic,
            logs=self.logs,
            log_tasks=self.log_tasks,
            replicas=self.replicas,
            security=self.security,
            cluster=self.cluster,
        )
        dynamic.announce()  # what the static configuration built differently (listeners' TLS stores)

    def _coordinator_leadership(self, topic: str, partition: int, leads: bool) -> None:
        """The coordinators follow the leadership of their __consumer_offsets / __transaction_state partitions."""
        coordinator: GroupCoordinator | Transactions
        if topic == OFFSETS_TOPIC:
            coordinator = self.groups
        elif topic == TXN_TOPIC:
            coordinator = self.transactions
        else:
            return
        if leads:
            coordinator.elect(partition)
        else:
            coordinator.resign(partition)

    @property
    def cluster_id(self) -> str:
        return self.cluster.cluster_id

    @property
    def shutting_down(self) -> bool:
        return self.replicas.closing

    def _node(self, bound: dict[str, int]) -> BrokerNode:
        """This broker as Metadata shows it: each listener's advertised address (``bound``: name -> port)."""
        endpoints = tuple(
            (lst.name, lst.advertised_host, lst.advertised_port or bound.get(lst.name, lst.port))
            for lst in self._listeners
        )
        _, host, port = endpoints[0]
        protocols = tuple((lst.name, lst.protocol) for lst in self._listeners)
        return BrokerNode(self.node_id, host, port, self.rack, endpoints, protocols)

    def advertise(self, bound: dict[str, int]) -> None:
        """Tell clients the bound ports (the server calls this once its listening sockets are bound)."""
        self.cluster.node = self._node(bound)

    def close_waiters(self) -> None:
        """Answer every parked fetch now, and any that parks later (shutdown); same for group requests."""
        self.replicas.close_waiters()
        self.groups.shutdown()
        self.transactions.close()

    def close(self) -> None:
        self.close_waiters()
        self.replicas.close()
