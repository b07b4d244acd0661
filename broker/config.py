"""Broker configuration with Kafka's key names and defaults.

Sources, later ones winning: built-in defaults, a Kafka server.properties file
(`--config`, Java properties syntax: broker/properties.py), environment
variables (`MINIKAFKA_LOG_RETENTION_MS=...`: the key upper-cased with dots as
underscores), command-line flags.

Keys: minikafka's own (`KEYS`, Kafka's names where Kafka has them) are parsed
and typed; Kafka keys that mean something minikafka does differently are mapped
(`listeners`/`advertised.listeners` with `listener.security.protocol.map` and
`controller.listener.names` pick the listeners served and advertised: the
first sets `host`/`port`/`advertised.*`, so command-line flags still override
it, and each further PLAINTEXT listener gets its own socket; Metadata answers
with the addresses of the listener a client came in on and the brokers reach
each other on `inter.broker.listener.name`, the first listener by default);
`log.dir` is `log.dirs`; `broker.id` is `node.id`); every other key Kafka
defines (broker/kafka_keys.py) is accepted and reported as ignored. Tiered
storage's keys and the plugin properties under their prefixes (``rsm.config.``,
``rlmm.config.``, kept as text in `BrokerConfig.plugin_values`) are described
in broker/remote_log_config.py. Only a key Kafka does not know either, or a
value that does not parse, raises `ConfigError`: one line naming the key, with
the closest known key suggested.

This is the static configuration. Kafka's dynamic broker configs change many
keys while the broker runs (broker/dynamic/): what the broker uses is
`Broker.dynamic`'s effective value, which falls back to this one.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.kafka_keys import KAFKA_BROKER_KEYS, is_kafka_key
from broker.properties import (
    PropertiesError,
    client_listeners,
    parse_listeners,
    parse_properties,
    parse_protocol_map,
)
from broker.remote_log_config import (
    REMOTE_LOG_KEYS,
    RLMM_PREFIX_KEY,
    RSM_PREFIX_KEY,
    SYSTEM_ENABLE,
    looks_secret,
    plugin_prefixes,
    strip_prefix,
)


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid."""


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def _int(v: str) -> int:
    return int(v.strip())


def _positive_int(v: str) -> int:
    n = int(v.strip())
    if n < 1:
        raise ValueError("expected a whole number of at least 1")
    return n


def _percentage(v: str) -> int:
    n = int(v.strip())
    if not 0 <= n <= 100:
        raise ValueError("expected a percentage between 0 and 100")
    return n


def _str(v: str) -> str:
    return v.strip()


def _ratio(v: str) -> float:
    n = float(v.strip())
    if not 0.0 <= n <= 1.0:
        raise ValueError("expected a number between 0 and 1")
    return n


_ASSIGNOR_CLASSES = {"UniformAssignor": "uniform", "RangeAssignor": "range"}


def _assignors(v: str) -> str:
    """group.consumer.assignors: names (uniform, range) or Kafka's class names, first is the default;
    kept as the comma-separated short names."""
    names = []
    for item in v.split(","):
        item = item.strip()
        name = _ASSIGNOR_CLASSES.get(item.rpartition(".")[2], item)
        if name not in ("uniform", "range"):
            raise ValueError(f"unknown assignor {item!r} (known: uniform, range)")
        names.append(name)
    if not names:
        raise ValueError("expected at least one assignor")
    return ",".join(names)


_MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


def _migration_policy(v: str) -> str:
    """group.consumer.migration.policy, case-insensitive as Kafka reads it."""
    s = v.strip().lower()
    if s not in _MIGRATION_POLICIES:
        raise ValueError(f"expected one of {', '.join(_MIGRATION_POLICIES)}")
    return s


