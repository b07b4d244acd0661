"""Topic configs as the admin APIs see them (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs).

Resource type 2 (Kafka's). Config sources (Kafka's ConfigSource ids): 1 the
topic's own override, then where the broker-level default comes from: 2 a
dynamic per-broker config, 3 the dynamic cluster default, 4 the static broker
config (properties file, environment or flag), 5 the default. Topic configs are
changed with AlterConfigs / IncrementalAlterConfigs and persisted by the log
manager (or ZooKeeper). Broker resources: broker/broker_configs.py.

Every new set of overrides a client asks for (CreateTopics, AlterConfigs,
IncrementalAlterConfigs) goes through `check_overrides`: the values parse, and
the tiered storage rules hold (storage/remote_config.py, against this broker's
``remote.log.storage.system.enable`` and the topic's overrides before the
change); INVALID_CONFIG with Kafka's message otherwise. Configs a broker reads
back from ZooKeeper or its own registry are not checked again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from broker.broker import Broker
from broker.config_types import LIST, TOPIC_CONFIG_TYPES, UNKNOWN, UNMODELLED_DEFAULTS
from broker.dynamic.configs import default_text
from protocol.errors import ErrorCode, KafkaError
from storage.config import BROKER_CONFIG_NAMES, LogConfig
from storage.remote_config import validate_topic_config

TOPIC = 2
BROKER = 4
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DEFAULT = 5

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# APPEND and SUBTRACT work on every list-typed topic config, as Kafka (ConfigDef LIST)
LIST_CONFIGS = frozenset(name for name, (kind, _) in TOPIC_CONFIG_TYPES.items() if kind == LIST)

# topic-level name -> the broker-level names that supply its default, the one that wins first
# (BROKER_CONFIG_NAMES lists coarse units first: log.retention.ms beats .minutes beats .hours)
_BROKER_SYNONYMS: dict[str, list[str]] = {}
for _broker_key, (_topic_key, _) in reversed(BROKER_CONFIG_NAMES.items()):
    _BROKER_SYNONYMS.setdefault(_topic_key, []).append(_broker_key)
for _topic_key, (_, _broker_key) in UNMODELLED_DEFAULTS.items():
    if _broker_key is not None:
        _BROKER_SYNONYMS.setdefault(_topic_key, []).append(_broker_key)
# the topic key each broker key supplies an unmodelled default of
_UNMODELLED_OF = {b: t for t, (_, b) in UNMODELLED_DEFAULTS.items() if b is not None}


def _broker_default(key: str) -> str | None:
    """The default of broker key ``key``: minikafka's or Kafka's, else the topic default it supplies."""
    found = default_text(key)
    if found is None and key in _UNMODELLED_OF:
        return UNMODELLED_DEFAULTS[_UNMODELLED_OF[key]][0]
    return found


def _entry(
    name: str,
    value: str | None,
    read_only: bool,
    source: int,
    synonyms: list[dict[str, Any]],
    config_type: int = UNKNOWN,
    documentation: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "is_default": source == SOURCE_DEFAULT,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": config_type,
        "documentation": documentation,
    }


def _topic(broker: Broker, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(overrides, effective values) of a topic; UNKNOWN_TOPIC_OR_PARTITION if the cluster has none such."""
    info = broker.cluster.topic(name)
    if info is None:
        raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    effective = LogConfig.from_topic_configs(info.configs, broker.logs.default_config)
    return info.configs, effective.to_topic_configs()


def describe_topic(
    broker: Broker, name: str, keys: list[str] | None, synonyms: bool, documentation: bool = False
) -> list[dict[str, Any]]:
    overrides, _ = _topic(broker, name)
    return describe_overrides(broker, overrides, keys, synonyms, documentation)


