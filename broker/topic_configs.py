"""Topic and broker configs as the admin APIs see them (DescribeConfigs, AlterConfigs).

Resource types (Kafka's): 2 = topic, 4 = broker. Config sources (Kafka's
ConfigSource ids): 1 dynamic topic config, 4 static broker config (properties
file, environment or flag), 5 default. Topic configs are dynamic: they are
changed with AlterConfigs / IncrementalAlterConfigs and persisted by the log
manager; broker configs are static and read-only.
"""

from __future__ import annotations

from typing import Any

from broker.broker import Broker
from broker.config_types import LIST, TOPIC_CONFIG_TYPES, UNKNOWN, UNMODELLED_DEFAULTS, value_type
from protocol.errors import ErrorCode, KafkaError
from storage.config import BROKER_CONFIG_NAMES, LogConfig

TOPIC = 2
BROKER = 4
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
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
# Broker keys whose Kafka default is null (a coarser unit supplies it): no DEFAULT_CONFIG synonym.
_NULL_BY_DEFAULT = frozenset(
    {
        "log.retention.ms",
        "log.retention.minutes",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
    }
)


def _text(value: Any) -> str:
    """A config value as Kafka prints it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _broker_default(broker: Broker, key: str, topic_key: str) -> str | None:
    """The default of broker synonym ``key`` (its own default here, else Kafka's); None if unknown."""
    if key in broker.config.values:
        return _text(broker.config[key])
    return UNMODELLED_DEFAULTS[topic_key][0] if topic_key in UNMODELLED_DEFAULTS else None


def _set_here(broker: Broker, key: str | None) -> bool:
    """Whether broker key ``key`` is set in this broker's configuration (not left at its default)."""
    return key is not None and key in broker.config.values and broker.config.sources.get(key) != "default"


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
    for key, (default, broker_key) in UNMODELLED_DEFAULTS.items():
        if key not in values:
            values[key] = _text(broker.config[broker_key]) if _set_here(broker, broker_key) else default
    out = []
    for key in sorted(values) if keys is None else keys:
        if key not in values:
            continue  # Kafka leaves unknown names out of the answer
        names = _BROKER_SYNONYMS.get(key, [])  # Kafka's broker synonyms, its primary key first
        static = [b for b in names if _set_here(broker, b)]
        defaults = [
            (b, value)
            for b in names
            if b not in static
            and b not in _NULL_BY_DEFAULT
            and (value := _broker_default(broker, b, key)) is not None
        ]
        chain = []
        chain.extend(
            {"name": b, "value": _text(broker.config[b]), "source": SOURCE_STATIC_BROKER} for b in static
        )
        chain.extend({"name": b, "value": value, "source": SOURCE_DEFAULT} for b, value in defaults)
        # Kafka (ConfigHelper.configSynonyms) keeps the broker synonyms from its primary key on: with
        # the primary unset and null by default (log.retention.ms), none is listed at all.
        while chain and chain[0]["name"] != names[0]:
            chain.pop(0)
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


def describe_broker(
    broker: Broker, name: str, keys: list[str] | None, synonyms: bool
) -> list[dict[str, Any]]:
    """The broker's static configuration (read-only); typed as the topic config it defaults, if any."""
    if name not in ("", str(broker.node_id)):
        raise KafkaError(f"unknown broker {name!r}", ErrorCode.INVALID_REQUEST)
    config = broker.config
    out = []
    for key in sorted(config.values) if keys is None else keys:
        if key not in config.values:
            continue
        source = SOURCE_DEFAULT if config.sources[key] == "default" else SOURCE_STATIC_BROKER
        value = str(config[key])
        chain = [{"name": key, "value": value, "source": source}] if synonyms else []
        topic_key = BROKER_CONFIG_NAMES.get(key, ("", 0))[0]
        kind = (
            TOPIC_CONFIG_TYPES[topic_key][0] if topic_key in TOPIC_CONFIG_TYPES else value_type(config[key])
        )
        out.append(_entry(key, value, True, source, chain, kind))
    return out


def alter_topic(broker: Broker, name: str, overrides: dict[str, str], validate_only: bool) -> None:
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
