"""Tiered storage's topic rules in a ZooKeeper cluster (marker ``cluster``): whichever broker a
request reaches, it judges the change against the topic's overrides as ZooKeeper holds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from protocol.errors import ErrorCode
from tests.cluster.helpers import wait_for, wait_for_leaders
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

TURNING_OFF = "It is invalid to disable remote storage without deleting remote data."


def _alter(cluster: Cluster, node: int, topic: str, **configs: str) -> Any:
    """IncrementalAlterConfigs SET on TOPIC ``topic``, sent to broker ``node`` itself."""
    ops = [{"name": k.replace("_", "."), "config_operation": 0, "value": v} for k, v in configs.items()]
    body = {
        "resources": [{"resource_type": 2, "resource_name": topic, "configs": ops}],
        "validate_only": False,
    }
    with RawClient(cluster.brokers[node].port) as c:
        return c.request(44, 1, body).responses[0]


def _described(cluster: Cluster, node: int, key: str) -> str | None:
    admin = AdminClient({"bootstrap.servers": cluster.brokers[node].bootstrap, "logger": QUIET})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "tiered")
    return admin.describe_configs([resource])[resource].result(30)[key].value  # type: ignore[no-any-return]


def test_turning_tiering_off_is_judged_on_every_broker(tmp_path: Path, zookeeper: ZooKeeperProcess) -> None:
    switched = {
        "remote.log.storage.system.enable": "true",
        # a broker with tiered storage needs its object store's settings to start; nothing is copied
        # here (no records), so none answers on that port
        "rsm.config.storage.s3.bucket.name": "unused",
        "rsm.config.storage.s3.endpoint.url": "http://127.0.0.1:9",
        "rsm.config.storage.aws.access.key.id": "unused",
        "rsm.config.storage.aws.secret.access.key": "unused",
    }
    with Cluster(tmp_path, zookeeper, size=2, broker_config={1: switched, 2: switched}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
        compacted = NewTopic(
            "compacted", 1, 2, config={"remote.storage.enable": "true", "cleanup.policy": "compact"}
        )
        with pytest.raises(KafkaException) as info:
            admin.create_topics([compacted])["compacted"].result(30)
        assert (info.value.args[0].code(), info.value.args[0].str()) == (
            ErrorCode.INVALID_CONFIG,
            "Remote log storage is unsupported for the compacted topics",
        )
        tiered = NewTopic("tiered", 1, 2, config={"remote.storage.enable": "true"})
        admin.create_topics([tiered])["tiered"].result(30)
        for broker in cluster.brokers.values():
            wait_for_leaders(broker.bootstrap, "tiered", 1, 2)
        wait_for(lambda: _described(cluster, 2, "remote.storage.enable") == "true", 30, "broker 2 to see it")
        for node in (1, 2):
            refused = _alter(cluster, node, "tiered", remote_storage_enable="false")
            assert refused.error_code == ErrorCode.INVALID_CONFIG and refused.error_message.startswith(
                TURNING_OFF
            )
        done = _alter(
            cluster, 2, "tiered", remote_storage_enable="false", remote_log_delete_on_disable="true"
        )
        assert done.error_code == 0, done.error_message
        wait_for(
            lambda: _described(cluster, 1, "remote.storage.enable") == "false", 30, "broker 1 to see it off"
        )
        assert _described(cluster, 1, "remote.log.delete.on.disable") == "true"
