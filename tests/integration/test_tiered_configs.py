"""Tiered storage's configuration surface on a broker process, through confluent-kafka's AdminClient.

Kafka's rules and messages for remote.storage.enable and local.retention.*
on CreateTopics, IncrementalAlterConfigs and AlterConfigs (raw: the legacy API
replaces a topic's whole set), the values and sources DescribeConfigs gives
the new keys, plugin properties never shown, and a broker whose local
retention defaults do not fit refusing to start with one line. Nothing acts on
the switch yet: a broker with it on serves as usual.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from protocol.errors import ErrorCode
from tests.broker_process import REPO, BrokerProcess, free_port
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

INVALID_CONFIG = ErrorCode.INVALID_CONFIG  # 40
SYSTEM_DISABLED = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
TURNING_OFF = "It is invalid to disable remote storage without deleting remote data."
HOUR_MS = 3_600_000
SECRET = "wJalrXUtnFEMI-not-a-real-key"


def _start(tmp_path: Path, properties: str = "", **env: str) -> BrokerProcess:
    config = tmp_path / "server.properties"
    config.write_text(properties)
    return BrokerProcess(tmp_path / "data", extra=["--config", str(config)], env=env).start()


@pytest.fixture
def tiered(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with tiered storage switched on, plugin properties (an endpoint nothing answers: these
    tests copy nothing) and a static log.local.retention.ms."""
    proc = _start(
        tmp_path,
        "remote.log.storage.system.enable=true\n"
        "rsm.config.storage.s3.bucket.name=tiered\n"
        f"rsm.config.storage.s3.endpoint.url=http://127.0.0.1:{free_port()}\n"
        "rsm.config.storage.aws.access.key.id=tiered-test\n"
        f"rsm.config.storage.aws.secret.access.key={SECRET}\n"
        "rsm.config.storage.aws.session.token=token-not-to-show\n",
        MINIKAFKA_LOG_LOCAL_RETENTION_MS=str(HOUR_MS),
    )
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _create(admin: AdminClient, name: str, validate_only: bool = False, **configs: str) -> None:
    topic = NewTopic(name, 1, 1, config={k.replace("_", "."): v for k, v in configs.items()})
    admin.create_topics([topic], validate_only=validate_only)[name].result(30)


def _error(call: object, *args: object, **kw: object) -> tuple[int, str]:
    with pytest.raises(KafkaException) as info:
        call(*args, **kw)  # type: ignore[operator]
    err = info.value.args[0]
    return err.code(), err.str()


def _alter(admin: AdminClient, topic: str, **ops: str | None) -> None:
    """IncrementalAlterConfigs on TOPIC ``topic``: SET each key, DELETE those given None."""
    entries = [
        ConfigEntry(
            k.replace("_", "."),
            v or "",
            incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET,
        )
        for k, v in ops.items()
    ]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def _describe(admin: AdminClient, rtype: ConfigResource.Type, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(rtype, name)
    return admin.describe_configs([resource])[resource].result(30)  # type: ignore[no-any-return]


def _legacy_alter(broker: BrokerProcess, topic: str, **configs: str) -> tuple[int, str | None]:
    """AlterConfigs v1 (replaces the topic's whole set of overrides)."""
    body = {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": topic,
                "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()],
            }
        ],
        "validate_only": False,
    }
    with RawClient(broker.port) as c:
        (answer,) = c.request(33, 1, body).responses
    return answer.error_code, answer.error_message


