"""Tiered storage's broker keys (broker/remote_log_config.py): Kafka's names, defaults and validators,
the plugin properties under rsm.config. / rlmm.config., how they are described and kept static, and the
broker defaults' local retention checks (at start-up and when changed dynamically)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker import broker_configs
from broker.config import BrokerConfig, ConfigError
from broker.config_types import BOOLEAN, DOUBLE, INT, LONG, STRING
from broker.dynamic import effects, keys
from broker.dynamic.configs import DynamicBrokerConfigs
from broker.remote_log_config import KINDS, looks_secret

LONG_MAX = (1 << 63) - 1


def _load(text: str = "", tmp_path: Path | None = None, **kw: Any) -> BrokerConfig:
    if tmp_path is None:
        return BrokerConfig.load(**kw)
    f = tmp_path / "server.properties"
    f.write_text(text)
    return BrokerConfig.load(f, **kw)


def test_kafkas_defaults() -> None:
    cfg = BrokerConfig.load()
    expected = {
        "remote.log.storage.system.enable": False,
        "remote.log.manager.task.interval.ms": 30000,
        "remote.log.manager.thread.pool.size": 10,
        "remote.log.manager.copier.thread.pool.size": -1,
        "remote.log.manager.expiration.thread.pool.size": -1,
        "remote.log.reader.threads": 10,
        "remote.log.reader.max.pending.tasks": 100,
        "remote.fetch.max.wait.ms": 500,
        "remote.log.manager.copy.max.bytes.per.second": LONG_MAX,
        "remote.log.manager.fetch.max.bytes.per.second": LONG_MAX,
        "remote.log.index.file.cache.total.size.bytes": 1 << 30,
        "remote.list.offsets.request.timeout.ms": 30000,
        "remote.log.storage.manager.class.name": "",
        "remote.log.metadata.manager.class.name": (
            "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
        ),
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "remote.log.metadata.manager.listener.name": "",
        "remote.log.metadata.custom.metadata.max.bytes": 128,
        "remote.log.manager.task.retry.backoff.ms": 500,
        "remote.log.manager.task.retry.backoff.max.ms": 30000,
        "remote.log.manager.task.retry.jitter": 0.2,
        "log.local.retention.ms": -2,
        "log.local.retention.bytes": -2,
    }
    assert {k: cfg[k] for k in expected} == expected
    assert cfg.remote_log_storage_system_enable is False
    assert cfg.remote_storage_manager_configs() == {} and cfg.remote_log_metadata_manager_configs() == {}
    assert (KINDS["remote.log.storage.system.enable"], KINDS["remote.log.manager.task.interval.ms"]) == (
        BOOLEAN,
        LONG,
    )
    assert (KINDS["remote.fetch.max.wait.ms"], KINDS["remote.log.manager.task.retry.jitter"]) == (INT, DOUBLE)
    assert KINDS["remote.log.storage.manager.impl.prefix"] == STRING


def test_keys_are_used_not_ignored(tmp_path: Path) -> None:
    cfg = _load(
        "remote.log.storage.system.enable=TRUE\nremote.log.manager.task.interval.ms=1000\n"
        "log.local.retention.bytes=1024\nremote.log.manager.copier.thread.pool.size=4\n",
        tmp_path,
    )
    assert cfg.remote_log_storage_system_enable is True
    assert (cfg["remote.log.manager.task.interval.ms"], cfg["log.local.retention.bytes"]) == (1000, 1024)
    assert cfg["remote.log.manager.copier.thread.pool.size"] == 4
    assert not cfg.ignored
    env = {"MINIKAFKA_REMOTE_LOG_STORAGE_SYSTEM_ENABLE": "true", "MINIKAFKA_LOG_LOCAL_RETENTION_MS": "60000"}
    cfg = BrokerConfig.load(env=env)
    assert cfg.remote_log_storage_system_enable and cfg["log.local.retention.ms"] == 60000


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("remote.log.storage.system.enable=yes", "expected true or false"),
        ("remote.log.manager.task.interval.ms=0", "Value must be at least 1"),
        ("remote.log.manager.thread.pool.size=0", "Value must be at least 1"),
        ("remote.log.manager.copier.thread.pool.size=0", "Value can be -1 or greater than 0"),
        ("remote.log.manager.expiration.thread.pool.size=-2", "Value can be -1 or greater than 0"),
        ("remote.log.reader.threads=2147483648", "expected at most 2147483647"),
        ("remote.log.manager.copy.max.bytes.per.second=0", "Value must be at least 1"),
        ("remote.log.manager.task.retry.jitter=0.6", "Value must be between 0 and 0.5"),
        ("remote.log.storage.manager.impl.prefix=", "String must be non-empty"),
        ("remote.log.metadata.manager.listener.name= ", "String must be non-empty"),
        ("log.local.retention.ms=-3", "Value must be at least -2"),
        ("log.local.retention.bytes=lots", "expected a whole number"),
    ],
)
def test_kafkas_validators(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(line + "\n", tmp_path)
    key = line.split("=")[0]
    assert f"for {key!r}" in str(info.value) and message in str(info.value)
    assert "\n" not in str(info.value)


def test_plugin_properties_are_handed_through(tmp_path: Path) -> None:
    cfg = _load(
        "rsm.config.storage.s3.bucket.name=tiered\n"
        "rsm.config.storage.s3.endpoint.url=http://127.0.0.1:8333\n"
        "rsm.config.storage.aws.secret.access.key=s3cr3t\n"
        "rlmm.config.remote.log.metadata.topic.replication.factor=1\n",
        tmp_path,
        env={"MINIKAFKA_RSM_CONFIG_STORAGE_S3_REGION": "us-east-1", "MINIKAFKA_RSM_CONFIG_": "no key"},
        overrides={"rsm.config.storage.s3.bucket.name": "from-flags", "rsm.config.chunk.size": 4096},
    )
    assert cfg.remote_storage_manager_configs() == {
        "storage.s3.bucket.name": "from-flags",  # the command line wins over the file
        "storage.s3.endpoint.url": "http://127.0.0.1:8333",
        "storage.aws.secret.access.key": "s3cr3t",
        "storage.s3.region": "us-east-1",
        "chunk.size": "4096",
    }
    assert cfg.remote_log_metadata_manager_configs() == {"remote.log.metadata.topic.replication.factor": "1"}
    assert cfg.prefixed("rsm.config.storage.s3.") == {
        "bucket.name": "from-flags",
        "endpoint.url": "http://127.0.0.1:8333",
        "region": "us-east-1",
    }
    assert cfg.plugin_sources["rsm.config.storage.s3.region"] == "env MINIKAFKA_RSM_CONFIG_STORAGE_S3_REGION"
    assert not cfg.ignored
    described = cfg.describe()
    assert "s3cr3t" not in described and "rsm.config.storage.aws.secret.access.key" in described
    assert "http://127.0.0.1:8333" in described  # --print-config is the operator's own: only secrets hidden


def test_plugin_prefixes_follow_the_impl_prefix_keys(tmp_path: Path) -> None:
    # the prefix key may come after the properties it covers
    cfg = _load("s3.bucket=b\nremote.log.storage.manager.impl.prefix=s3.\n", tmp_path)
    assert cfg.remote_storage_manager_configs() == {"bucket": "b"}
    with pytest.raises(ConfigError, match=r"unknown configuration key 'rsm\.config\.x'"):
        _load("remote.log.storage.manager.impl.prefix=s3.\nrsm.config.x=1\n", tmp_path)
    # a mistake is still one: neither Kafka nor a plugin prefix knows it
    with pytest.raises(ConfigError, match=r"unknown configuration key 'remote\.log\.storage\.sytem\.enable'"):
        _load("remote.log.storage.sytem.enable=true\n", tmp_path)
    with pytest.raises(ConfigError, match="did you mean remote.log.reader.threads"):
        _load("remote.log.reader.thread=3\n", tmp_path)


def test_secrets_are_never_described(tmp_path: Path) -> None:
    for name in (
        "rsm.config.storage.aws.secret.access.key",
        "rsm.config.storage.aws.session.token",
        "rsm.config.storage.s3.bucket.name",  # Kafka: any key of unknown type
        "rlmm.config.remote.log.metadata.common.client.sasl.jaas.config",
    ):
        assert broker_configs.sensitive(name)
    assert broker_configs.sensitive("s3.bucket", ("s3.", "m."))
    assert not broker_configs.sensitive("remote.log.storage.system.enable")
    assert looks_secret("rsm.config.storage.aws.secret.access.key")
    assert looks_secret("rsm.config.storage.aws.session.token")
    assert not looks_secret("rsm.config.storage.s3.bucket.name")


def test_plugin_properties_are_static(tmp_path: Path) -> None:
    cfg = _load("rsm.config.storage.s3.bucket.name=b\n", tmp_path)
    dynamic = DynamicBrokerConfigs(cfg, tmp_path)
    dynamic.load(None)
    assert dynamic.value("rsm.config.storage.s3.bucket.name") == "b"
    assert dynamic.synonym_chain("rsm.config.storage.s3.bucket.name") == [
        ("rsm.config.storage.s3.bucket.name", "b", 4)
    ]
    with pytest.raises(keys.DynamicConfigError) as info:
        keys.validate({"rsm.config.storage.s3.bucket.name": "other"}, True)
    assert (
        str(info.value) == "Cannot update these configs dynamically: Set(rsm.config.storage.s3.bucket.name)"
    )
    with pytest.raises(keys.DynamicConfigError, match=r"Cannot update these configs dynamically"):
        keys.validate({"remote.log.storage.system.enable": "true"}, True)
    # Kafka's dynamic remote log keys stay dynamic
    assert keys.validate({"remote.fetch.max.wait.ms": "100"}, False) == {"remote.fetch.max.wait.ms": 100}


def _dynamic_with_checks(tmp_path: Path, **env: str) -> DynamicBrokerConfigs:
    cfg = BrokerConfig.load(env={"MINIKAFKA_" + k.upper(): v for k, v in env.items()})
    dynamic = DynamicBrokerConfigs(cfg, tmp_path)
    dynamic.load(None)
    stub = SimpleNamespace()
    effects.connect(dynamic, logs=stub, log_tasks=stub, replicas=stub, security=stub, cluster=stub)  # type: ignore[arg-type]
    return dynamic


def test_dynamic_local_retention_checked_against_retention(tmp_path: Path) -> None:
    dynamic = _dynamic_with_checks(tmp_path, log_retention_bytes="1000")

    def refusal(**props: str) -> str:
        with pytest.raises(keys.DynamicConfigError) as info:
            dynamic.check({k.replace("_", "."): v for k, v in props.items()}, True)
        return str(info.value)

    assert refusal(log_local_retention_bytes="2000") == (
        "Invalid value org.apache.kafka.common.config.ConfigException: Invalid value 2000 for configuration "
        "log.local.retention.bytes: Value must not be more than log.retention.bytes property value: 1000 "
        "for configuration Invalid dynamic configuration"
    )
    assert "Value must not be -1 as log.retention.ms value is set as 604800000." in refusal(
        log_local_retention_ms="-1"
    )
    assert "log.retention.ms property value: 3600000" in refusal(
        log_retention_ms="3600000", log_local_retention_ms="7200000"
    )
    dynamic.check({"log.local.retention.bytes": "500", "log.local.retention.ms": "3600000"}, True)
    dynamic.check({"log.retention.bytes": "-1", "log.local.retention.bytes": "5000"}, True)


def test_local_retention_defaults_follow_dynamically(tmp_path: Path) -> None:
    """log.local.retention.* are applied now: a change rebuilds every topic's config."""
    from storage.log_manager import LogManager

    cfg = BrokerConfig.load(env={"MINIKAFKA_LOG_DIRS": str(tmp_path)})
    dynamic = DynamicBrokerConfigs(cfg, tmp_path)
    dynamic.load(None)
    with LogManager(str(tmp_path / "data")) as logs:
        logs.create_topic("t", 1)
        stub = SimpleNamespace()
        effects.connect(dynamic, logs=logs, log_tasks=stub, replicas=stub, security=stub, cluster=stub)  # type: ignore[arg-type]

        async def alter() -> None:
            def change(current: dict[str, str]) -> dict[str, str]:
                return {**current, "log.local.retention.ms": "60000"}

            await dynamic.commit(await dynamic.prepare(False, change))

        asyncio.run(alter())
        assert logs.topics()["t"].config.local_retention_ms == 60000
        assert keys.DYNAMIC_KEYS["log.local.retention.ms"].mode is keys.Mode.APPLIED
