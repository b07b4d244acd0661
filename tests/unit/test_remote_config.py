"""Tiered storage's topic configs: LogConfig's fields, their validators and effective values, the
predicate of whether a topic is tiered, and Kafka's six rules (storage/remote_config.py)."""

from __future__ import annotations

import pytest

from storage.config import NEVER_TIERED, REMOTE_LOG_METADATA_TOPIC, LogConfig
from storage.remote_config import (
    COMPACTED,
    COPY_DISABLED_BYTES,
    COPY_DISABLED_MS,
    SYSTEM_DISABLED,
    TURNING_OFF,
    RemoteStorageConfigError,
    check_local_retention,
    validate_broker_defaults,
    validate_topic_config,
)

DAY_MS = 86_400_000


def _config(**overrides: str) -> LogConfig:
    return LogConfig.from_topic_configs({k.replace("_", "."): v for k, v in overrides.items()})


def test_fields_have_kafkas_defaults_and_describe_as_kafka_prints_them() -> None:
    c = LogConfig()
    assert (c.remote_storage_enable, c.remote_log_copy_disable, c.remote_log_delete_on_disable) == (
        False,
        False,
        False,
    )
    assert (c.local_retention_ms, c.local_retention_bytes) == (-2, -2)
    described = c.to_topic_configs()
    assert {k: described[k] for k in described if k.startswith(("remote.", "local."))} == {
        "remote.storage.enable": "false",
        "local.retention.ms": "-2",
        "local.retention.bytes": "-2",
        "remote.log.copy.disable": "false",
        "remote.log.delete.on.disable": "false",
    }
    assert c.extra == {}


def test_fields_parse_from_topic_configs() -> None:
    c = _config(
        remote_storage_enable="TRUE",
        local_retention_ms="3600000",
        local_retention_bytes="0",
        remote_log_copy_disable="false",
        remote_log_delete_on_disable="true",
    )
    assert c.remote_storage_enable is True and c.remote_log_delete_on_disable is True
    assert (c.local_retention_ms, c.local_retention_bytes, c.remote_log_copy_disable) == (3600000, 0, False)
    assert c.extra == {}  # typed now, no longer kept as accepted-but-unused
    assert c.to_topic_configs()["remote.storage.enable"] == "true"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("local.retention.ms", "-3"),
        ("local.retention.bytes", "-3"),
        ("local.retention.ms", "soon"),
        ("remote.storage.enable", "yes"),
        ("remote.log.copy.disable", "1"),
        ("remote.log.delete.on.disable", ""),
    ],
)
def test_validators_refuse_what_kafka_refuses(key: str, value: str) -> None:
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        LogConfig.from_topic_configs({key: value})


def test_local_retention_at_least_minus_two() -> None:
    assert _config(local_retention_ms="-2", local_retention_bytes="-1").local_retention_bytes == -1


def test_broker_defaults_supply_local_retention() -> None:
    defaults = LogConfig.from_broker_configs(
        {"log.local.retention.ms": "1000", "log.local.retention.bytes": "2048", "log.retention.bytes": "4096"}
    )
    assert (defaults.local_retention_ms, defaults.local_retention_bytes) == (1000, 2048)
    topic = LogConfig.from_topic_configs({"local.retention.ms": "500"}, defaults)
    assert (topic.local_retention_ms, topic.local_retention_bytes) == (500, 2048)
    # remote.storage.enable and the two remote.log.* keys have no broker default in Kafka
    assert LogConfig.from_broker_configs({"remote.storage.enable": "true"}).remote_storage_enable is False


def test_effective_local_retention_follows_retention_at_minus_two() -> None:
    c = _config(retention_ms="7200000", retention_bytes="1000")
    assert (c.effective_local_retention_ms, c.effective_local_retention_bytes) == (7200000, 1000)
    c = _config(
        retention_ms="7200000", retention_bytes="1000", local_retention_ms="60000", local_retention_bytes="10"
    )
    assert (c.effective_local_retention_ms, c.effective_local_retention_bytes) == (60000, 10)
    c = _config(retention_ms="-1", local_retention_bytes="-1")
    assert (c.effective_local_retention_ms, c.effective_local_retention_bytes) == (-1, -1)


