"""Which broker configs may change while the brokers run, as Apache Kafka 3.x (ZooKeeper mode) decides.

Facts from Kafka's sources (core/.../server/DynamicBrokerConfig.scala: ``AllDynamicConfigs``,
the per-broker and cluster-level sets, ``validateConfigs``, ``brokerConfigSynonyms``;
DynamicConfig.scala; QuotaConfig.brokerQuotaConfigs; ConfigDef's parsing and validators):

- Dynamic keys are the SSL key and trust store keys (only with a listener prefix,
  ``listener.name.<l>.ssl.keystore.location``, and only per broker), the log
  cleaner's, the broker defaults of topic configs (``log.retention.ms``,
  ``log.segment.bytes``... but not ``log.retention.hours``/``.minutes`` nor
  ``log.roll.hours``), thread pool sizes, listener and SASL settings, connection
  limits, ``producer.id.expiration.ms``, the remote log manager's rates, and the
  keys that exist only dynamically: ``leader.replication.throttled.rate``,
  ``follower.replication.throttled.rate`` and
  ``replica.alter.log.dirs.io.max.bytes.per.second`` (longs, at least 0, default
  Long.MAX_VALUE). Every other Kafka key is static.
- A change is checked in this order, each failure answering INVALID_REQUEST
  with the message here (ConfigAdminManager turns the ConfigException into an
  InvalidRequestException): static keys ("Cannot update these configs
  dynamically: Set(...)"), SSL store keys without a listener prefix, each
  value's type and range (ConfigDef's "Invalid value X for configuration K:
  ..."), per-broker keys at the cluster default level ("... broker id must be
  specified").

Each dynamic key has a `Mode` in minikafka:

- `APPLIED`: acted on at once (broker/dynamic/configs.py says by whom).
- `STORED`: minikafka has nothing the key governs (thread pools, the cleaner's
  I/O buffers and throttle, tiered storage, compression levels...). Accepted,
  checked, kept and described like any other, with no effect: the same
  treatment as the topic configs minikafka accepts without acting on them, so
  that scripts written for Kafka keep working.
- `REFUSED`: Kafka changes it live, minikafka cannot without a restart
  (listeners, SASL, TLS protocol settings, metric reporters). Refused with
  INVALID_REQUEST saying so rather than stored with no effect.

Two departures from Kafka, both refusals: a key Kafka does not define at all
(Kafka stores it as a custom config; here it is almost always a typo, answered
with the closest known key), and minikafka's own static keys (``port``,
``log.format``...). Tiered storage plugins' properties (``rsm.config.*``,
``rlmm.config.*``: Kafka stores them as custom configs, which its plugins never
read again) are refused as static keys.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

from broker.config import KEYS, parse_ip_overrides
from broker.config_types import BOOLEAN, CLASS, DOUBLE, INT, LIST, LONG, PASSWORD, SHORT, STRING
from broker.kafka_keys import KAFKA_BROKER_KEYS
from broker.remote_log_config import DEFAULT_PREFIXES

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
DOUBLE_MAX = "1.7976931348623157E308"  # Java's Double.MAX_VALUE as Kafka prints it


class Mode(Enum):
    APPLIED = "applied"
    STORED = "stored"
    REFUSED = "refused"


class DynamicConfigError(ValueError):
    """A change Kafka's checks refuse: answered INVALID_REQUEST with this message."""


Check = Callable[[str, object], None]


@dataclass(frozen=True, slots=True)
class DynamicKey:
    name: str
    kind: int  # broker.config_types id
    default: str | None  # Kafka's default as DescribeConfigs prints it; None: null
    check: Check | None = None  # range or choice check of the parsed value
    mode: Mode = Mode.APPLIED
    per_broker: bool = False  # only for one broker id, never at the cluster default
    dynamic_only: bool = False  # a static value is not used (the replication throttle rates)
    doc: str = ""


def config_error(name: str, value: object, message: str | None = None) -> DynamicConfigError:
    """Kafka's ConfigException(name, value, message) text."""
    return DynamicConfigError(
        f"Invalid value {value} for configuration {name}" + ("" if message is None else f": {message}")
    )


def _at_least(minimum: float) -> Check:
    def check(name: str, value: object) -> None:
        assert isinstance(value, (int, float))
        if value < minimum:
            raise config_error(name, value, f"Value must be at least {minimum}")

    return check


def _between(minimum: int, maximum: int) -> Check:
    def check(name: str, value: object) -> None:
        assert isinstance(value, (int, float))
        if value < minimum:
            raise config_error(name, value, f"Value must be at least {minimum}")
        if value > maximum:
            raise config_error(name, value, f"Value must be no more than {maximum}")

    return check


