"""Dynamic broker configs and broker loggers on a single broker process, through real clients.

confluent-kafka's AdminClient for BROKER resources (its Python API has no
BROKER_LOGGER type and refuses the empty name of the cluster default: librdkafka
maps both away), kafka-python's for BROKER_LOGGER, the bundled ``minikafka
configs`` for the cluster default, and raw requests where a client would not
send what is tested (another broker's id).
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from cryptography import x509

from tests.broker_process import REPO, BrokerProcess, free_port
from tests.support.certs import make_tls_files, write_server_keystore
from tests.wire import RawClient

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _set(admin: AdminClient, name: str, **configs: str | None) -> None:
    """IncrementalAlterConfigs on BROKER ``name``: SET each key, DELETE those given None."""
    ops = [
        ConfigEntry(
            k.replace("_", "."),
            v or "",
            incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET,
        )
        for k, v in configs.items()
    ]
    resource = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=ops)
    admin.incremental_alter_configs([resource])[resource].result(30)


def _describe(admin: AdminClient, rtype: ConfigResource.Type, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(rtype, name)
    return admin.describe_configs([resource])[resource].result(30)  # type: ignore[no-any-return]


def _refusal(admin: AdminClient, name: str, **configs: str) -> tuple[int, str]:
    with pytest.raises(KafkaException) as info:
        _set(admin, name, **configs)
    err = info.value.args[0]
    return err.code(), err.str()


def _wait(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _cli(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", "configs", "--bootstrap-server", broker.bootstrap, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def quick_retention(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker checking retention every half second."""
    proc = BrokerProcess(tmp_path / "data", env={"MINIKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS": "500"}).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def test_a_retention_default_set_live_deletes_old_segments_and_survives_a_restart(
    quick_retention: BrokerProcess,
) -> None:
    """log.retention.ms set on the broker applies at once to the topics without their own
    retention.ms: the next retention check deletes their segments older than it; a topic with its
    own override keeps its records. After a restart the value is still there (DYNAMIC_BROKER_CONFIG)."""
    broker = quick_retention
    admin = _admin(broker)
    small = {"segment.bytes": "1024"}
    futures = admin.create_topics(
        [
            NewTopic("follows", 1, 1, config=small),
            NewTopic("own", 1, 1, config={**small, "retention.ms": str(7 * DAY_MS)}),
        ]
    )
    for f in futures.values():
        f.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    two_days_ago = int(time.time() * 1000) - 2 * DAY_MS
    for topic in ("follows", "own"):
        for i in range(40):
            producer.produce(topic, b"x" * 200, key=str(i).encode(), timestamp=two_days_ago)
            producer.flush(30)  # one batch each: many segments of 1 KiB
    consumer_conf = {"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"}
    from confluent_kafka import Consumer

    watcher = Consumer(consumer_conf)
    try:

        def log_start(topic: str) -> int:
            return watcher.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]

        time.sleep(1.5)  # two retention checks: nothing is older than the default week
        assert (log_start("follows"), log_start("own")) == (0, 0)

        _set(admin, "0", log_retention_ms=str(HOUR_MS))
        _wait(lambda: log_start("follows") > 0, "retention to follow the new broker default")
        assert log_start("own") == 0  # its own retention.ms wins over the broker's

        topic = _describe(admin, ConfigResource.Type.TOPIC, "follows")["retention.ms"]
        assert (topic.value, topic.source) == (
            str(HOUR_MS),
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        )
    finally:
        watcher.close()

    assert broker.stop() == 0, broker.log()
    broker.start()
    entry = _describe(_admin(broker), ConfigResource.Type.BROKER, "0")["log.retention.ms"]
    assert (entry.value, entry.source, entry.is_read_only) == (
        str(HOUR_MS),
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        False,
    )


