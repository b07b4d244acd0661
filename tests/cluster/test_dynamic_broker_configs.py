"""Dynamic broker configs in a three-broker cluster on a real ZooKeeper (marker ``cluster``).

The cluster default reaches every broker through ZooKeeper's change notification; a per-broker
value wins on its broker only; both are Kafka's znodes and survive a broker's restart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from kazoo.client import KazooClient

from tests.broker_process import REPO
from tests.cluster.helpers import create_topic, wait_for
from tests.cluster_process import QUIET, Cluster
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def _admin(cluster: Cluster, node: int | None = None) -> AdminClient:
    bootstrap = cluster.bootstrap if node is None else cluster.brokers[node].bootstrap
    return AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})


def _broker_entry(cluster: Cluster, node: int, key: str) -> tuple[str | None, int]:
    """(value, source) of ``key`` as broker ``node`` describes its own configs."""
    resource = ConfigResource(ConfigResource.Type.BROKER, str(node))
    admin = _admin(cluster, node)  # kept until the answer is in: a dropped client cancels its requests
    entry = admin.describe_configs([resource])[resource].result(30)[key]
    return entry.value, entry.source


def _set(cluster: Cluster, node: int, **configs: str) -> None:
    ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    resource = ConfigResource(ConfigResource.Type.BROKER, str(node), incremental_configs=ops)
    admin = _admin(cluster)
    admin.incremental_alter_configs([resource])[resource].result(30)


def _cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", "configs", "--bootstrap-server", cluster.bootstrap, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _eventually(check: Callable[[], bool], what: str) -> None:
    wait_for(check, 30, what)


def test_cluster_default_reaches_every_broker_and_a_per_broker_value_wins(cluster: Cluster) -> None:
    default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    own = ConfigSource.DYNAMIC_BROKER_CONFIG.value
    done = _cli(
        cluster,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "log.retention.ms=7200000",
    )
    assert done.returncode == 0, done.stderr
    for node in cluster.brokers:
        _eventually(
            lambda n=node: _broker_entry(cluster, n, "log.retention.ms") == ("7200000", default),
            f"broker {node}",
        )

    _set(cluster, 2, **{"log.retention.ms": "3600000", "leader.replication.throttled.rate": "1048576"})
    _eventually(
        lambda: _broker_entry(cluster, 2, "log.retention.ms") == ("3600000", own), "broker 2's own value"
    )
    assert _broker_entry(cluster, 1, "log.retention.ms") == ("7200000", default)
    assert _broker_entry(cluster, 3, "log.retention.ms") == ("7200000", default)

    # a replicated topic's replicas follow their own broker's default (asked of each broker)
    create_topic(cluster.bootstrap, "dyn", 1, 3)
    body = {
        "resources": [{"resource_type": 2, "resource_name": "dyn", "configuration_keys": ["retention.ms"]}],
        "include_synonyms": True,
    }
    for node, expected in ((1, ("7200000", default)), (2, ("3600000", own))):
        with RawClient(cluster.brokers[node].port) as c:
            (entry,) = c.request(32, 1, body).results[0].configs
        assert (entry.value, entry.config_source) == expected

    zk = KazooClient(hosts=cluster.zookeeper.connect_string)
    zk.start(timeout=15)
    try:  # Kafka's znodes and change notifications
        stored = {
            name: json.loads(zk.get(f"/config/brokers/{name}")[0])
            for name in zk.get_children("/config/brokers")
        }
        notes = [json.loads(zk.get(f"/config/changes/{c}")[0]) for c in zk.get_children("/config/changes")]
    finally:
        zk.stop()
        zk.close()
    assert stored == {
        "<default>": {"version": 1, "config": {"log.retention.ms": "7200000"}},
        "2": {
            "version": 1,
            "config": {"log.retention.ms": "3600000", "leader.replication.throttled.rate": "1048576"},
        },
    }
    assert {"version": 2, "entity_path": "brokers/<default>"} in notes
    assert {"version": 2, "entity_path": "brokers/2"} in notes

    cluster.brokers[2].stop()
    cluster.restart(2)
    _eventually(lambda: set(cluster.registered(1)) == {1, 2, 3}, "broker 2 back")
    assert _broker_entry(cluster, 2, "log.retention.ms") == ("3600000", own)
    assert _broker_entry(cluster, 2, "leader.replication.throttled.rate") == ("1048576", own)

    # removing the per-broker value gives the cluster default back
    ops = [ConfigEntry("log.retention.ms", "", incremental_operation=AlterConfigOpType.DELETE)]
    resource = ConfigResource(ConfigResource.Type.BROKER, "2", incremental_configs=ops)
    admin = _admin(cluster)
    admin.incremental_alter_configs([resource])[resource].result(30)
    assert _broker_entry(cluster, 2, "log.retention.ms") == ("7200000", default)

    shown = _cli(cluster, "--entity-type", "brokers", "--describe")
    assert shown.returncode == 0, shown.stderr
    assert "Default configs for brokers in the cluster are:\n  log.retention.ms=7200000" in shown.stdout
    assert "Dynamic configs for broker 2 are:\n  leader.replication.throttled.rate=1048576" in shown.stdout


def test_refusals_in_a_cluster(cluster: Cluster) -> None:
    """Kafka's errors through a cluster member: a static key, a per-broker key at the cluster
    default, and a password without ``password.encoder.secret`` (Kafka will not keep it in the clear)."""
    refused = _cli(
        cluster,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "listener.name.plaintext.ssl.keystore.location=/x",
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "minikafka: error: the cluster default of broker configs: INVALID_REQUEST (Cannot update these configs at"
        " default cluster level, broker id must be specified: Set(listener.name.plaintext.ssl.keystore.location))"
    )
    with pytest.raises(KafkaException) as info:
        _set(cluster, 1, **{"listener.name.plaintext.ssl.key.password": "secret"})
    err = info.value.args[0]
    assert (err.code(), err.str()) == (
        KafkaError.INVALID_CONFIG,
        "Invalid config value for resource ConfigResource(type=BROKER, name='1'): Password encoder secret not configured",
    )
    time.sleep(0.5)
    assert _broker_entry(cluster, 1, "log.cleanup.policy") == ("delete", ConfigSource.DEFAULT_CONFIG.value)