def parse_ip_overrides(v: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:limit`` pairs, comma-separated (Kafka's CSV map)."""
    out = {}
    for item in v.split(","):
        if not item.strip():
            continue
        host, sep, limit = item.strip().rpartition(":")
        if not sep or not host.strip() or not limit.strip().isdigit():
            raise ValueError(f"expected host:limit pairs, got {item.strip()!r}")
        out[host.strip()] = int(limit)
    return out


def _ip_overrides(v: str) -> str:
    parse_ip_overrides(v)
    return v.strip()


def _timestamp_type(v: str) -> str:
    s = v.strip()
    if s not in ("CreateTime", "LogAppendTime"):
        raise ValueError("expected CreateTime or LogAppendTime")
    return s


def _log_format(v: str) -> str:
    s = v.strip().lower()
    if s not in ("text", "json"):
        raise ValueError("expected text or json")
    return s


def _cleanup_policy(v: str) -> str:
    parts = [p.strip() for p in v.split(",") if p.strip()]  # in the order given, as Kafka keeps it
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError("expected delete, compact or compact,delete")
    return ",".join(parts)


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_AUTHORIZERS = (
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
)


def _mechanisms(v: str) -> str:
    names = [m.strip().upper() for m in v.split(",") if m.strip()]
    unknown = [m for m in names if m not in SASL_MECHANISMS]
    if unknown or not names:
        raise ValueError(f"minikafka supports the SASL mechanisms {', '.join(SASL_MECHANISMS)}")
    return ",".join(names)


REPLICA_SELECTORS = ("org.apache.kafka.common.replica.RackAwareReplicaSelector",)


def _replica_selector(v: str) -> str:
    """replica.selector.class: empty (consumers read from leaders only) or Kafka's rack-aware selector."""
    s = v.strip()
    if s and s not in REPLICA_SELECTORS:
        raise ValueError(f"expected empty (leaders only) or {REPLICA_SELECTORS[0]}")
    return s


def _authorizer(v: str) -> str:
    s = v.strip()
    if s and s not in _AUTHORIZERS:
        raise ValueError(f"expected empty (no authorizer) or one of {', '.join(_AUTHORIZERS)}")
    return s


@dataclass(frozen=True)
class Key:
    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("node.id", _int, 0, "this broker's id"),
        Key("broker.id", _int, 0, "alias of node.id"),
        Key(
            "broker.rack",
            _str,
            "",
            "this broker's rack (empty: none); replicas of new partitions are spread over racks",
        ),
        Key(
            "replica.selector.class",
            _replica_selector,
            "",
            "org.apache.kafka.common.replica.RackAwareReplicaSelector: point consumers that give their "
            "client.rack at an in-sync replica in their rack (empty: they read from the leader)",
        ),
        Key("host", _str, "127.0.0.1", "address to listen on"),
        Key("port", _int, 9092, "port to listen on"),
        Key("advertised.host", _str, "", "host clients are told to connect to (default: host)"),
        Key("advertised.port", _int, 0, "port clients are told to connect to (0: the listening port)"),
        Key("metrics.port", _int, 0, "port of the Prometheus /metrics endpoint (0: off)"),
        Key("log.format", _log_format, "text", "stderr log lines: text or json (one JSON object per line)"),
        Key("metrics.host", _str, "127.0.0.1", "address of the Prometheus endpoint"),
        Key("log.dirs", _str, "./data", "data directory"),
        Key("num.partitions", _int, 1, "partitions of auto-created topics"),
        Key("default.replication.factor", _int, 1, "replication factor of auto-created topics"),
        Key("auto.create.topics.enable", _bool, True, "create topics on first metadata request"),
        Key("log.segment.bytes", _int, 1073741824, "segment size before rolling"),
        Key("log.roll.ms", _int, 604800000, "segment age before rolling"),
        Key("log.index.size.max.bytes", _int, 10485760, "preallocated index size"),
        Key("log.index.interval.bytes", _int, 4096, "bytes between sparse index entries"),
        Key("log.retention.ms", _int, 604800000, "time-based retention (-1: forever)"),
        Key("log.retention.minutes", _int, 10080, "retention in minutes (log.retention.ms wins if set)"),
        Key("log.retention.hours", _int, 168, "retention in hours (minutes and ms win if set)"),
        Key("log.roll.hours", _int, 168, "segment age in hours (log.roll.ms wins if set)"),
        Key("log.retention.bytes", _int, -1, "size-based retention per partition (-1: none)"),
        Key("log.cleanup.policy", _cleanup_policy, "delete", "delete, compact or both"),
        Key("log.message.timestamp.type", _timestamp_type, "CreateTime", "CreateTime or LogAppendTime"),
        Key("log.flush.interval.messages", _int, 2**63 - 1, "messages before a forced fsync"),
        Key("log.flush.interval.ms", _int, 2**63 - 1, "ms before a forced fsync"),
        Key(
            "log.flush.offset.checkpoint.interval.ms",
            _int,
            60000,
            "how often recovery points are checkpointed",
        ),
        Key(
            "log.flush.start.offset.checkpoint.interval.ms",
            _int,
            60000,
            "how often log start offsets are checkpointed",
        ),
        Key("log.retention.check.interval.ms", _int, 300000, "how often retention deletes old segments"),
        Key("log.segment.delete.delay.ms", _int, 60000, "delay before a deleted segment's files are removed"),
        Key("log.cleaner.enable", _bool, True, "run the log cleaner (compaction)"),
        Key(
            "log.cleaner.threads", _int, 1, "logs the cleaner compacts at once (each in a thread of its own)"
        ),
        Key("log.cleaner.backoff.ms", _int, 15000, "cleaner sleep when there is nothing to clean"),
        Key("log.cleaner.dedupe.buffer.size", _int, 134217728, "memory for the cleaner's key -> offset map"),
        Key("log.cleaner.delete.retention.ms", _int, 86400000, "how long tombstones survive cleaning"),
        Key("log.cleaner.min.cleanable.ratio", _ratio, 0.5, "dirty ratio that makes a log cleanable"),
        Key("log.cleaner.min.compaction.lag.ms", _int, 0, "records younger than this are not compacted"),
        Key(
            "producer.id.expiration.ms", _int, 86400000, "idle idempotent producers are forgotten after this"
        ),
        Key("producer.id.expiration.check.interval.ms", _int, 600000, "how often idle producers are expired"),
        Key("message.max.bytes", _int, 1048588, "largest record batch accepted"),
        Key("socket.request.max.bytes", _int, 104857600, "largest request frame accepted"),
        Key("queued.max.requests", _int, 500, "requests queued per connection before reading pauses"),
        Key("connections.max.idle.ms", _int, 600000, "idle connections are closed after this"),
        Key("max.connections", _int, 2147483647, "connections accepted at once; more are closed at once"),
        Key("max.connections.per.ip", _int, 2147483647, "connections accepted at once from one address"),
        Key(
            "max.connections.per.ip.overrides",
            _ip_overrides,
            "",
            "per-address exceptions to max.connections.per.ip: host:limit,host:limit",
        ),
        Key("offsets.topic.num.partitions", _int, 50, "partitions of __consumer_offsets"),
        Key("group.initial.rebalance.delay.ms", _int, 3000, "delay before the first rebalance"),
        Key("group.min.session.timeout.ms", _int, 6000, "smallest session timeout a member may ask for"),
        Key("group.max.session.timeout.ms", _int, 1800000, "largest session timeout a member may ask for"),
        Key("group.max.size", _int, 2147483647, "most members in one group"),
        Key(
            "group.consumer.session.timeout.ms",
            _int,
            45000,
            "consumer-protocol members not heard from for this long are removed",
        ),
        Key(
            "group.consumer.heartbeat.interval.ms",
            _int,
            5000,
            "how often consumer-protocol members heartbeat",
        ),
        Key(
            "group.consumer.assignors",
            _assignors,
            "uniform,range",
            "server-side assignors of consumer-protocol groups; the first is the default",
        ),
        Key("group.consumer.max.size", _int, 2147483647, "most members in one consumer-protocol group"),
        Key(
            "group.consumer.migration.policy",
            _migration_policy,
            "bidirectional",
            "whether a classic group becomes a consumer-protocol group when a KIP-848 member joins "
            "(upgrade), and back when the last one leaves (downgrade)",
        ),
        Key("offset.metadata.max.bytes", _int, 4096, "longest metadata string of an offset commit"),
        Key(
            "offsets.retention.minutes", _int, 10080, "committed offsets of an empty group expire after this"
        ),
        Key("offsets.retention.check.interval.ms", _int, 600000, "how often expired offsets are removed"),
        Key("offsets.topic.segment.bytes", _int, 104857600, "segment size of __consumer_offsets"),
        Key(
            "offsets.commit.timeout.ms",
            _int,
            5000,
            "how long a group or offset write waits for the in-sync replicas before it fails",
        ),
        Key("cluster.id", _str, "", "cluster id (generated and kept in meta.properties if empty)"),
        Key(
            "inter.broker.listener.name",
            _str,
            "",
            "listener brokers reach each other on (default: the first)",
        ),
        Key("zookeeper.connect", _str, "", "ZooKeeper host:port[,...][/chroot]: run as a cluster member"),
        Key("zookeeper.session.timeout.ms", _int, 18000, "ZooKeeper session timeout"),
        Key("zookeeper.connection.timeout.ms", _int, 18000, "how long to wait for ZooKeeper at start"),
        Key("replica.lag.time.max.ms", _int, 30000, "a follower this far behind leaves the ISR"),
        Key(
            "replica.high.watermark.checkpoint.interval.ms",
            _int,
            5000,
            "how often high watermarks are checkpointed",
        ),
        Key("min.insync.replicas", _int, 1, "in-sync replicas an acks=all write needs"),
        Key("offsets.topic.replication.factor", _int, 3, "replicas of __consumer_offsets (cluster mode)"),
        Key("auto.leader.rebalance.enable", _bool, True, "move leadership back to preferred replicas"),
        Key(
            "leader.imbalance.check.interval.seconds",
            _positive_int,
            300,
            "how often the controller checks the leader imbalance",
        ),
        Key(
            "leader.imbalance.per.broker.percentage",
            _percentage,
            10,
            "share of a broker's preferred leaderships held elsewhere that triggers moving them back",
        ),
        Key(
            "unclean.leader.election.enable",
            _bool,
            False,
            "elect an out-of-sync replica when no in-sync one is alive (loses records)",
        ),
        Key("transaction.state.log.num.partitions", _int, 50, "partitions of __transaction_state"),
        Key(
            "transaction.state.log.replication.factor",
            _int,
            3,
            "replicas of __transaction_state (cluster mode)",
        ),
        Key("transaction.state.log.min.isr", _int, 2, "min.insync.replicas of __transaction_state"),
        Key("transaction.state.log.segment.bytes", _int, 104857600, "segment size of __transaction_state"),
        Key("transaction.max.timeout.ms", _int, 900000, "longest transaction timeout a producer may ask for"),
        Key(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _int,
            10000,
            "how often transactions past their timeout are aborted",
        ),
        Key(
            "transactional.id.expiration.ms",
            _int,
            604800000,
            "a transactional id idle this long is forgotten",
        ),
        Key("super.users", _str, "", "principals allowed everything, e.g. User:admin;User:ops"),
        Key(
            "authorizer.class.name", _authorizer, "", "set (to Kafka's authorizer class names) to check ACLs"
        ),
        Key(
            "allow.everyone.if.no.acl.found",
            _bool,
            False,
            "with the authorizer on: allow access to resources that have no ACL",
        ),
        Key(
            "sasl.enabled.mechanisms",
            _mechanisms,
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "SASL mechanisms of SASL listeners (listener.name.<l>.sasl.enabled.mechanisms per listener)",
        ),
        Key(
            "sasl.mechanism.inter.broker.protocol",
            _mechanisms,
            "PLAIN",
            "mechanism brokers authenticate to each other with on a SASL inter-broker listener",
        ),
        Key(
            "connection.failed.authentication.delay.ms",
            _int,
            100,
            "wait before closing a connection whose authentication failed",
        ),
        Key(
            "connections.max.reauth.ms",
            _int,
            0,
            "SASL sessions last this long, then clients re-authenticate (0: forever)",
        ),
        Key(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            _int,
            3600000,
            "how often expired transactional ids are removed",
        ),
        Key("quota.window.num", _int, 11, "samples a client quota's rate is measured over (at least 1)"),
        Key("quota.window.size.seconds", _int, 1, "time span of each client quota sample (at least 1)"),
        *(Key(*spec) for spec in REMOTE_LOG_KEYS),
    )
}