def _one_of(*choices: str) -> Check:
    def check(name: str, value: object) -> None:
        if value not in choices:
            raise config_error(name, value, "String must be one of: " + ", ".join(choices))

    return check


def _list_of(*choices: str) -> Check:
    def check(name: str, value: object) -> None:
        assert isinstance(value, list)
        for item in value:
            if item not in choices:
                raise config_error(name, item, "String must be one of: " + ", ".join(choices))

    return check


def _gzip_level(name: str, value: object) -> None:
    if value != -1 and not (isinstance(value, int) and 1 <= value <= 9):
        raise config_error(name, value, "Value must be between 1 and 9, or -1")


def _ip_overrides(name: str, value: object) -> None:
    try:
        parse_ip_overrides(str(value))
    except ValueError as exc:
        raise config_error(name, value, str(exc)) from None


_A, _S, _R = Mode.APPLIED, Mode.STORED, Mode.REFUSED
_L = str(INT64_MAX)
_I = str(INT32_MAX)


def _key(
    name: str,
    kind: int,
    default: str | None,
    check: Check | None = None,
    mode: Mode = _A,
    doc: str = "",
    **flags: bool,
) -> DynamicKey:
    return DynamicKey(name, kind, default, check, mode, doc=doc, **flags)


# Base names of the listener TLS keys (SslConfigs.RECONFIGURABLE_CONFIGS): per broker, listener prefix only.
SSL_STORE_KEYS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
_SSL_STORE_TYPES = {
    "ssl.keystore.type": (STRING, "JKS"),
    "ssl.keystore.location": (STRING, None),
    "ssl.keystore.password": (PASSWORD, None),
    "ssl.key.password": (PASSWORD, None),
    "ssl.truststore.type": (STRING, "JKS"),
    "ssl.truststore.location": (STRING, None),
    "ssl.truststore.password": (PASSWORD, None),
    "ssl.keystore.certificate.chain": (PASSWORD, None),
    "ssl.keystore.key": (PASSWORD, None),
    "ssl.truststore.certificates": (PASSWORD, None),
}
# Listener-level keys Kafka allows at the cluster default too (ClusterLevelListenerConfigs).
CLUSTER_LEVEL_LISTENER_KEYS = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
# Kafka's listener configs that take a mechanism prefix: listener.name.<l>.<mechanism>.<key>.
_MECHANISM_KEYS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)

