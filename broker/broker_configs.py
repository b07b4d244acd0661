"""BROKER (type 4) and BROKER_LOGGER (type 8) resources in the config APIs, as Kafka 3.x in ZooKeeper mode.

DescribeConfigs (Kafka's ConfigHelper):

- ``""`` (the cluster default): only the keys set at that level, each with
  source DYNAMIC_DEFAULT_BROKER_CONFIG (3) and only synonyms of that source.
- this broker's id: every key with its effective value, its source (the first
  of DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3,
  STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5 that sets it) and, when asked,
  synonyms in that order (``log.retention.ms`` lists ``.minutes`` and
  ``.hours`` too; ``listener.name.<l>.<key>`` lists ``<key>``). Read-only
  unless the key can change dynamically here (Kafka marks every key outside its
  AllDynamicConfigs read-only, the throttle rates and listener-prefixed keys
  among them; minikafka also the keys it refuses to change live). Password
  configs are sensitive: no value. So are the tiered storage plugins'
  properties (``rsm.config.*``, ``rlmm.config.*``, under whatever prefixes
  the broker's ``remote.log.*.impl.prefix`` keys name): Kafka describes every
  key whose type it cannot know as sensitive, and they hold the object store's
  credentials (``rsm.config.storage.aws.secret.access.key``...).
- another id: INVALID_REQUEST "Unexpected broker id, expected <id> or empty
  string, but received <name>"; not a number: "Broker id must be an integer,
  but it is: <name>". Kafka's clients send a broker's resource to that broker.

Alterations (ConfigAdminManager.preprocess, then ZkAdminManager): the resource
is ``""`` or this broker's id (another id: INVALID_REQUEST "Unexpected broker
id, expected <id>, but received <name>"); AlterConfigs replaces the level's
whole set, IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT to
it (APPEND and SUBTRACT only for list keys, INVALID_CONFIG otherwise); the
result is checked (broker/dynamic/keys.py, INVALID_REQUEST with Kafka's
message) before authorization is, as Kafka orders it, then stored and applied
(broker/dynamic/configs.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from broker.broker import Broker
from broker.config import KEYS
from broker.config_types import LIST, PASSWORD, TOPIC_CONFIG_TYPES, UNKNOWN, value_type
from broker.dynamic import keys as dynamic_keys
from broker.dynamic import loggers
from broker.dynamic.configs import DEFAULT, DYNAMIC_DEFAULT, Change, default_text
from broker.kafka_keys import KAFKA_BROKER_KEYS
from broker.remote_log_config import DEFAULT_PREFIXES, KINDS, plugin_prefixes
from protocol.errors import ErrorCode, KafkaError
from storage.config import BROKER_CONFIG_NAMES

BROKER = 4
BROKER_LOGGER = 8
SOURCE_BROKER_LOGGER = 6
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_SECRET_SUFFIXES = (
    "password",
    ".secret",
    "sasl.jaas.config",
    "ssl.keystore.key",
    "secret.access.key",
    "session.token",
)


def _java_int(name: str) -> int | None:
    if _JAVA_INT.fullmatch(name) and -(1 << 31) <= int(name) < 1 << 31:
        return int(name)
    return None


def sensitive(name: str, prefixes: tuple[str, ...] = DEFAULT_PREFIXES) -> bool:
    """Whether a broker key's value is never described (Kafka: PASSWORD-typed keys, and keys of no
    known type such as a tiered storage plugin's property, under ``prefixes``)."""
    return dynamic_keys.is_password(name) or name.endswith(_SECRET_SUFFIXES) or name.startswith(prefixes)


def config_type(broker: Broker, name: str) -> int:
    found = dynamic_keys.lookup(name)
    if found is not None:
        return found.kind
    if name in KINDS:
        return KINDS[name]
    if name in broker.config.plugin_values:
        return UNKNOWN  # Kafka cannot know a plugin property's type
    topic_key = BROKER_CONFIG_NAMES.get(name, ("", 0))[0]
    if topic_key in TOPIC_CONFIG_TYPES:
        return TOPIC_CONFIG_TYPES[topic_key][0]
    if name in broker.config.values:
        return value_type(broker.config[name])
    return PASSWORD if sensitive(name) else UNKNOWN


def _documentation(name: str) -> str | None:
    found = dynamic_keys.lookup(name)
    if found is not None and found.doc:
        return found.doc
    return KEYS[name].doc if name in KEYS else None


def read_only(name: str) -> bool:
    found = dynamic_keys.DYNAMIC_KEYS.get(name)
    return found is None or found.dynamic_only or found.mode is dynamic_keys.Mode.REFUSED


def _entry(
    name: str,
    value: str | None,
    source: int,
    synonyms: list[dict[str, Any]],
    kind: int,
    doc: str | None,
    secret: bool,
) -> dict[str, Any]:
    return {
        "name": name,
        "value": None if secret else value,
        "read_only": read_only(name),
        "is_default": source == DEFAULT,
        "config_source": source,
        "is_sensitive": secret,
        "synonyms": synonyms,
        "config_type": kind,
        "documentation": doc,
    }