def test_remote_log_enabled_needs_everything() -> None:
    tiered = _config(remote_storage_enable="true")
    assert tiered.remote_log_enabled(True, "orders")
    assert not tiered.remote_log_enabled(False, "orders")  # the broker's switch
    assert not LogConfig().remote_log_enabled(True, "orders")  # the topic's own
    assert not _config(remote_storage_enable="true", cleanup_policy="compact").remote_log_enabled(
        True, "orders"
    )
    assert not _config(remote_storage_enable="true", cleanup_policy="delete,compact").remote_log_enabled(
        True, "orders"
    )
    for internal in ("__consumer_offsets", "__transaction_state", REMOTE_LOG_METADATA_TOPIC):
        assert internal in NEVER_TIERED
        assert not tiered.remote_log_enabled(True, internal)


# -- the six rules --------------------------------------------------------------------------------


def _refused(topic: str, config: LogConfig, old: dict[str, str] | None = None, system: bool = True) -> str:
    with pytest.raises(RemoteStorageConfigError) as info:
        validate_topic_config(topic, config, old or {}, system)
    return str(info.value)


def test_rule_1_needs_the_broker_switch() -> None:
    assert _refused("t", _config(remote_storage_enable="true"), system=False) == (
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    )
    assert SYSTEM_DISABLED.startswith("Tiered Storage functionality is disabled")
    validate_topic_config("t", _config(remote_storage_enable="true"), {}, True)
    validate_topic_config("t", _config(remote_storage_enable="false"), {}, False)  # off: nothing to check


def test_internal_topics_are_never_tiered() -> None:
    for topic in ("__consumer_offsets", "__transaction_state", "__remote_log_metadata"):
        message = _refused(topic, _config(remote_storage_enable="true"))
        assert topic in message and "unsupported" in message
        validate_topic_config(topic, _config(remote_storage_enable="false"), {}, True)
    # with the switch off Kafka's own message comes first
    assert (
        _refused("__consumer_offsets", _config(remote_storage_enable="true"), system=False) == SYSTEM_DISABLED
    )


@pytest.mark.parametrize("policy", ["compact", "delete,compact", "compact,delete"])
def test_rule_2_no_compacted_topics(policy: str) -> None:
    message = _refused("t", _config(remote_storage_enable="true", cleanup_policy=policy))
    assert message == COMPACTED == "Remote log storage is unsupported for the compacted topics"


def test_rule_2_compaction_from_the_broker_default() -> None:
    compacting = LogConfig.from_broker_configs({"log.cleanup.policy": "compact"})
    config = LogConfig.from_topic_configs({"remote.storage.enable": "true"}, compacting)
    assert _refused("t", config) == COMPACTED
    validate_topic_config(
        "t",
        LogConfig.from_topic_configs(
            {"remote.storage.enable": "true", "cleanup.policy": "delete"}, compacting
        ),
        {},
        True,
    )


def test_rule_3_local_retention_bytes() -> None:
    on = {"remote_storage_enable": "true", "retention_bytes": "100"}
    assert _refused("t", _config(**on, local_retention_bytes="-1")) == (
        "Invalid value -1 for configuration local.retention.bytes: "
        "Value must not be -1 as retention.bytes value is set as 100."
    )
    assert _refused("t", _config(**on, local_retention_bytes="101")) == (
        "Invalid value 101 for configuration local.retention.bytes: "
        "Value must not be more than retention.bytes property value: 100"
    )
    for fine in ("-2", "0", "100"):
        validate_topic_config("t", _config(**on, local_retention_bytes=fine), {}, True)
    # unlimited retention.bytes: any local size
    validate_topic_config("t", _config(remote_storage_enable="true", local_retention_bytes="-1"), {}, True)
    validate_topic_config(
        "t", _config(remote_storage_enable="true", local_retention_bytes=str(1 << 40)), {}, True
    )
    # without tiering Kafka does not look
    validate_topic_config("t", _config(retention_bytes="100", local_retention_bytes="101"), {}, True)


def test_rule_4_local_retention_ms() -> None:
    on = {"remote_storage_enable": "true", "retention_ms": str(DAY_MS)}
    assert _refused("t", _config(**on, local_retention_ms="-1")) == (
        "Invalid value -1 for configuration local.retention.ms: "
        f"Value must not be -1 as retention.ms value is set as {DAY_MS}."
    )
    assert _refused("t", _config(**on, local_retention_ms=str(DAY_MS + 1))) == (
        f"Invalid value {DAY_MS + 1} for configuration local.retention.ms: "
        f"Value must not be more than retention.ms property value: {DAY_MS}"
    )
    for fine in ("-2", "0", str(DAY_MS)):
        validate_topic_config("t", _config(**on, local_retention_ms=fine), {}, True)
    validate_topic_config(
        "t", _config(remote_storage_enable="true", retention_ms="-1", local_retention_ms="-1"), {}, True
    )
    # the default retention.ms (7 days) counts too
    assert "retention.ms property value: 604800000" in _refused(
        "t", _config(remote_storage_enable="true", local_retention_ms=str(8 * DAY_MS))
    )