_TABLE: tuple[DynamicKey, ...] = (
    # -- the broker defaults of topic configs (DynamicLogConfig): every log without its own override
    _key("log.segment.bytes", INT, "1073741824", _at_least(14), doc="segment.bytes of topics without one"),
    _key("log.roll.ms", LONG, None, doc="segment.ms of topics without one"),
    _key("log.index.size.max.bytes", INT, "10485760", _at_least(4), doc="segment.index.bytes default"),
    _key("log.index.interval.bytes", INT, "4096", _at_least(0), doc="index.interval.bytes default"),
    _key("log.flush.interval.messages", LONG, _L, _at_least(1), doc="flush.messages default"),
    _key("log.flush.interval.ms", LONG, None, doc="flush.ms default"),
    _key("log.retention.ms", LONG, None, doc="retention.ms of topics without one"),
    _key("log.retention.bytes", LONG, "-1", doc="retention.bytes of topics without one"),
    _key("message.max.bytes", INT, "1048588", _at_least(0), doc="max.message.bytes default"),
    _key("log.cleanup.policy", LIST, "delete", _list_of("compact", "delete"), doc="cleanup.policy default"),
    _key(
        "log.message.timestamp.type",
        STRING,
        "CreateTime",
        _one_of("CreateTime", "LogAppendTime"),
        doc="message.timestamp.type default",
    ),
    _key(
        "log.cleaner.delete.retention.ms", LONG, "86400000", _at_least(0), doc="delete.retention.ms default"
    ),
    _key("log.cleaner.min.compaction.lag.ms", LONG, "0", _at_least(0), doc="min.compaction.lag.ms default"),
    _key("log.cleaner.min.cleanable.ratio", DOUBLE, "0.5", _between(0, 1), doc="min.cleanable.dirty.ratio"),
    _key("log.segment.delete.delay.ms", LONG, "60000", _at_least(0), doc="file.delete.delay.ms default"),
    _key("min.insync.replicas", INT, "1", _at_least(1), doc="min.insync.replicas default"),
    _key(
        "unclean.leader.election.enable",
        BOOLEAN,
        "false",
        doc="unclean.leader.election.enable default (the controller elects at once when turned on)",
    ),
    _key("log.roll.jitter.ms", LONG, None, mode=_S),
    _key("log.cleaner.max.compaction.lag.ms", LONG, _L, _at_least(1), _S),
    _key("log.preallocate", BOOLEAN, "false", mode=_S),
    _key(
        "compression.type",
        STRING,
        "producer",
        _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        _S,
    ),
    _key("compression.gzip.level", INT, "-1", _gzip_level, _S),
    _key("compression.lz4.level", INT, "9", _between(1, 17), _S),
    _key("compression.zstd.level", INT, "3", _between(-131072, 22), _S),
    _key("log.message.timestamp.difference.max.ms", LONG, _L, _at_least(0), _S),
    _key("log.message.timestamp.before.max.ms", LONG, _L, _at_least(0), _S),
    _key("log.message.timestamp.after.max.ms", LONG, "3600000", _at_least(0), _S),
    _key("log.message.downconversion.enable", BOOLEAN, "true", mode=_S),
    _key("log.local.retention.ms", LONG, "-2", _at_least(-2), doc="local.retention.ms default"),
    _key("log.local.retention.bytes", LONG, "-2", _at_least(-2), doc="local.retention.bytes default"),
    # -- the log cleaner (LogCleaner.ReconfigurableConfigs)
    _key("log.cleaner.threads", INT, "1", _at_least(0), doc="cleaner threads (cleanings at once)"),
    _key("log.cleaner.backoff.ms", LONG, "15000", _at_least(0), doc="cleaner sleep when idle"),
    _key("log.cleaner.dedupe.buffer.size", LONG, "134217728", doc="offset map memory of all cleaner threads"),
    _key("log.cleaner.io.buffer.size", INT, "524288", _at_least(0), _S),
    _key("log.cleaner.io.buffer.load.factor", DOUBLE, "0.9", mode=_S),
    _key("log.cleaner.io.max.bytes.per.second", DOUBLE, DOUBLE_MAX, mode=_S),
    # -- connections (SocketServer, DynamicListenerConfig)
    _key("max.connections", INT, _I, _at_least(0), doc="connections accepted at once"),
    _key("max.connections.per.ip", INT, _I, _at_least(0), doc="connections at once from one address"),
    _key(
        "max.connections.per.ip.overrides",
        STRING,
        "",
        _ip_overrides,
        doc="host:limit,... exceptions to the per-ip limit",
    ),
    _key("max.connection.creation.rate", INT, _I, _at_least(0), _S),
    # -- thread pools (DynamicThreadPool, num.network.threads): nothing of the kind here
    _key("num.io.threads", INT, "8", _at_least(1), _S),
    _key("num.network.threads", INT, "3", _at_least(1), _S),
    _key("num.replica.fetchers", INT, "1", mode=_S),
    _key("num.recovery.threads.per.data.dir", INT, "2", _at_least(1), _S),
    _key("background.threads", INT, "10", _at_least(1), _S),
    # -- producer state (DynamicProducerStateManagerConfig)
    _key("producer.id.expiration.ms", INT, "86400000", _at_least(1), doc="idle idempotent producers expire"),
    _key("transaction.partition.verification.enable", BOOLEAN, "true", mode=_S),
    # -- tiered storage (DynamicRemoteLogConfig): stored until the remote log manager reads them
    _key("remote.log.index.file.cache.total.size.bytes", LONG, "1073741824", _at_least(1), _S),
    _key("remote.fetch.max.wait.ms", INT, "500", _at_least(1), _S),
    _key("remote.log.manager.copy.max.bytes.per.second", LONG, _L, _at_least(1), _S),
    _key("remote.log.manager.fetch.max.bytes.per.second", LONG, _L, _at_least(1), _S),
    _key("remote.list.offsets.request.timeout.ms", LONG, "30000", _at_least(1), _S),
    # -- replication throttles (QuotaConfig.brokerQuotaConfigs): only ever dynamic
    _key(
        "leader.replication.throttled.rate",
        LONG,
        _L,
        _at_least(0),
        doc="bytes/s a leader sends to throttled followers",
        dynamic_only=True,
    ),
    _key(
        "follower.replication.throttled.rate",
        LONG,
        _L,
        _at_least(0),
        doc="bytes/s a follower fetches for throttled replicas",
        dynamic_only=True,
    ),
    _key("replica.alter.log.dirs.io.max.bytes.per.second", LONG, _L, _at_least(0), _S, dynamic_only=True),
    # -- Kafka changes these live; minikafka builds listeners, SASL and TLS settings once
    *(
        _key(name, kind, None, mode=_R, per_broker=name not in CLUSTER_LEVEL_LISTENER_KEYS)
        for name, kind in (
            ("listeners", STRING),
            ("advertised.listeners", STRING),
            ("listener.security.protocol.map", STRING),
            ("principal.builder.class", CLASS),
            ("ssl.protocol", STRING),
            ("ssl.provider", STRING),
            ("ssl.cipher.suites", LIST),
            ("ssl.enabled.protocols", LIST),
            ("ssl.keymanager.algorithm", STRING),
            ("ssl.trustmanager.algorithm", STRING),
            ("ssl.endpoint.identification.algorithm", STRING),
            ("ssl.secure.random.implementation", STRING),
            ("ssl.client.auth", STRING),
            ("ssl.engine.factory.class", CLASS),
            ("sasl.mechanism.inter.broker.protocol", STRING),
            ("sasl.jaas.config", PASSWORD),
            ("sasl.enabled.mechanisms", LIST),
            ("sasl.kerberos.service.name", STRING),
            ("sasl.kerberos.kinit.cmd", STRING),
            ("sasl.kerberos.ticket.renew.window.factor", DOUBLE),
            ("sasl.kerberos.ticket.renew.jitter", DOUBLE),
            ("sasl.kerberos.min.time.before.relogin", LONG),
            ("sasl.kerberos.principal.to.local.rules", LIST),
            ("sasl.login.refresh.window.factor", DOUBLE),
            ("sasl.login.refresh.window.jitter", DOUBLE),
            ("sasl.login.refresh.min.period.seconds", SHORT),
            ("sasl.login.refresh.buffer.seconds", SHORT),
        )
    ),
    _key("metric.reporters", LIST, "", mode=_R),
)