def describe_overrides(
    broker: Broker,
    overrides: dict[str, str],
    keys: list[str] | None,
    synonyms: bool,
    documentation: bool = False,
) -> list[dict[str, Any]]:
    """Every topic-level config of a topic with these ``overrides``: value, source, type and synonyms.

    ``keys``: only these (unknown ones left out); None: all. ValueError if an override is invalid.
    ``documentation``: add each config's one-line description.
    """
    values = LogConfig.from_topic_configs(overrides, broker.logs.default_config).to_topic_configs()
    dynamic = broker.dynamic
    for key, (default, broker_key) in UNMODELLED_DEFAULTS.items():
        if key not in values:
            set_value = dynamic.explicit().get(broker_key) if broker_key is not None else None
            values[key] = set_value if set_value is not None else default
    out = []
    for key in sorted(values) if keys is None else keys:
        if key not in values:
            continue  # Kafka leaves unknown names out of the answer
        names = _BROKER_SYNONYMS.get(key, [])  # Kafka's broker synonyms, its primary key first
        # Kafka (ConfigHelper.configSynonyms) lists the primary broker key's synonyms set per broker,
        # at the cluster default, statically and by default, from the primary key on: with the
        # primary unset and null by default (log.retention.ms), none is listed at all.
        chain = [
            {"name": n, "value": v, "source": src}
            for n, v, src in (dynamic.synonym_chain(names[0], default_of=_broker_default) if names else [])
        ]
        source = chain[0]["source"] if chain else SOURCE_DEFAULT
        if key in overrides:
            chain.insert(0, {"name": key, "value": overrides[key], "source": SOURCE_DYNAMIC_TOPIC})
            source = SOURCE_DYNAMIC_TOPIC
        kind, doc = TOPIC_CONFIG_TYPES.get(key, (UNKNOWN, None))
        out.append(
            _entry(
                key,
                values[key],
                False,
                source,
                chain if synonyms else [],
                kind,
                doc if documentation else None,
            )
        )
    return out


def check_overrides(broker: Broker, name: str, overrides: Mapping[str, str], old: Mapping[str, str]) -> None:
    """Kafka's validation of topic ``name``'s new ``overrides`` (``old``: its overrides until now,
    empty for a new topic): KafkaError INVALID_CONFIG naming the key or rule that fails."""
    try:
        config = LogConfig.from_topic_configs(overrides, broker.logs.default_config)
        validate_topic_config(name, config, old, broker.config.remote_log_storage_system_enable)
    except ValueError as exc:
        raise KafkaError(str(exc), ErrorCode.INVALID_CONFIG) from None


def alter_topic(broker: Broker, name: str, overrides: dict[str, str], validate_only: bool) -> None:
    """Replace topic ``name``'s overrides (checked first); KafkaError UNKNOWN_TOPIC_OR_PARTITION or
    INVALID_CONFIG."""
    info = broker.cluster.topic(name)
    if info is None:
        raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    check_overrides(broker, name, overrides, info.configs)
    broker.admin.alter_topic_configs(name, overrides, validate_only=validate_only)


def incremental_overrides(broker: Broker, name: str, ops: list[Any]) -> dict[str, str]:
    """The topic's overrides after applying IncrementalAlterConfigs operations."""
    given, current = _topic(broker, name)
    overrides = dict(given)
    for op in ops:
        if op.config_operation == SET:  # null values never get here (alter_configs._malformed)
            overrides[op.name] = op.value
        elif op.config_operation == DELETE:
            overrides.pop(op.name, None)
        elif op.config_operation in (APPEND, SUBTRACT):
            if op.name not in LIST_CONFIGS:
                raise KafkaError(f"{op.name} is not a list config", ErrorCode.INVALID_CONFIG)
            items = [v for v in overrides.get(op.name, current.get(op.name, "")).split(",") if v]
            given = [v.strip() for v in (op.value or "").split(",") if v.strip()]
            if op.config_operation == APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            overrides[op.name] = ",".join(items)
        else:
            raise KafkaError(f"unknown config operation {op.config_operation}", ErrorCode.INVALID_REQUEST)
    return overrides
