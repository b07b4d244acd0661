"""Kafka's rules on how a topic's tiered-storage configs combine (KIP-405).

Facts from Kafka's LogConfig (validateTopicLogConfigValues and its helpers,
validateBrokerLogConfigValues); the messages are Kafka's, word for word, so
that admin tools and scripts see what they would see against Kafka. Every
failure is a `RemoteStorageConfigError` (a ValueError); the admin APIs answer
it with INVALID_CONFIG (40), the code Kafka gives both its ConfigException and
its InvalidConfigurationException.

`validate_topic_config` checks a topic's new configuration (broker defaults
with the topic's overrides on top, a `LogConfig`) in Kafka's order. With
``remote.storage.enable=true``:

1. the broker's ``remote.log.storage.system.enable`` must be on;
   then (minikafka's own rule, Kafka silently never tiers them) the topic must
   not be one of `NEVER_TIERED` (``__consumer_offsets``,
   ``__transaction_state``, ``__remote_log_metadata`` ...);
2. ``cleanup.policy`` must not include ``compact``;
3. with ``retention.bytes`` > -1, ``local.retention.bytes`` is -2 or in
   [0, ``retention.bytes``];
4. with ``retention.ms`` != -1, ``local.retention.ms`` is -2 or in
   [0, ``retention.ms``];
5. with ``remote.log.copy.disable=true``, each ``local.retention.*`` is -2 or
   equal to its ``retention.*``.

With ``remote.storage.enable=false``:

6. a topic whose overrides had ``remote.storage.enable=true`` needs
   ``remote.log.delete.on.disable=true`` (tiered data is deleted), else refused.

minikafka is coordinated by ZooKeeper but behaves here as Kafka's KRaft mode
does: Kafka in ZooKeeper mode refuses ``remote.log.copy.disable`` and
``remote.log.delete.on.disable`` outright (validateNoInvalidRemoteStorageConfigsInZK),
so a tiered topic could never be made untiered; minikafka accepts both and
applies rule 6.

`check_local_retention` is rules 3 and 4 on any pair of keys: the broker
defaults use it at start-up (`validate_broker_defaults`) and when they change
dynamically (broker/dynamic/effects.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from storage.config import NEVER_TIERED, USE_RETENTION, LogConfig


class RemoteStorageConfigError(ValueError):
    """A combination of tiered-storage configs that Kafka refuses (INVALID_CONFIG)."""


SYSTEM_DISABLED = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
COMPACTED = "Remote log storage is unsupported for the compacted topics"
TURNING_OFF = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data "
    "and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to "
    "disable remote storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
)
COPY_DISABLED_BYTES = (
    "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and `retention.bytes` must be set "
    "to the identical value because there will be no more logs copied to the remote storage."
)
COPY_DISABLED_MS = (
    "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set to "
    "the identical value because there will be no more logs copied to the remote storage."
)


def never_tiered_message(topic: str) -> str:
    """minikafka's refusal of ``remote.storage.enable=true`` on a topic that is never tiered."""
    return f"Topic {topic} is an internal topic: remote log storage is unsupported for it"


def invalid_value(name: str, value: object, message: str) -> str:
    """Kafka's ConfigException(name, value, message) text."""
    return f"Invalid value {value} for configuration {name}: {message}"


def check_local_retention(local: int, total: int, local_key: str, total_key: str) -> str | None:
    """Kafka's validateRemoteStorageRetentionSize/Time on one pair: the message if ``local``
    (``local_key``'s value) may not go with ``total`` (``total_key``'s), else None.

    The rule applies only while ``total`` is limited (not -1; the validators
    allow nothing lower) and ``local`` is not -2: then -1 (unlimited locally)
    and more than ``total`` are refused.
    """
    if total <= -1 or local == USE_RETENTION:
        return None
    if local == -1:
        return invalid_value(
            local_key, local, f"Value must not be -1 as {total_key} value is set as {total}."
        )
    if local > total:
        return invalid_value(
            local_key, local, f"Value must not be more than {total_key} property value: {total}"
        )
    return None


def _retention_rules(config: LogConfig, bytes_keys: tuple[str, str], ms_keys: tuple[str, str]) -> None:
    """Rules 3 then 4 (Kafka checks the size first), under the given key names."""
    problem = check_local_retention(
        config.local_retention_bytes, config.retention_bytes, *bytes_keys
    ) or check_local_retention(config.local_retention_ms, config.retention_ms, *ms_keys)
    if problem is not None:
        raise RemoteStorageConfigError(problem)


def validate_topic_config(
    topic: str, config: LogConfig, old_overrides: Mapping[str, str], system_enabled: bool
) -> None:
    """Rules 1-6 (module docstring) on ``topic``'s new ``config``; `RemoteStorageConfigError` with
    the first failure's message.

    ``old_overrides``: the topic's overrides before the change (empty for a new
    topic), for rule 6; ``system_enabled``: the broker's
    ``remote.log.storage.system.enable``.
    """
    if config.remote_storage_enable:
        if not system_enabled:
            raise RemoteStorageConfigError(SYSTEM_DISABLED)
        if topic in NEVER_TIERED:
            raise RemoteStorageConfigError(never_tiered_message(topic))
        if config.compact:
            raise RemoteStorageConfigError(COMPACTED)
        _retention_rules(
            config, ("local.retention.bytes", "retention.bytes"), ("local.retention.ms", "retention.ms")
        )
        if config.remote_log_copy_disable:
            if config.local_retention_bytes not in (USE_RETENTION, config.retention_bytes):
                raise RemoteStorageConfigError(COPY_DISABLED_BYTES)
            if config.local_retention_ms not in (USE_RETENTION, config.retention_ms):
                raise RemoteStorageConfigError(COPY_DISABLED_MS)
        return
    was_enabled = old_overrides.get("remote.storage.enable", "false").strip().lower() == "true"
    if was_enabled and not config.remote_log_delete_on_disable:
        raise RemoteStorageConfigError(TURNING_OFF)


def validate_broker_defaults(defaults: LogConfig, system_enabled: bool) -> None:
    """Kafka's start-up check of the broker's topic defaults (validateBrokerLogConfigValues): with
    tiered storage on, ``log.local.retention.*`` must fit ``log.retention.*`` (rules 3 and 4).

    The message names the broker keys (the ones the operator wrote), as
    Kafka's dynamic check does; Kafka's start-up message names the topic keys.
    """
    if system_enabled:
        _retention_rules(
            defaults,
            ("log.local.retention.bytes", "log.retention.bytes"),
            ("log.local.retention.ms", "log.retention.ms"),
        )