def describe_broker(
    broker: Broker, name: str, keys: list[str] | None, synonyms: bool, documentation: bool = False
) -> list[dict[str, Any]]:
    dynamic = broker.dynamic
    if name == "":
        names = set(dynamic.cluster_default)
        per_broker = False
    else:
        node = _java_int(name)
        if node is None:
            raise KafkaError(f"Broker id must be an integer, but it is: {name}", ErrorCode.INVALID_REQUEST)
        if node != broker.node_id:
            raise KafkaError(
                f"Unexpected broker id, expected {broker.node_id} or empty string, but received {name}",
                ErrorCode.INVALID_REQUEST,
            )
        names = (
            set(broker.config.values)
            | set(dynamic.explicit())
            | {
                k.name
                for k in dynamic_keys.DYNAMIC_KEYS.values()
                if k.default is not None and k.mode is not dynamic_keys.Mode.REFUSED
            }
        )
        per_broker = True
    prefixes = plugin_prefixes(broker.config.values)
    out = []
    for key in sorted(names) if keys is None else keys:
        if key not in names:
            continue  # Kafka leaves unknown names out of the answer
        chain = dynamic.synonym_chain(key, include_static=per_broker)
        if not per_broker:
            chain = [c for c in chain if c[2] == DYNAMIC_DEFAULT]
        source = chain[0][2] if chain else DEFAULT
        value = dynamic.value(key) if per_broker else dynamic.cluster_default[key]
        listed = (
            [{"name": n, "value": None if sensitive(n, prefixes) else v, "source": s} for n, v, s in chain]
            if synonyms
            else []
        )
        out.append(
            _entry(
                key,
                value,
                source,
                listed,
                config_type(broker, key),
                _documentation(key) if documentation else None,
                sensitive(key, prefixes),
            )
        )
    return out


def describe_loggers(broker: Broker, name: str, keys: list[str] | None) -> list[dict[str, Any]]:
    """BROKER_LOGGER: the broker's loggers and their levels (Kafka's ConfigHelper checks first)."""
    if name == "":
        raise KafkaError("Broker id must not be empty", ErrorCode.INVALID_REQUEST)
    node = _java_int(name)
    if node is None:
        raise KafkaError(f"Broker id must be an integer, but it is: {name}", ErrorCode.INVALID_REQUEST)
    if node != broker.node_id:
        raise KafkaError(
            f"Unexpected broker id, expected {broker.node_id} but received {name}", ErrorCode.INVALID_REQUEST
        )
    levels = loggers.loggers()
    wanted = sorted(levels) if keys is None else [k for k in keys if k in levels]
    return [
        {
            "name": logger,
            "value": levels[logger],
            "read_only": False,
            "is_default": False,
            "config_source": SOURCE_BROKER_LOGGER,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": UNKNOWN,
            "documentation": None,
        }
        for logger in wanted
    ]


def per_broker_level(broker: Broker, name: str) -> bool:
    """Whether an alteration of BROKER resource ``name`` is of this broker's own level (else the
    cluster default); INVALID_REQUEST for another broker's id, as ConfigAdminManager answers."""
    if name == "":
        return False
    node = _java_int(name)
    if node is None:
        raise KafkaError(f"Node id must be an integer, but it is: {name}", ErrorCode.INVALID_REQUEST)
    if node != broker.node_id:
        raise KafkaError(
            f"Unexpected broker id, expected {broker.node_id}, but received {name}", ErrorCode.INVALID_REQUEST
        )
    return True


def _is_list(name: str) -> bool:
    """Whether APPEND / SUBTRACT may change ``name`` (KafkaError for a name Kafka does not know)."""
    found = dynamic_keys.DYNAMIC_KEYS.get(name)
    if found is not None and not found.dynamic_only:
        return found.kind == LIST
    if name in KAFKA_BROKER_KEYS or name in KEYS:
        return True  # a static key: the checks that follow refuse it by name
    raise KafkaError(f"Unknown config name: {name}", ErrorCode.INVALID_CONFIG)


def incremental_change(ops: Iterable[Any]) -> Change:
    """IncrementalAlterConfigs operations as a change of a level's set (Kafka's
    prepareIncrementalConfigs)."""
    ops = list(ops)

    def change(props: dict[str, str]) -> dict[str, str]:
        for op in ops:
            name, operation = op.name, op.config_operation
            if operation == SET:
                props[name] = op.value
            elif operation == DELETE:
                props.pop(name, None)
            elif operation in (APPEND, SUBTRACT):
                what = "append" if operation == APPEND else "subtract"
                if not _is_list(name):
                    raise KafkaError(
                        f"Config value {what} is not allowed for config key: {name}", ErrorCode.INVALID_CONFIG
                    )
                current = props.get(name)
                if current is None:
                    current = default_text(name) or ""
                given = (op.value or "").split(",")
                if operation == APPEND:
                    items = [v for v in current.split(",") if v]
                    items += [v for v in given if v not in items]
                else:
                    items = current.split(",")
                    for v in given:  # Scala's diff: one occurrence per given value
                        if v in items:
                            items.remove(v)
                props[name] = ",".join(items)
            else:
                raise KafkaError(f"Unknown operations type {operation}", ErrorCode.INVALID_REQUEST)
        return props

    return change


def replacing_change(configs: Iterable[Any]) -> Change:
    """AlterConfigs' configs as a change of a level's set: they replace it."""
    new = {c.name: c.value for c in configs}
    return lambda _props: dict(new)