def test_rule_3_before_rule_4() -> None:
    both = _config(
        remote_storage_enable="true",
        retention_bytes="100",
        local_retention_bytes="200",
        retention_ms="1000",
        local_retention_ms="2000",
    )
    assert "local.retention.bytes" in _refused("t", both)


def test_rule_5_copy_disabled_needs_equal_retention() -> None:
    on = {"remote_storage_enable": "true", "remote_log_copy_disable": "true"}
    assert (
        _refused("t", _config(**on, retention_bytes="100", local_retention_bytes="50")) == COPY_DISABLED_BYTES
    )
    assert _refused("t", _config(**on, retention_ms="1000", local_retention_ms="500")) == COPY_DISABLED_MS
    assert (
        "`local.retention.bytes` and `retention.bytes` must be set to the identical value"
        in COPY_DISABLED_BYTES
    )
    validate_topic_config("t", _config(**on), {}, True)
    validate_topic_config(
        "t",
        _config(
            **on,
            retention_bytes="100",
            local_retention_bytes="100",
            retention_ms="1000",
            local_retention_ms="1000",
        ),
        {},
        True,
    )
    # copy disabled on an untiered topic: nothing to check
    validate_topic_config(
        "t",
        _config(remote_log_copy_disable="true", retention_bytes="100", local_retention_bytes="50"),
        {},
        True,
    )


def test_rule_6_turning_off_needs_delete_on_disable() -> None:
    was = {"remote.storage.enable": "true"}
    assert _refused("t", _config(remote_storage_enable="false"), was) == TURNING_OFF
    assert _refused("t", LogConfig(), was) == TURNING_OFF  # the override removed: false again
    assert _refused("t", LogConfig(), {"remote.storage.enable": "TRUE"}) == TURNING_OFF
    assert "`remote.storage.enable=false,remote.log.delete.on.disable=true`" in TURNING_OFF
    validate_topic_config(
        "t", _config(remote_storage_enable="false", remote_log_delete_on_disable="true"), was, True
    )
    # read-only instead: stays enabled with copies off
    validate_topic_config(
        "t", _config(remote_storage_enable="true", remote_log_copy_disable="true"), was, True
    )
    # never tiered, or a new topic: nothing to turn off
    validate_topic_config("t", LogConfig(), {"remote.storage.enable": "false"}, True)
    validate_topic_config("t", LogConfig(), {}, False)
    # the switch off at the broker does not stop a topic from being turned off properly
    validate_topic_config("t", _config(remote_log_delete_on_disable="true"), was, False)
    assert _refused("t", LogConfig(), was, system=False) == TURNING_OFF


def test_check_local_retention_pairs() -> None:
    assert check_local_retention(-2, 10, "a", "b") is None
    assert check_local_retention(5, -1, "a", "b") is None
    assert check_local_retention(10, 10, "a", "b") is None
    assert (
        check_local_retention(11, 10, "a", "b")
        == "Invalid value 11 for configuration a: Value must not be more than b property value: 10"
    )
    assert (
        check_local_retention(-1, 10, "a", "b")
        == "Invalid value -1 for configuration a: Value must not be -1 as b value is set as 10."
    )


def test_broker_defaults_checked_only_with_the_switch() -> None:
    bad = LogConfig.from_broker_configs({"log.retention.bytes": "100", "log.local.retention.bytes": "200"})
    validate_broker_defaults(bad, False)
    with pytest.raises(RemoteStorageConfigError) as info:
        validate_broker_defaults(bad, True)
    assert str(info.value) == (
        "Invalid value 200 for configuration log.local.retention.bytes: "
        "Value must not be more than log.retention.bytes property value: 100"
    )
    hours = LogConfig.from_broker_configs({"log.retention.hours": "1", "log.local.retention.ms": "-1"})
    with pytest.raises(RemoteStorageConfigError, match="log.retention.ms value is set as 3600000"):
        validate_broker_defaults(hours, True)
    validate_broker_defaults(LogConfig(), True)