def env_name(key: str) -> str:
    return "MINIKAFKA_" + key.upper().replace(".", "_")


# Security keys that environment variables may set too (listener-prefixed ones come from files only).
_ENV_SECURITY_KEYS = tuple(
    sorted(k for k in KAFKA_BROKER_KEYS if k.startswith(("ssl.", "sasl.")) and k not in KEYS)
)

# Kafka keys minikafka reads but maps onto its own (listener selection, data directory).
MAPPED_KEYS = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "controller.listener.names",
        "log.dir",
    }
)


def _suggestion(key: str) -> str:
    close = difflib.get_close_matches(key, sorted(set(KEYS) | KAFKA_BROKER_KEYS), n=1, cutoff=0.75)
    return f"; did you mean {close[0]}?" if close else ""


@dataclass(frozen=True, slots=True)
class ServedListener:
    """A socket the broker listens on, and the address it tells clients that came in through it."""

    name: str
    host: str
    port: int  # 0: any free port
    advertised_host: str
    advertised_port: int  # 0: the bound port
    protocol: str = "PLAINTEXT"  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL


@dataclass(slots=True)
class _Listeners:
    """What `listeners` said beyond the first listener (which lives in host/port/advertised.*)."""

    first_name: str = "PLAINTEXT"
    first_protocol: str = "PLAINTEXT"
    more: tuple[ServedListener, ...] = ()