def test_refused_changes_answer_kafkas_errors(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    invalid_request = KafkaError.INVALID_REQUEST
    assert _refusal(admin, "0", log_retention_hours="1") == (
        invalid_request,
        "Cannot update these configs dynamically: Set(log.retention.hours)",
    )
    assert _refusal(admin, "0", **{"ssl.keystore.location": "/x"}) == (  # type: ignore[arg-type]
        invalid_request,
        "These security configs can be dynamically updated only per-listener using the listener prefix:"
        " Set(ssl.keystore.location)",
    )
    assert _refusal(admin, "0", log_retention_ms="soon") == (
        invalid_request,
        "Invalid value soon for configuration log.retention.ms: Not a number of type LONG",
    )
    assert _refusal(admin, "0", **{"leader.replication.throttled.rate": "-1"}) == (  # type: ignore[arg-type]
        invalid_request,
        "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0",
    )
    code, message = _refusal(admin, "0", listeners="PLAINTEXT://127.0.0.1:1")
    assert code == invalid_request and "Set(listeners)" in message
    code, message = _refusal(admin, "0", **{"log.cleaner.threads": "3"})  # type: ignore[arg-type]
    assert code == invalid_request and "more than double the current value 1" in message
    with RawClient(broker.port) as c:  # clients send a broker's resource to that broker; this one goes astray

        def alter(name: str) -> tuple[int, str]:
            body = {
                "resources": [
                    {
                        "resource_type": 4,
                        "resource_name": name,
                        "configs": [{"name": "log.retention.ms", "config_operation": 0, "value": "1"}],
                    }
                ],
                "validate_only": False,
            }
            r = c.request(44, 0, body).responses[0]
            return r.error_code, r.error_message

        assert alter("5") == (42, "Unexpected broker id, expected 0, but received 5")
        assert alter("five") == (42, "Node id must be an integer, but it is: five")
        described = c.request(
            32,
            1,
            {
                "resources": [{"resource_type": 4, "resource_name": "5", "configuration_keys": None}],
                "include_synonyms": False,
            },
        ).results[0]
        assert (described.error_code, described.error_message) == (
            42,
            "Unexpected broker id, expected 0 or empty string, but received 5",
        )
    entry = _describe(admin, ConfigResource.Type.BROKER, "0")["log.retention.ms"]
    assert entry.source == ConfigSource.DEFAULT_CONFIG.value  # nothing was stored
    auto = _describe(admin, ConfigResource.Type.BROKER, "0")["auto.create.topics.enable"]
    assert (auto.value, auto.is_read_only) == ("true", True)  # Kafka's spelling of booleans


def test_cluster_default_and_per_broker_precedence_through_the_cli(broker: BrokerProcess) -> None:
    """kafka-configs' options: the default applies where the broker has no value of its own, the
    per-broker value wins, deleting it brings the default back; refusals are one error line."""
    done = _cli(
        broker,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "log.retention.ms=7200000,log.cleanup.policy=[delete,compact]",
    )
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "Completed updating default config for brokers in the cluster.",
    )
    done = _cli(
        broker,
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--alter",
        "--add-config",
        "log.retention.ms=3600000",
    )
    assert (done.returncode, done.stdout.strip()) == (0, "Completed updating config for broker 0.")

    shown = _cli(broker, "--entity-type", "brokers", "--entity-name", "0", "--describe")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "Dynamic configs for broker 0 are:",
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000,"
        " DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.hours=168}",
    ]
    shown = _cli(broker, "--entity-type", "brokers", "--entity-default", "--describe")
    assert shown.stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  log.cleanup.policy=delete,compact sensitive=false"
        " synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=delete,compact}",
        "  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}",
    ]
    admin = _admin(broker)
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
    topic = _describe(admin, ConfigResource.Type.TOPIC, "t")
    assert (topic["retention.ms"].value, topic["cleanup.policy"].value) == ("3600000", "delete,compact")
    assert topic["cleanup.policy"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value

    done = _cli(
        broker,
        "--entity-type",
        "brokers",
        "--entity-name",
        "0",
        "--alter",
        "--delete-config",
        "log.retention.ms",
    )
    assert done.returncode == 0, done.stderr
    entry = _describe(admin, ConfigResource.Type.BROKER, "0")["log.retention.ms"]
    assert (entry.value, entry.source) == (
        "7200000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
    )
    assert _describe(admin, ConfigResource.Type.TOPIC, "t")["retention.ms"].value == "7200000"

    refused = _cli(
        broker,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "log.retention.hours=1",
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "minikafka: error: the cluster default of broker configs: INVALID_REQUEST"
        " (Cannot update these configs dynamically: Set(log.retention.hours))"
    ]
    missing = _cli(
        broker, "--entity-type", "brokers", "--entity-name", "0", "--alter", "--delete-config", "nothing.here"
    )
    assert missing.stderr.strip() == "minikafka: error: Invalid config(s): nothing.here"
    not_an_id = _cli(broker, "--entity-type", "brokers", "--entity-name", "one", "--describe")
    assert not_an_id.stderr.strip() == (
        "minikafka: error: The entity name for brokers must be a valid integer broker id, found: one"
    )


def test_log_level_changes_live_with_kafka_python(broker: BrokerProcess) -> None:
    """BROKER_LOGGER: DEBUG on minikafka.produce makes a refused produce show in the broker's log;
    DELETE returns the logger to its parent's level and the next one is silent again."""
    from kafka.admin import ConfigResource as KPResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    confluent = _admin(broker)
    confluent.create_topics([NewTopic("tiny", 1, 1, config={"max.message.bytes": "100"})])["tiny"].result(30)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "enable.idempotence": False, "retries": 0}
    )
    refusals: list[KafkaError] = []

    def too_large() -> None:
        producer.produce("tiny", b"y" * 500, on_delivery=lambda err, _msg: refusals.append(err))
        producer.flush(30)

    def level(name: str) -> str:
        described = admin.describe_configs(
            [KPResource(ConfigResourceType.BROKER_LOGGER, "0")], config_filter="all"
        )
        return described["broker_logger"]["0"][name]["value"]  # type: ignore[no-any-return]

    try:
        assert (level("root"), level("minikafka.produce")) == ("INFO", "INFO")
        too_large()
        assert "rejected" not in broker.log()
        result = admin.alter_configs(
            [KPResource(ConfigResourceType.BROKER_LOGGER, "0", configs={"minikafka.produce": "DEBUG"})]
        )
        assert result == {"broker_logger": {"0": "OK"}}
        assert level("minikafka.produce") == "DEBUG"
        too_large()
        _wait(lambda: "DEBUG minikafka.produce: produce tiny-0 rejected" in broker.log(), "the DEBUG line")
        assert "Updated the log level of minikafka.produce to DEBUG" in broker.log()
        result = admin.alter_configs(
            [
                KPResource(
                    ConfigResourceType.BROKER_LOGGER, "0", configs={"minikafka.produce": ("DELETE", None)}
                )
            ]
        )
        assert result == {"broker_logger": {"0": "OK"}}
        assert level("minikafka.produce") == "INFO"
        lines = broker.log().count("rejected")
        too_large()
        time.sleep(0.5)
        assert broker.log().count("rejected") == lines
        assert [e.code() for e in refusals] == [KafkaError.MSG_SIZE_TOO_LARGE] * 3
        bad = admin.alter_configs(
            [KPResource(ConfigResourceType.BROKER_LOGGER, "0", configs={"minikafka.produce": "LOUD"})]
        )
        assert "InvalidConfigurationError" in str(
            bad
        ) and "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN" in str(bad)
        bad = admin.alter_configs(
            [KPResource(ConfigResourceType.BROKER_LOGGER, "0", configs={"root": ("DELETE", None)})]
        )
        assert "Removing the log level of the root logger is not allowed" in str(bad)
    finally:
        admin.close()
    assert broker.stop() == 0
    broker.start()
    with RawClient(broker.port) as c:  # log levels are not persisted: back to the command line's
        body = {
            "resources": [
                {
                    "resource_type": 8,
                    "resource_name": "0",
                    "configuration_keys": ["minikafka.produce", "nope"],
                }
            ],
            "include_synonyms": False,
        }
        (entry,) = c.request(32, 1, body).results[0].configs
        assert (entry.name, entry.value, entry.config_source) == ("minikafka.produce", "INFO", 6)