DYNAMIC_KEYS: dict[str, DynamicKey] = {k.name: k for k in _TABLE}

LISTENER_KEY = re.compile(r"listener\.name\.([^.]*)\.(.*)")


def split_listener_key(name: str) -> tuple[str, str] | None:
    """``(listener, base key)`` of ``listener.name.<listener>.<base>``, else None."""
    m = LISTENER_KEY.fullmatch(name)
    return (m.group(1), m.group(2)) if m else None


def _mechanism_key(base: str) -> bool:
    return any(base == k or base.endswith("." + k) for k in _MECHANISM_KEYS)


def lookup(name: str) -> DynamicKey | None:
    """The dynamic key ``name`` is (listener-prefixed keys: as their base key, for that listener);
    None for a key that is not dynamic in Kafka."""
    key = DYNAMIC_KEYS.get(name)
    if key is not None:
        return key
    scoped = split_listener_key(name)
    if scoped is None:
        return None
    base = scoped[1]
    if base in SSL_STORE_KEYS:
        kind, default = _SSL_STORE_TYPES[base]
        return DynamicKey(name, kind, default, per_broker=True, doc=f"the listener's {base}")
    if base in ("max.connections", "max.connection.creation.rate"):
        return DynamicKey(name, INT, None, _at_least(0), Mode.STORED)
    if _mechanism_key(base):
        return DynamicKey(
            name, PASSWORD if base.endswith("sasl.jaas.config") else STRING, None, mode=Mode.REFUSED
        )
    found = DYNAMIC_KEYS.get(base)
    if found is not None and found.mode is Mode.REFUSED:
        return DynamicKey(name, found.kind, None, mode=Mode.REFUSED, per_broker=found.per_broker)
    return None


def per_broker(name: str) -> bool:
    """Whether ``name`` can only be set for one broker id (Kafka's perBrokerConfigs)."""
    scoped = split_listener_key(name)
    if scoped is not None:
        return scoped[1] not in CLUSTER_LEVEL_LISTENER_KEYS
    key = DYNAMIC_KEYS.get(name)
    return key is not None and key.per_broker


def is_password(name: str) -> bool:
    """A password config (Kafka's isPasswordConfig): its value is never described, and in ZooKeeper
    it is kept encrypted."""
    key = lookup(name)
    return key is not None and key.kind == PASSWORD


def synonyms(name: str, listener_override: bool = True) -> list[str]:
    """Kafka's brokerConfigSynonyms: the keys that set the same thing, the one that wins first."""
    if name in ("log.roll.ms", "log.roll.hours"):
        return ["log.roll.ms", "log.roll.hours"]
    if name in ("log.roll.jitter.ms", "log.roll.jitter.hours"):
        return ["log.roll.jitter.ms", "log.roll.jitter.hours"]
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    if name in ("log.retention.ms", "log.retention.minutes", "log.retention.hours"):
        return ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    scoped = split_listener_key(name) if listener_override else None
    if scoped is not None:
        base = scoped[1]
        mechanism = next((k for k in _MECHANISM_KEYS if base.endswith(k)), None)
        return [name, mechanism or base]
    return [name]