SECURITY_PREFIXES = ("ssl.", "sasl.", "listener.name.")
"""Kafka keys kept verbatim (`BrokerConfig.security_values`) for the listeners' TLS and SASL settings."""


class BrokerConfig:
    """Effective broker configuration: typed values plus where each came from.

    ``ignored``: Kafka keys that were given but that minikafka does not use, with
    their sources (logged once at start-up, shown by ``--print-config``);
    ``ignored_values`` their values as given (dynamic broker configs describe
    them as static, broker/dynamic/configs.py). ``plugin_values``: the tiered
    storage plugins' properties (full keys, prefixes included) as given, and
    ``plugin_sources`` where each came from.
    """

    def __init__(
        self,
        values: dict[str, Any],
        sources: dict[str, str],
        ignored: dict[str, str] | None = None,
        listeners: _Listeners | None = None,
        security_values: dict[str, str] | None = None,
        ignored_values: dict[str, str] | None = None,
        plugin_values: dict[str, str] | None = None,
        plugin_sources: dict[str, str] | None = None,
    ) -> None:
        self.values = values
        self.sources = sources
        self._listeners = listeners or _Listeners()
        # ssl.*, sasl.* and listener.name.* keys as given (broker/security/listener.py reads them).
        self.security_values = security_values or {}
        secured = any(lst.protocol != "PLAINTEXT" for lst in self.served_listeners())
        self.ignored = {
            k: src for k, src in (ignored or {}).items() if not (secured and k.startswith(SECURITY_PREFIXES))
        }
        self.ignored_values = ignored_values or {}
        self.plugin_values = plugin_values or {}
        self.plugin_sources = plugin_sources or {}

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def node_id(self) -> int:
        return int(self.values["node.id"])

    @property
    def data_dir(self) -> Path:
        return Path(self.values["log.dirs"].split(",")[0])

    @property
    def advertised_host(self) -> str:
        return self.values["advertised.host"] or self.values["host"]

    def served_listeners(self) -> list[ServedListener]:
        """Every listener to open, the first one (``host``/``port``) first."""
        first = ServedListener(
            self._listeners.first_name,
            self.values["host"],
            int(self.values["port"]),
            self.advertised_host,
            int(self.values["advertised.port"]),
            self._listeners.first_protocol,
        )
        return [first, *self._listeners.more]

    @property
    def remote_log_storage_system_enable(self) -> bool:
        """Tiered storage's switch (``remote.log.storage.system.enable``)."""
        return bool(self.values[SYSTEM_ENABLE])

    def prefixed(self, prefix: str) -> dict[str, str]:
        """The plugin properties whose key starts with ``prefix``, prefix cut off, values as given."""
        return strip_prefix(self.plugin_values, prefix)

    def remote_storage_manager_configs(self) -> dict[str, str]:
        """The remote storage manager's properties (``rsm.config.*``, or whatever
        ``remote.log.storage.manager.impl.prefix`` says), prefix cut off:
        ``{"storage.s3.bucket.name": ...}``."""
        return self.prefixed(str(self.values[RSM_PREFIX_KEY]))

    def remote_log_metadata_manager_configs(self) -> dict[str, str]:
        """The remote log metadata manager's properties (``rlmm.config.*``, or whatever
        ``remote.log.metadata.manager.impl.prefix`` says), prefix cut off."""
        return self.prefixed(str(self.values[RLMM_PREFIX_KEY]))

    @property
    def inter_broker_listener(self) -> str:
        return self.values["inter.broker.listener.name"].upper() or self._listeners.first_name

    @classmethod
    def load(
        cls,
        file: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> BrokerConfig:
        """Defaults, then the file, then ``MINIKAFKA_*`` environment variables, then ``overrides``.

        Raises `ConfigError` (one line) for a key neither minikafka nor Kafka
        defines (nor a tiered storage plugin's prefix covers), a value that does
        not parse, or listeners with no PLAINTEXT client listener.
        """
        values = {k.name: k.default for k in KEYS.values()}
        sources = {k.name: "default" for k in KEYS.values()}
        mapped: dict[str, tuple[str, str]] = {}  # Kafka key -> (raw value, source)
        ignored: dict[str, str] = {}
        ignored_values: dict[str, str] = {}
        security_values: dict[str, str] = {}
        # keys no table knows, in the order given: a plugin's property if a plugin prefix covers it
        # (the prefixes are keys themselves, so this is known only at the end), else a mistake
        unknown: dict[str, tuple[str, str]] = {}
        listeners = _Listeners()

        def apply(key: str, raw: Any, source: str) -> None:
            if key in MAPPED_KEYS:
                mapped[key] = (str(raw), source)
                return
            if key not in KEYS:
                if is_kafka_key(key):
                    ignored[key] = source
                    ignored_values[key] = str(raw)
                    if key.startswith(SECURITY_PREFIXES):
                        security_values[key] = str(raw)
                    return
                unknown[key] = (str(raw), source)
                return
            try:
                value = KEYS[key].parse(raw) if isinstance(raw, str) else raw
            except ValueError as exc:
                raise ConfigError(f"invalid value {raw!r} for {key!r} (from {source}): {exc}") from None
            if key == "broker.id":
                key = "node.id"
            values[key] = value
            sources[key] = source

        if file is not None:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from None
            except UnicodeDecodeError as exc:
                raise ConfigError(f"config file {file} is not UTF-8 text: {exc.reason}") from None
            try:
                entries = parse_properties(text, str(file))
            except PropertiesError as exc:
                raise ConfigError(str(exc)) from None
            for key, raw in entries.items():
                apply(key, raw, str(file))
            _resolve(mapped, apply, listeners)
        mapped.clear()
        for key in (*KEYS, *sorted(MAPPED_KEYS), *_ENV_SECURITY_KEYS):
            name = env_name(key)
            if env is not None and name in env:
                apply(key, env[name], f"env {name}")
        for prefix in plugin_prefixes(values):
            for name, raw in sorted(_plugin_env(env or {}, prefix).items()):
                unknown[name] = (raw, f"env {env_name(name)}")
        _resolve(mapped, apply, listeners)
        for key, value in (overrides or {}).items():
            if value is not None:
                apply(key, value, "command line")
        prefixes = plugin_prefixes(values)
        plugin_values, plugin_sources = {}, {}
        for key, (raw, source) in unknown.items():
            if not key.startswith(prefixes):
                raise ConfigError(f"unknown configuration key {key!r} (from {source}){_suggestion(key)}")
            plugin_values[key], plugin_sources[key] = raw, source
        config = cls(
            values,
            sources,
            ignored,
            listeners,
            security_values,
            ignored_values,
            plugin_values,
            plugin_sources,
        )
        names = [lst.name for lst in config.served_listeners()]
        if config.inter_broker_listener not in names:
            raise ConfigError(
                f"inter.broker.listener.name {config.inter_broker_listener} is not a served listener"
                f" ({', '.join(names)}; from {sources['inter.broker.listener.name']})"
            )
        return config

    def describe(self) -> str:
        """The effective configuration, one `key=value  # source` line per key, then the ignored keys."""
        width = max(len(k) for k in self.values)
        lines = [f"{k:<{width}} = {self.values[k]!s}  # {self.sources[k]}" for k in sorted(self.values)]
        lines += [
            f"{'listener ' + lst.name:<{width}} = {lst.host}:{lst.port}"
            f" (advertised {lst.advertised_host}:{lst.advertised_port or lst.port})"
            for lst in self.served_listeners()
        ]
        lines += [
            f"{k:<{width}} = {'[hidden]' if looks_secret(k) else v}  # {self.plugin_sources[k]}"
            for k, v in sorted(self.plugin_values.items())
        ]
        lines += [
            f"{k:<{width}}   (a Kafka key minikafka ignores)  # {src}"
            for k, src in sorted(self.ignored.items())
        ]
        return "\n".join(lines)


def _plugin_env(env: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Plugin properties under ``prefix`` given as environment variables:
    ``MINIKAFKA_RSM_CONFIG_STORAGE_S3_REGION`` is ``rsm.config.storage.s3.region`` (lower-cased,
    ``_`` read as ``.``)."""
    start = env_name(prefix)
    return {
        prefix + name[len(start) :].lower().replace("_", "."): value
        for name, value in env.items()
        if name.startswith(start) and len(name) > len(start)
    }


def _resolve(
    mapped: dict[str, tuple[str, str]], apply: Callable[[str, Any, str], None], listeners: _Listeners
) -> None:
    """`_apply_mapped` with listener errors as one-line `ConfigError`s naming the source."""
    try:
        _apply_mapped(mapped, apply, listeners)
    except PropertiesError as exc:
        source = next(iter(mapped.values()))[1] if mapped else "defaults"
        raise ConfigError(f"{exc} (from {source})") from None


def _apply_mapped(
    mapped: dict[str, tuple[str, str]], apply: Callable[[str, Any, str], None], listeners: _Listeners
) -> None:
    """Kafka's listener and data directory keys onto ``host``/``port``/``log.dirs`` and ``listeners``."""
    if "log.dir" in mapped and "log.dirs" not in mapped:
        apply("log.dirs", *mapped["log.dir"])
    if "listeners" not in mapped:
        if "advertised.listeners" in mapped:
            first = parse_listeners(mapped["advertised.listeners"][0], "advertised.listeners")
            if first:
                apply("advertised.host", first[0].host, mapped["advertised.listeners"][1])
                apply("advertised.port", str(first[0].port), mapped["advertised.listeners"][1])
        return
    raw, source = mapped["listeners"]
    protocols = parse_protocol_map(mapped.get("listener.security.protocol.map", ("", ""))[0])
    controllers = {
        n.strip().upper()
        for n in mapped.get("controller.listener.names", ("", ""))[0].split(",")
        if n.strip()
    }
    served_with = client_listeners(parse_listeners(raw, "listeners"), controllers, protocols)
    served = [lst for lst, _ in served_with]
    if len({lst.name for lst in served}) < len(served):
        raise PropertiesError("listeners: each listener needs a name of its own")
    advertised = {
        adv.name: adv
        for adv in parse_listeners(mapped.get("advertised.listeners", ("", ""))[0], "advertised.listeners")
    }
    chosen = served[0]
    apply("host", chosen.host or "0.0.0.0", source)
    apply("port", str(chosen.port), source)
    if chosen.name in advertised:
        adv_source = mapped["advertised.listeners"][1]
        apply("advertised.host", advertised[chosen.name].host, adv_source)
        apply("advertised.port", str(advertised[chosen.name].port), adv_source)
    more = []
    for lst, protocol in served_with[1:]:
        adv = advertised.get(lst.name)
        host = lst.host or "0.0.0.0"
        more.append(
            ServedListener(
                lst.name,
                host,
                lst.port,
                (adv.host if adv else "") or host,
                adv.port if adv else 0,
                protocol,
            )
        )
    listeners.first_name, listeners.first_protocol = chosen.name, served_with[0][1]
    listeners.more = tuple(more)