def test_connection_limits_change_live(broker: BrokerProcess) -> None:
    admin = _admin(broker)
    _set(admin, "0", **{"max.connections.per.ip": "2"})  # type: ignore[arg-type]
    first, second = socket.create_connection(("127.0.0.1", broker.port)), None
    try:
        time.sleep(0.3)  # the admin client holds one connection: the limit is reached
        second = socket.create_connection(("127.0.0.1", broker.port))
        second.settimeout(5)
        assert second.recv(1) == b""  # closed at once
        _set(admin, "0", **{"max.connections.per.ip.overrides": "127.0.0.1:10"})  # type: ignore[arg-type]
        second.close()
        second = socket.create_connection(("127.0.0.1", broker.port))
        second.settimeout(0.5)
        with pytest.raises(TimeoutError):
            second.recv(1)  # admitted: the override wins
    finally:
        first.close()
        if second is not None:
            second.close()
    assert "max.connections.per.ip (2) reached for 127.0.0.1" in broker.log()


def _peer_serial(port: int, ca: Path) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_listeners_keystore_changes_for_new_connections(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path / "tls")
    ssl_port = free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:{ssl_port}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={tls.keystore}\n"
    )
    broker = BrokerProcess(tmp_path / "data", extra=["--config", str(config)]).start()
    try:
        _wait(lambda: _can_connect(ssl_port), "the SSL listener")
        before = _peer_serial(ssl_port, tls.ca)
        renewed = write_server_keystore(tls, common_name="broker", path=tmp_path / "renewed.pem")
        admin = _admin(broker)
        key = "listener.name.ssl.ssl.keystore.location"
        code, message = _refusal(admin, "0", **{key: str(tmp_path / "missing.pem")})
        assert code == KafkaError.INVALID_REQUEST
        assert message.startswith(
            "Invalid value org.apache.kafka.common.config.ConfigException: Validation of"
        )
        assert "for configuration Invalid dynamic configuration" in message
        assert _peer_serial(ssl_port, tls.ca) == before
        other = write_server_keystore(tls, common_name="somebody-else", path=tmp_path / "other.pem")
        code, message = _refusal(admin, "0", **{key: str(other)})
        assert code == KafkaError.INVALID_REQUEST and "subject" in message.lower()

        _set(admin, "0", **{key: str(renewed)})  # type: ignore[arg-type]
        after = _peer_serial(ssl_port, tls.ca)
        assert after != before
        entry = _describe(admin, ConfigResource.Type.BROKER, "0")[key]
        assert (entry.value, entry.source) == (
            str(renewed),
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        )
        assert broker.stop() == 0, broker.log()
        broker.start()
        _wait(lambda: _can_connect(ssl_port), "the SSL listener after the restart")
        assert _peer_serial(ssl_port, tls.ca) == after  # the stored keystore is used from the start
        _set(_admin(broker), "0", **{key: None})
        assert _peer_serial(ssl_port, tls.ca) == before  # back to the static one
    finally:
        assert broker.stop() == 0, broker.log()


