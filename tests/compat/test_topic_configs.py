"""Topic configs through real admin clients: create with overrides, describe, alter, incremental alter."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


def describe(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([res])[res].result(30)


def alter(admin: AdminClient, res: ConfigResource) -> None:
    """Non-incremental AlterConfigs (deprecated in confluent-kafka, still what many tools send)."""
    with pytest.warns(DeprecationWarning, match="alter_configs has been deprecated"):
        futures = admin.alter_configs([res])
    futures[res].result(30)


def test_confluent_admin_configs(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("cfg", 2, 1, config={"retention.ms": "3600000"})])["cfg"].result(30)
    entries = describe(admin, "cfg")
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["segment.bytes"].value == str(1 << 30)
    assert entries["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"cleanup.policy": "compact"})
    alter(admin, res)
    entries = describe(admin, "cfg")
    assert entries["cleanup.policy"].value == "compact"
    assert entries["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value  # replaced, not merged

    res = ConfigResource(
        ConfigResource.Type.TOPIC,
        "cfg",
        incremental_configs=[
            ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    admin.incremental_alter_configs([res])[res].result(30)
    entries = describe(admin, "cfg")
    assert entries["segment.ms"].value == "60000"
    assert entries["cleanup.policy"].value == "compact,delete"

    bad = ConfigResource(ConfigResource.Type.TOPIC, "cfg", set_config={"segment.bytes": "banana"})
    with pytest.raises(Exception, match="segment.bytes"):
        alter(admin, bad)
    missing = ConfigResource(ConfigResource.Type.TOPIC, "nope", set_config={"segment.ms": "1"})
    with pytest.raises(Exception, match="(?i)unknown"):
        alter(admin, missing)

    broker_res = ConfigResource(ConfigResource.Type.BROKER, "0")
    broker_entries = admin.describe_configs([broker_res])[broker_res].result(30)
    assert broker_entries["num.partitions"].value == "1" and broker_entries["num.partitions"].is_read_only


def test_configs_survive_restart_and_kafka_python_admin(broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource as KPResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KPNewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([KPNewTopic("kp-cfg", 1, 1, topic_configs={"max.message.bytes": "2000"})])
        admin.alter_configs(
            [KPResource(ConfigResourceType.TOPIC, "kp-cfg", configs={"max.message.bytes": "3000"})]
        )
    finally:
        admin.close()
    assert broker.stop() == 0
    broker.start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = admin.describe_configs([KPResource(ConfigResourceType.TOPIC, "kp-cfg")])
    finally:
        admin.close()
    text = repr(result)
    assert "max.message.bytes" in text and "3000" in text


def test_a_list_config_is_described_as_it_was_set(broker: BrokerProcess) -> None:
    """Kafka keeps a list's order: tools that compare config strings (GitOps, Terraform) see no change."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    configs = {"cleanup.policy": "delete,compact"}
    admin.create_topics([NewTopic("both", 1, 1, config=configs)])["both"].result(30)
    assert describe(admin, "both")["cleanup.policy"].value == "delete,compact"