def test_without_the_switch_topics_cannot_be_tiered(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    assert _error(_create, admin, "t", remote_storage_enable="true") == (INVALID_CONFIG, SYSTEM_DISABLED)
    assert _error(_create, admin, "t", validate_only=True, remote_storage_enable="true") == (
        INVALID_CONFIG,
        SYSTEM_DISABLED,
    )
    _create(admin, "t", remote_storage_enable="false", local_retention_ms="1000")  # off: accepted
    assert _error(_alter, admin, "t", remote_storage_enable="true") == (INVALID_CONFIG, SYSTEM_DISABLED)
    described = _describe(admin, ConfigResource.Type.TOPIC, "t")
    assert described["remote.storage.enable"].value == "false"
    assert (described["local.retention.ms"].value, described["local.retention.ms"].source) == (
        "1000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    switch = _describe(admin, ConfigResource.Type.BROKER, "0")["remote.log.storage.system.enable"]
    assert (switch.value, switch.source, switch.is_read_only) == (
        "false",
        ConfigSource.DEFAULT_CONFIG.value,
        True,
    )


def test_tiered_topics_follow_kafkas_rules(tiered: BrokerProcess) -> None:
    admin = _admin(tiered)
    _create(
        admin,
        "tiered",
        remote_storage_enable="true",
        retention_bytes="1048576",
        local_retention_bytes="65536",
    )
    # a broker with the switch on still serves as usual
    producer = Producer({"bootstrap.servers": tiered.bootstrap, "linger.ms": 0})
    producer.produce("tiered", b"v", key=b"k")
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": tiered.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe(["tiered"])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1.0)
        assert message is not None and message.error() is None and message.value() == b"v"
        consumer.commit(asynchronous=False)  # __consumer_offsets exists from here
    finally:
        consumer.close()

    # rule 2: compacted topics, by the topic's policy
    assert _error(_create, admin, "c", remote_storage_enable="true", cleanup_policy="compact") == (
        INVALID_CONFIG,
        "Remote log storage is unsupported for the compacted topics",
    )
    # rule 3: local.retention.bytes above retention.bytes, or -1 under a limited retention.bytes
    assert _error(
        _create,
        admin,
        "big",
        remote_storage_enable="true",
        retention_bytes="1000",
        local_retention_bytes="2000",
    ) == (
        INVALID_CONFIG,
        "Invalid value 2000 for configuration local.retention.bytes: "
        "Value must not be more than retention.bytes property value: 1000",
    )
    assert _error(_alter, admin, "tiered", local_retention_bytes="-1") == (
        INVALID_CONFIG,
        "Invalid value -1 for configuration local.retention.bytes: "
        "Value must not be -1 as retention.bytes value is set as 1048576.",
    )
    # rule 4: against retention.ms, the broker's static log.local.retention.ms included
    assert _error(_alter, admin, "tiered", retention_ms=str(HOUR_MS // 2)) == (
        INVALID_CONFIG,
        f"Invalid value {HOUR_MS} for configuration local.retention.ms: "
        f"Value must not be more than retention.ms property value: {HOUR_MS // 2}",
    )
    # rule 5: copies off needs local retention equal to retention
    assert _error(_alter, admin, "tiered", remote_log_copy_disable="true")[0] == INVALID_CONFIG
    _alter(
        admin, "tiered", remote_log_copy_disable="true", local_retention_bytes=None, local_retention_ms="-2"
    )
    _alter(admin, "tiered", remote_log_copy_disable=None)
    # internal topics are never tiered
    code, message = _error(_alter, admin, "__consumer_offsets", remote_storage_enable="true")
    assert code == INVALID_CONFIG and "__consumer_offsets" in message
    code, message = _error(_create, admin, "__remote_log_metadata", remote_storage_enable="true")
    assert code == INVALID_CONFIG and "__remote_log_metadata" in message

    # rule 6: off only with remote.log.delete.on.disable=true, however it is turned off
    code, message = _error(_alter, admin, "tiered", remote_storage_enable="false")
    assert code == INVALID_CONFIG and message.startswith(TURNING_OFF)
    assert "`remote.storage.enable=false,remote.log.delete.on.disable=true`" in message
    assert _error(_alter, admin, "tiered", remote_storage_enable=None)[0] == INVALID_CONFIG
    code, message = _legacy_alter(tiered, "tiered", retention_ms=str(HOUR_MS))  # the key left out: off
    assert code == INVALID_CONFIG and message is not None and message.startswith(TURNING_OFF)
    assert _describe(admin, ConfigResource.Type.TOPIC, "tiered")["remote.storage.enable"].value == "true"
    _alter(admin, "tiered", remote_storage_enable="false", remote_log_delete_on_disable="true")
    assert _describe(admin, ConfigResource.Type.TOPIC, "tiered")["remote.storage.enable"].value == "false"
    _alter(admin, "tiered", remote_storage_enable="true", remote_log_delete_on_disable=None)  # and back on


def test_describe_configs_shows_values_and_sources(tiered: BrokerProcess) -> None:
    admin = _admin(tiered)
    _create(admin, "tiered", remote_storage_enable="true", local_retention_bytes="1024")
    topic = _describe(admin, ConfigResource.Type.TOPIC, "tiered")
    shown = {k: (topic[k].value, topic[k].source) for k in topic if k.startswith(("remote.", "local."))}
    assert shown == {
        "remote.storage.enable": ("true", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        "local.retention.bytes": ("1024", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        "local.retention.ms": (str(HOUR_MS), ConfigSource.STATIC_BROKER_CONFIG.value),
        "remote.log.copy.disable": ("false", ConfigSource.DEFAULT_CONFIG.value),
        "remote.log.delete.on.disable": ("false", ConfigSource.DEFAULT_CONFIG.value),
    }
    # synonyms raw: confluent-kafka keys them by name, so the default below the static value is lost
    body = {
        "resources": [
            {"resource_type": 2, "resource_name": "tiered", "configuration_keys": ["local.retention.ms"]}
        ],
        "include_synonyms": True,
        "include_documentation": True,
    }
    with RawClient(tiered.port) as c:
        (entry,) = c.request(32, 4, body).results[0].configs
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("log.local.retention.ms", str(HOUR_MS), ConfigSource.STATIC_BROKER_CONFIG.value),
        ("log.local.retention.ms", "-2", ConfigSource.DEFAULT_CONFIG.value),
    ]
    assert (entry.config_type, "retention.ms" in entry.documentation) == (5, True)  # LONG

    broker = _describe(admin, ConfigResource.Type.BROKER, "0")
    assert (
        broker["remote.log.storage.system.enable"].value,
        broker["remote.log.storage.system.enable"].source,
    ) == (
        "true",
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )
    interval = broker["remote.log.manager.task.interval.ms"]
    assert (interval.value, interval.source, interval.is_read_only) == (
        "30000",
        ConfigSource.DEFAULT_CONFIG.value,
        True,
    )
    assert broker["remote.log.storage.manager.impl.prefix"].value == "rsm.config."
    wait = broker["remote.fetch.max.wait.ms"]
    assert (wait.value, wait.is_read_only) == ("500", False)  # dynamic in Kafka
    local = broker["log.local.retention.ms"]
    assert (local.value, local.source) == (str(HOUR_MS), ConfigSource.STATIC_BROKER_CONFIG.value)
    for key in (
        "rsm.config.storage.aws.secret.access.key",
        "rsm.config.storage.aws.session.token",
        "rsm.config.storage.s3.bucket.name",
    ):
        entry = broker[key]
        assert (entry.value, entry.is_sensitive, entry.source) == (
            None,
            True,
            ConfigSource.STATIC_BROKER_CONFIG.value,
        )
    assert SECRET not in tiered.log()


def test_local_retention_defaults_that_do_not_fit_stop_the_broker(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(
        "remote.log.storage.system.enable=true\nlog.retention.bytes=1000\nlog.local.retention.bytes=2000\n"
    )
    argv = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--port", str(free_port())]
    done = subprocess.run(
        [sys.executable, "-m", "broker", *argv], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "minikafka: configuration error: Invalid value 2000 for configuration log.local.retention.bytes: "
        "Value must not be more than log.retention.bytes property value: 1000"
    )
    # without the switch Kafka does not check at start-up
    config.write_text("log.retention.bytes=1000\nlog.local.retention.bytes=2000\n")
    proc = BrokerProcess(tmp_path / "data2", extra=["--config", str(config)]).start()
    assert proc.stop() == 0, proc.log()


def test_an_incomplete_object_store_config_stops_the_broker_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(
        "remote.log.storage.system.enable=true\nrsm.config.storage.s3.bucket.name=b\n"
        "rsm.config.storage.aws.access.key.id=only-the-key\n"
    )
    argv = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--port", str(free_port())]
    done = subprocess.run(
        [sys.executable, "-m", "broker", *argv], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "minikafka: configuration error: rsm.config.storage.aws.access.key.id and "
        "rsm.config.storage.aws.secret.access.key must be set together"
    )
    assert "Traceback" not in done.stderr