def scala_set(names: Iterable[str]) -> str:
    """How Kafka's messages print a set of names: ``Set(a, b)`` (``HashSet(...)`` past four)."""
    items = sorted(set(names))
    return ("Set(" if len(items) <= 4 else "HashSet(") + ", ".join(items) + ")"


_INTEGER = re.compile(r"[+-]?[0-9]+")
_KIND_NAMES = {INT: "INT", SHORT: "SHORT", LONG: "LONG", DOUBLE: "DOUBLE"}
_BOUNDS = {INT: (-(1 << 31), INT32_MAX), SHORT: (-(1 << 15), (1 << 15) - 1), LONG: (-(1 << 63), INT64_MAX)}


def parse(name: str, kind: int, text: str) -> object:
    """``text`` as ConfigDef parses a string of type ``kind`` (trimmed); DynamicConfigError with its
    message when it does not parse."""
    value = text.strip()
    if kind == BOOLEAN:
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise config_error(name, value, "Expected value to be either true or false")
    if kind in _BOUNDS:
        low, high = _BOUNDS[kind]
        if _INTEGER.fullmatch(value) and low <= int(value) <= high:
            return int(value)
        raise config_error(name, value, f"Not a number of type {_KIND_NAMES[kind]}")
    if kind == DOUBLE:
        try:
            number = float(value.rstrip("dDfF") if value[-1:] in "dDfF" and value[:-1] else value)
        except ValueError:
            raise config_error(name, value, "Not a number of type DOUBLE") from None
        if math.isnan(number) and value.lower() != "nan":
            raise config_error(name, value, "Not a number of type DOUBLE")
        return number
    if kind == LIST:
        return [] if not value else [item.strip() for item in value.split(",")]
    return value


def check_value(name: str, key: DynamicKey, text: str) -> object:
    """The parsed value of ``text`` for ``key`` (named ``name`` in messages), checked."""
    value = parse(name, key.kind, text)
    if key.check is not None:
        key.check(name, value)
    return value


def _suggestion(name: str) -> str:
    known = sorted(set(DYNAMIC_KEYS) | KAFKA_BROKER_KEYS)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


def validate(props: Mapping[str, str], per_broker_level: bool) -> dict[str, object]:
    """Check a level's whole set of dynamic configs (``props``: key -> text) as Kafka's
    validateConfigs does; the parsed values, or DynamicConfigError with the first failure's message."""
    names = list(props)
    static = [
        n
        for n in names
        if lookup(n) is None
        and n not in SSL_STORE_KEYS
        and (n in KAFKA_BROKER_KEYS or n in KEYS or n.startswith(DEFAULT_PREFIXES))
    ]
    if static:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {scala_set(static)}")
    unknown = [n for n in names if lookup(n) is None and n not in SSL_STORE_KEYS]
    if unknown:
        raise DynamicConfigError(
            f"Unknown broker configs: {scala_set(unknown)}"
            + (_suggestion(unknown[0]) if len(unknown) == 1 else "")
        )
    refused = [n for n in names if (k := lookup(n)) is not None and k.mode is Mode.REFUSED]
    if refused:
        raise DynamicConfigError(
            f"minikafka cannot update these configs without a restart: {scala_set(refused)}"
        )
    unprefixed = [n for n in names if n in SSL_STORE_KEYS]
    if unprefixed:
        raise DynamicConfigError(
            "These security configs can be dynamically updated only per-listener using the listener"
            f" prefix: {scala_set(unprefixed)}"
        )
    parsed = {}
    for name in names:
        key = lookup(name)
        assert key is not None
        scoped = split_listener_key(name)
        parsed[name] = check_value(scoped[1] if scoped else name, key, props[name])
    if not per_broker_level:
        only_per_broker = [n for n in names if per_broker(n)]
        if only_per_broker:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be specified:"
                f" {scala_set(only_per_broker)}"
            )
    return parsed


def invalid_dynamic(reason: str) -> DynamicConfigError:
    """Kafka's answer when a part of the broker refuses a new configuration (processReconfiguration
    wraps the part's ConfigException as the value of a ConfigException named "Invalid dynamic
    configuration")."""
    return DynamicConfigError(
        f"Invalid value org.apache.kafka.common.config.ConfigException: {reason}"
        " for configuration Invalid dynamic configuration"
    )
