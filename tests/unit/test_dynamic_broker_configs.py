"""Dynamic broker configs without a broker process: Kafka's checks, precedence, storage, loggers."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker import broker_configs
from broker.config import BrokerConfig
from broker.dynamic import keys, loggers
from broker.dynamic.configs import DynamicBrokerConfigs, PasswordStorageError, merge
from broker.dynamic.passwords import PasswordEncoder, PasswordError
from protocol.errors import ErrorCode, KafkaError
from storage.config import LogConfig
from storage.log_manager import LogManager


def refusal(props: dict[str, str], per_broker: bool = True) -> str:
    with pytest.raises(keys.DynamicConfigError) as info:
        keys.validate(props, per_broker)
    return str(info.value)


def test_kafkas_checks_in_kafkas_order() -> None:
    assert refusal({"log.retention.hours": "1", "log.retention.ms": "x"}) == (
        "Cannot update these configs dynamically: Set(log.retention.hours)"
    )
    assert refusal(
        {"log.dirs": "/a", "port": "1", "num.partitions": "2", "broker.id": "3", "log.roll.hours": "1"}
    ) == (
        "Cannot update these configs dynamically: HashSet(broker.id, log.dirs, log.roll.hours, num.partitions, port)"
    )
    assert refusal({"ssl.truststore.location": "/t"}) == (
        "These security configs can be dynamically updated only per-listener using the listener prefix:"
        " Set(ssl.truststore.location)"
    )
    assert refusal({"log.segment.bytes": "10"}) == (
        "Invalid value 10 for configuration log.segment.bytes: Value must be at least 14"
    )
    assert refusal({"log.cleaner.min.cleanable.ratio": "1.5"}) == (
        "Invalid value 1.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"
    )
    assert refusal({"unclean.leader.election.enable": "yes"}) == (
        "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"
    )
    assert refusal({"max.connections": "99999999999"}) == (
        "Invalid value 99999999999 for configuration max.connections: Not a number of type INT"
    )
    assert refusal({"listener.name.ssl.ssl.keystore.location": "/k"}, per_broker=False) == (
        "Cannot update these configs at default cluster level, broker id must be specified:"
        " Set(listener.name.ssl.ssl.keystore.location)"
    )
    assert (
        refusal({"log.retention.msx": "1"})
        == "Unknown broker configs: Set(log.retention.msx); did you mean log.retention.ms?"
    )
    assert refusal({"sasl.enabled.mechanisms": "PLAIN"}).endswith(
        "without a restart: Set(sasl.enabled.mechanisms)"
    )
    assert refusal({"listener.name.sasl_ssl.plain.sasl.jaas.config": "x"}).endswith(
        "Set(listener.name.sasl_ssl.plain.sasl.jaas.config)"
    )
    parsed = keys.validate(
        {
            "log.retention.ms": " 5000 ",
            "log.cleanup.policy": "compact,delete",
            "listener.name.ssl.ssl.keystore.location": "/k",
            "listener.name.external.max.connections": "10",
            "num.io.threads": "4",
        },
        True,
    )
    assert parsed["log.retention.ms"] == 5000 and parsed["log.cleanup.policy"] == ["compact", "delete"]
    keys.validate({"listener.name.external.max.connections": "10", "log.retention.ms": "1"}, False)


def test_kafkas_synonyms_and_precedence() -> None:
    assert keys.synonyms("log.retention.minutes") == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert keys.synonyms("listener.name.ssl.ssl.keystore.location") == [
        "listener.name.ssl.ssl.keystore.location",
        "ssl.keystore.location",
    ]
    assert keys.synonyms("listener.name.ssl.ssl.keystore.location", listener_override=False) == [
        "listener.name.ssl.ssl.keystore.location"
    ]
    static = {"log.retention.hours": "1", "log.segment.bytes": "2048"}
    merged = merge(
        static, {"log.retention.ms": "5000"}, {"log.segment.bytes": "4096", "log.retention.ms": "7000"}
    )
    assert merged == {"log.retention.ms": "5000", "log.segment.bytes": "4096"}  # the hours are hidden
    assert LogConfig.from_broker_configs(merge(static, {}, {})).retention_ms == 3_600_000


def test_effective_values_sources_and_the_local_file(tmp_path: Path) -> None:
    config = BrokerConfig.load(
        env={"MINIKAFKA_LOG_RETENTION_HOURS": "1", "MINIKAFKA_LOG_DIRS": str(tmp_path)}
    )
    dynamic = DynamicBrokerConfigs(config, tmp_path)
    dynamic.load(None)
    changes: list[frozenset[str]] = []
    dynamic.on_change.append(changes.append)
    assert dynamic.leader_replication_throttled_rate == keys.INT64_MAX
    assert (
        dynamic.value("log.retention.hours") == "1" and dynamic.value("auto.create.topics.enable") == "true"
    )

    async def alter(per_broker: bool, **props: str | None) -> None:
        def change(current: dict[str, str]) -> dict[str, str]:
            for k, v in props.items():
                key = k.replace("_", ".")
                if v is None:
                    current.pop(key, None)
                else:
                    current[key] = v
            return current

        await dynamic.commit(await dynamic.prepare(per_broker, change))

    asyncio.run(alter(False, log_retention_ms="7000", leader_replication_throttled_rate="100"))
    asyncio.run(alter(True, log_retention_ms="5000"))
    assert changes == [
        frozenset({"log.retention.ms", "log.retention.hours", "leader.replication.throttled.rate"}),
        frozenset({"log.retention.ms"}),
    ]
    assert dynamic.value("log.retention.ms") == "5000" and dynamic.value("log.retention.hours") is not None
    assert dynamic.leader_replication_throttled_rate == 100
    assert dynamic.synonym_chain("log.retention.ms") == [
        ("log.retention.ms", "5000", 2),
        ("log.retention.ms", "7000", 3),
        ("log.retention.hours", "1", 4),
        ("log.retention.hours", "168", 5),
    ]

    again = DynamicBrokerConfigs(config, tmp_path)  # a restart reads the file
    again.load(None)
    assert (again.per_broker, again.cluster_default) == (
        {"log.retention.ms": "5000"},
        {"log.retention.ms": "7000", "leader.replication.throttled.rate": "100"},
    )
    asyncio.run(alter(True, log_retention_ms=None))
    assert dynamic.value("log.retention.ms") == "7000"

    with pytest.raises(keys.DynamicConfigError):  # a check refuses: nothing is stored
        dynamic.checks.append(lambda effective, changed: (_ for _ in ()).throw(keys.invalid_dynamic("no")))
        asyncio.run(alter(True, log_retention_ms="1"))
    assert dynamic.value("log.retention.ms") == "7000"


def test_entries_kafka_would_ignore_are_dropped_when_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "__minikafka_broker_configs.json").write_text(
        '{"version": 1, "brokers": {"0": {"log.retention.ms": "soon", "log.retention.bytes": "10",'
        ' "log.dirs": "/x"}, "<default>": {"listener.name.ssl.ssl.keystore.location": "/k"}}}'
    )
    dynamic = DynamicBrokerConfigs(BrokerConfig.load(env={"MINIKAFKA_LOG_DIRS": str(tmp_path)}), tmp_path)
    with caplog.at_level(logging.ERROR, "minikafka.config"):
        dynamic.load(None)
    assert (dynamic.per_broker, dynamic.cluster_default) == ({"log.retention.bytes": "10"}, {})
    assert len(caplog.records) == 3


def test_passwords_are_kept_as_kafkas_brokers_keep_them() -> None:
    # Made with javax.crypto: PBKDF2WithHmacSHA512 (secret "encoder-secret", this salt, 4096 iterations,
    # 128 bits), AES/CBC/PKCS5Padding, the map Kafka's EncryptingPasswordEncoder writes.
    from_java = (
        "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,salt:"
        + __import__("base64").b64encode(bytes(range(256))).decode()
        + ",iterations:4096,encryptedPassword:EhEkqz6Ond5Nxt4gSWphTSDQmzMtoVE6RGuX4zzlWRw=,passwordLength:17,"
        "initializationVector:nsHCuyAp3rwysXe7K16H1A=="
    )
    encoder = PasswordEncoder("encoder-secret")
    assert encoder.decode(from_java) == "keystore-pässword"
    for cipher in ("AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"):
        written = PasswordEncoder("s", cipher=cipher).encode("pw")
        assert written.startswith("keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:" + cipher)
        assert (
            PasswordEncoder("other", old_secret="s").decode(written) == "pw"
        )  # the old secret still opens it
        with pytest.raises(PasswordError):
            PasswordEncoder("other").decode(written)
    config = SimpleNamespace(node_id=1)
    dynamic = DynamicBrokerConfigs.__new__(DynamicBrokerConfigs)
    dynamic.node_id, dynamic._encoder = config.node_id, None
    with pytest.raises(PasswordStorageError, match="Password encoder secret not configured"):
        dynamic._persistent({"listener.name.ssl.ssl.key.password": "x"})
    assert dynamic._persistent({"log.retention.ms": "1"}) == {"log.retention.ms": "1"}


def _op(name: str, operation: int, value: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, config_operation=operation, value=value)


def test_incremental_operations_on_a_level() -> None:
    change = broker_configs.incremental_change(
        [
            _op("log.retention.ms", 0, "5"),
            _op("log.cleanup.policy", 2, "compact"),
            _op("log.segment.bytes", 1),
        ]
    )
    assert change({"log.segment.bytes": "2048"}) == {
        "log.retention.ms": "5",
        "log.cleanup.policy": "delete,compact",
    }
    assert broker_configs.incremental_change([_op("log.cleanup.policy", 3, "delete")])(
        {"log.cleanup.policy": "delete,compact"}
    ) == {"log.cleanup.policy": "compact"}
    with pytest.raises(KafkaError) as info:
        broker_configs.incremental_change([_op("log.retention.ms", 2, "1")])({})
    assert (info.value.code, str(info.value)) == (
        ErrorCode.INVALID_CONFIG,
        "Config value append is not allowed for config key: log.retention.ms",
    )
    with pytest.raises(KafkaError, match="Unknown config name: nope"):
        broker_configs.incremental_change([_op("nope", 2, "1")])({})
    with pytest.raises(KafkaError, match="Unknown operations type 7"):
        broker_configs.incremental_change([_op("x", 7, "1")])({})


def test_log_levels_as_kafkas_runtime_logger_manager() -> None:
    name = "minikafka.test_dynamic_levels"
    logger = logging.getLogger(name)
    try:
        assert loggers.loggers()[name] == loggers.level_name(logging.getLogger().getEffectiveLevel())
        loggers.check([_op(name, 0, "TRACE")])
        loggers.apply([_op(name, 0, "TRACE")])
        assert logger.level == loggers.TRACE and loggers.loggers()[name] == "TRACE"
        loggers.apply([_op(name, 1)])
        assert logger.level == logging.NOTSET
        for ops, code, message in (
            (
                [_op("no.such.logger", 0, "INFO")],
                ErrorCode.INVALID_CONFIG,
                "Logger no.such.logger does not exist!",
            ),
            (
                [_op(name, 0, "info")],
                ErrorCode.INVALID_CONFIG,
                f"Cannot set the log level of {name} to info as it is not a supported log level. Valid log levels"
                " are DEBUG, ERROR, FATAL, INFO, TRACE, WARN",
            ),
            (
                [_op("root", 1)],
                ErrorCode.INVALID_REQUEST,
                "Removing the log level of the root logger is not allowed",
            ),
            (
                [_op(name, 2, "x")],
                ErrorCode.INVALID_REQUEST,
                "APPEND operation is not allowed for the BROKER_LOGGER resource",
            ),
        ):
            with pytest.raises(KafkaError) as info:
                loggers.check([_op(name, 0, "DEBUG"), *ops])
            assert (info.value.code, str(info.value)) == (code, message)
        assert logger.level == logging.NOTSET  # nothing applied by a refused request
        with pytest.raises(KafkaError, match="Unexpected node id. Expected 1, but received 2"):
            loggers.check_node("2", 1)
    finally:
        logger.setLevel(logging.NOTSET)


def test_topics_without_an_override_follow_new_defaults(tmp_path: Path) -> None:
    with LogManager(str(tmp_path), LogConfig()) as logs:
        logs.create_topic("follows", 1)
        logs.create_topic("own", 1, {"retention.ms": "1000"})
        logs.set_default_config(
            LogConfig.from_broker_configs({"log.retention.ms": "5000", "log.segment.bytes": "4096"})
        )
        follows, own = logs.get_log("follows", 0), logs.get_log("own", 0)
        assert follows is not None and own is not None
        assert (follows.config.retention_ms, follows.config.segment_bytes) == (5000, 4096)
        assert (own.config.retention_ms, own.config.segment_bytes) == (1000, 4096)
        assert logs.topics()["follows"].config.retention_ms == 5000


def test_cleaner_threads_change_while_running(tmp_path: Path) -> None:
    from broker.group_commit import GroupCommit
    from broker.log_tasks import LogTasks
    from broker.replica import ReplicaManager

    async def run() -> None:
        config = BrokerConfig.load(env={"MINIKAFKA_LOG_DIRS": str(tmp_path)})
        with LogManager(str(tmp_path)) as logs:
            tasks = LogTasks(config, logs, ReplicaManager(logs, 0, 1000), GroupCommit())
            tasks.start()
            try:
                assert set(tasks._cleaner_loops) == {0}
                tasks.reconfigure_cleaner(2, 10, 1 << 20)
                assert set(tasks._cleaner_loops) == {0, 1}
                assert logs.cleaner.map_capacity == (1 << 20) // 2 // 128  # the buffer shared by the threads
                tasks.reconfigure_cleaner(1, 10, 1 << 20)
                await asyncio.sleep(0.2)  # the surplus loop wakes and ends
                assert set(tasks._cleaner_loops) == {0}
            finally:
                await tasks.stop()

    asyncio.run(run())
