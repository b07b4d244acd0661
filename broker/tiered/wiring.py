"""Building the remote log manager from the broker's configuration.

`remote_log_manager(config, ...)` returns None unless
``remote.log.storage.system.enable`` is true. The object store comes from the
``rsm.config.`` keys (`broker.tiered.rsm_config`, the Aiven plugin's names);
the metadata topic's settings from the ``rlmm.config.`` keys, as Kafka's
topic-based metadata manager reads them:
``remote.log.metadata.topic.num.partitions`` (50),
``remote.log.metadata.topic.replication.factor`` (3) and
``remote.log.metadata.consume.wait.ms`` (120000).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.config import ConfigError
from broker.tiered.manager import RemoteLogManager
from broker.tiered.rsm_config import make_object_store, parse_rsm_config
from broker.txn.broker_links import BrokerLinks

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView, TopicAdmin
    from broker.config import BrokerConfig
    from broker.replica import ReplicaManager
    from broker.replica.link import LinkSecurity


def remote_log_manager(
    config: BrokerConfig,
    *,
    replicas: ReplicaManager,
    cluster: ClusterView,
    admin: TopicAdmin,
    link_security: LinkSecurity | None,
) -> RemoteLogManager | None:
    if not config.remote_log_storage_system_enable:
        return None
    prefix_key = "remote.log.storage.manager.impl.prefix"
    try:
        rsm = parse_rsm_config({**config.plugin_values, prefix_key: str(config[prefix_key])})
    except ValueError as exc:  # one line at start-up, not a traceback
        raise ConfigError(str(exc)) from None
    partitions, factor, wait_s = _metadata_settings(config.remote_log_metadata_manager_configs())
    listener = str(config["remote.log.metadata.manager.listener.name"] or "") or config.inter_broker_listener
    links = BrokerLinks(cluster, listener, f"remote-log-metadata-{config.node_id}", max_links=2)
    links.link_security = link_security
    leader_links = BrokerLinks(
        cluster, config.inter_broker_listener, f"replica-{config.node_id}", max_links=1
    )
    leader_links.link_security = link_security
    pool = int(config["remote.log.manager.copier.thread.pool.size"])
    if pool < 0:
        pool = int(config["remote.log.manager.thread.pool.size"])
    return RemoteLogManager(
        node_id=config.node_id,
        replicas=replicas,
        cluster=cluster,
        admin=admin,
        links=links,
        leader_links=leader_links,
        store=make_object_store(rsm),
        key_prefix=rsm.key_prefix,
        interval_s=int(config["remote.log.manager.task.interval.ms"]) / 1000,
        pool_size=pool,
        retry_backoff_s=int(config["remote.log.manager.task.retry.backoff.ms"]) / 1000,
        retry_backoff_max_s=int(config["remote.log.manager.task.retry.backoff.max.ms"]) / 1000,
        metadata_partitions=partitions,
        metadata_replication_factor=factor,
        metadata_timeout_s=wait_s,
    )


def _metadata_settings(rlmm: dict[str, str]) -> tuple[int, int, float]:
    """(partitions, replication factor, consume wait in seconds) of ``__remote_log_metadata``, from the
    ``rlmm.config.`` keys (prefix cut off) with Kafka's defaults and lower bounds."""
    out = []
    for key, default, least in (
        ("remote.log.metadata.topic.num.partitions", 50, 1),
        ("remote.log.metadata.topic.replication.factor", 3, 1),
        ("remote.log.metadata.consume.wait.ms", 120000, 0),
    ):
        text = rlmm.get(key, str(default))
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"rlmm.config.{key} must be an integer, not {text!r}") from None
        if value < least:
            raise ConfigError(f"rlmm.config.{key} must be at least {least}, not {value}")
        out.append(value)
    return out[0], out[1], out[2] / 1000