def _can_connect(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_authorization_on_the_cluster_resource(tmp_path: Path) -> None:
    """ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster, in Kafka's order: a broker resource's own
    checks come before authorization (ConfigAdminManager preprocesses it), a broker logger's after."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    config = tmp_path / "server.properties"
    config.write_text(
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\nallow.everyone.if.no.acl.found=true\n"
    )
    broker = BrokerProcess(tmp_path / "data", extra=["--config", str(config)]).start()
    try:
        admin = _admin(broker)
        acls = [
            AclBinding(
                ResourceType.BROKER,
                "kafka-cluster",
                ResourcePatternType.LITERAL,
                "User:ANONYMOUS",
                "*",
                operation,
                permission,
            )
            for operation, permission in (
                (AclOperation.ALTER_CONFIGS, AclPermissionType.DENY),
                (AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW),
            )
        ]
        for f in admin.create_acls(acls).values():
            f.result(30)
        assert _describe(admin, ConfigResource.Type.BROKER, "0")["log.retention.ms"].value == "604800000"
        assert _refusal(admin, "0", log_retention_ms="1000")[0] == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        assert _refusal(admin, "0", log_retention_hours="1")[0] == KafkaError.INVALID_REQUEST
        with RawClient(broker.port) as c:
            body = {
                "resources": [
                    {
                        "resource_type": 8,
                        "resource_name": "0",
                        "configs": [{"name": "root", "config_operation": 0, "value": "DEBUG"}],
                    }
                ],
                "validate_only": False,
            }
            r = c.request(44, 0, body).responses[0]
            assert (r.error_code, r.error_message) == (31, "Cluster authorization failed.")
            body["resources"][0].update(
                resource_type=4, configs=[{"name": "log.retention.ms", "config_operation": 0, "value": "1"}]
            )
            r = c.request(44, 0, body).responses[0]
            assert (r.error_code, r.error_message) == (31, None)  # as Kafka: no message
    finally:
        assert broker.stop() == 0, broker.log()
