"""Client configuration with Kafka's key names, validated when a client is built.

`producer_config`, `consumer_config` and `admin_config` take a dict of Kafka
keys (``{"bootstrap.servers": "host:9092", "linger.ms": 5}``) and/or keyword
arguments with underscores (``linger_ms=5``), and return a plain dict holding
every key of that client with its normalized value:

- integers and booleans may be given as strings (``"100"``, ``"true"``), as in
  a properties file;
- ``acks`` becomes -1, 0 or 1 (``"all"`` is -1);
- ``partition.assignment.strategy`` becomes a list of assignor names
  (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``; Java class
  names are accepted);
- ``bootstrap.servers`` becomes a list of (host, port) pairs.

An unknown key or a bad value raises `ConfigError` naming the key, the value
and what was expected. Defaults are Kafka's (Java client 4.x).
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from client.errors import ConfigError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
_JAVA_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Option:
    """One configuration key: its kind, default and bounds."""

    name: str
    kind: str  # int | bool | str | choice | servers | assignors | callable | acks
    default: Any
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False


def _opts(*options: Option) -> dict[str, Option]:
    return {o.name: o for o in options}


_COMMON = _opts(
    Option("bootstrap.servers", "servers", "localhost:9092"),
    Option("client.id", "str", None, nullable=True),
    Option("request.timeout.ms", "int", 30000, 1, INT32_MAX),
    Option("retry.backoff.ms", "int", 100, 0, INT32_MAX),
    Option("retry.backoff.max.ms", "int", 1000, 0, INT32_MAX),
    Option("reconnect.backoff.ms", "int", 50, 0, INT32_MAX),
    Option("reconnect.backoff.max.ms", "int", 1000, 0, INT32_MAX),
    Option("socket.connection.setup.timeout.ms", "int", 10000, 1, INT32_MAX),
    Option("metadata.max.age.ms", "int", 300000, 0, INT32_MAX),
    Option("connections.max.idle.ms", "int", 540000, -1, INT64_MAX),
    # Security (client/security.py): librdkafka's names, and Java's where they differ.
    Option(
        "security.protocol", "choice", "plaintext", choices=("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
    ),
    Option("sasl.mechanism", "choice", "plain", choices=("plain", "scram-sha-256", "scram-sha-512")),
    Option(
        "sasl.mechanisms", "choice", None, choices=("plain", "scram-sha-256", "scram-sha-512"), nullable=True
    ),
    Option("sasl.username", "str", None, nullable=True),
    Option("sasl.password", "str", None, nullable=True),
    Option("sasl.jaas.config", "str", None, nullable=True),
    Option("ssl.ca.location", "str", None, nullable=True),
    Option("ssl.certificate.location", "str", None, nullable=True),
    Option("ssl.key.location", "str", None, nullable=True),
    Option("ssl.key.password", "str", None, nullable=True),
    Option("ssl.truststore.location", "str", None, nullable=True),
    Option("ssl.keystore.location", "str", None, nullable=True),
    Option("ssl.endpoint.identification.algorithm", "str", "https", nullable=True),
)

PRODUCER_OPTIONS = {
    **_COMMON,
    **_opts(
        Option("acks", "acks", -1),
        Option("linger.ms", "int", 5, 0, INT32_MAX),
        Option("batch.size", "int", 16384, 0, INT32_MAX),
        Option("buffer.memory", "int", 33554432, 0, INT64_MAX),
        Option("max.block.ms", "int", 60000, 0, INT64_MAX),
        Option("max.request.size", "int", 1048576, 1, INT32_MAX),
        Option("compression.type", "choice", "none", choices=COMPRESSION_TYPES),
        Option("enable.idempotence", "bool", True),
        Option("max.in.flight.requests.per.connection", "int", 5, 1, INT32_MAX),
        Option("retries", "int", INT32_MAX, 0, INT32_MAX),
        Option("delivery.timeout.ms", "int", 120000, 1, INT32_MAX),
        Option("partitioner.ignore.keys", "bool", False),
        Option("transaction.timeout.ms", "int", 60000, 1, INT32_MAX),
        Option("transactional.id", "str", None, nullable=True),
        Option("key.serializer", "callable", None, nullable=True),
        Option("value.serializer", "callable", None, nullable=True),
    ),
}

CONSUMER_OPTIONS = {
    **_COMMON,
    **_opts(
        Option("group.id", "str", None, nullable=True),
        Option("group.instance.id", "str", None, nullable=True),
        Option("auto.offset.reset", "choice", "latest", choices=("earliest", "latest", "none")),
        Option("enable.auto.commit", "bool", True),
        Option("auto.commit.interval.ms", "int", 5000, 0, INT32_MAX),
        Option("session.timeout.ms", "int", 45000, 1, INT32_MAX),
        Option("heartbeat.interval.ms", "int", 3000, 1, INT32_MAX),
        Option("max.poll.interval.ms", "int", 300000, 1, INT32_MAX),
        Option("max.poll.records", "int", 500, 1, INT32_MAX),
        Option("fetch.min.bytes", "int", 1, 0, INT32_MAX),
        Option("fetch.max.bytes", "int", 52428800, 0, INT32_MAX),
        Option("fetch.max.wait.ms", "int", 500, 0, INT32_MAX),
        Option("max.partition.fetch.bytes", "int", 1048576, 0, INT32_MAX),
        Option("partition.assignment.strategy", "assignors", ["range", "cooperative-sticky"]),
        Option("group.protocol", "choice", "classic", choices=("classic", "consumer")),
        Option("group.remote.assignor", "str", None, nullable=True),
        Option(
            "isolation.level", "choice", "read_uncommitted", choices=("read_uncommitted", "read_committed")
        ),
        Option("check.crcs", "bool", True),
        Option("exclude.internal.topics", "bool", True),
        Option("allow.auto.create.topics", "bool", True),
        Option("default.api.timeout.ms", "int", 60000, 0, INT32_MAX),
        Option("key.deserializer", "callable", None, nullable=True),
        Option("value.deserializer", "callable", None, nullable=True),
    ),
}

ADMIN_OPTIONS = {
    **_COMMON,
    **_opts(
        Option("default.api.timeout.ms", "int", 60000, 0, INT32_MAX),
        Option("retries", "int", INT32_MAX, 0, INT32_MAX),
    ),
}

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_HOST_PORT = re.compile(r"^\[?(?P<host>[^\[\]]+?)\]?(?::(?P<port>\d+))?$")


def parse_servers(value: object) -> list[tuple[str, int]]:
    """``"h1:9092,h2"`` (or a list of such strings) -> [(h1, 9092), (h2, 9092)]; ValueError if malformed."""
    items: list[str]
    if isinstance(value, str):
        items = [s.strip() for s in value.split(",") if s.strip()]
    elif isinstance(value, list | tuple):
        items = [str(s).strip() for s in value]
    else:
        raise ValueError("expected 'host:port[,host:port...]'")
    if not items:
        raise ValueError("expected at least one host:port")
    out = []
    for item in items:
        m = _HOST_PORT.match(item)
        if m is None:
            raise ValueError(f"{item!r} is not host:port")
        port = int(m.group("port") or 9092)
        if not 0 < port < 65536:
            raise ValueError(f"port {port} out of range")
        out.append((m.group("host"), port))
    return out


def _convert(opt: Option, value: Any) -> Any:
    """The normalized value, or ValueError with what was expected."""
    if value is None:
        if opt.nullable:
            return None
        raise ValueError("a value is required")
    kind = opt.kind
    if kind == "int":
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise ValueError("expected an integer") from None
        if not isinstance(value, int):
            raise ValueError("expected an integer")
        if opt.minimum is not None and value < opt.minimum:
            raise ValueError(f"expected an integer >= {opt.minimum}")
        if opt.maximum is not None and value > opt.maximum:
            raise ValueError(f"expected an integer <= {opt.maximum}")
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError("expected true or false")
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError("expected a string")
        if not value and not opt.nullable:
            raise ValueError("expected a non-empty string")
        return value
    if kind == "choice":
        text = str(value).strip().lower()
        if text not in opt.choices:
            raise ValueError(f"expected one of {', '.join(opt.choices)}")
        return text
    if kind == "acks":
        text = str(value).strip().lower()
        mapping = {"all": -1, "-1": -1, "0": 0, "1": 1}
        if text not in mapping:
            raise ValueError("expected all, -1, 0 or 1")
        return mapping[text]
    if kind == "servers":
        return parse_servers(value)
    if kind == "assignors":
        names = [s.strip() for s in value.split(",")] if isinstance(value, str) else list(value)
        out = []
        for name in names:
            name = _JAVA_ASSIGNORS.get(str(name), str(name)).lower()
            if name not in ASSIGNORS:
                raise ValueError(f"unknown assignor {name!r}; expected {', '.join(ASSIGNORS)}")
            if name not in out:
                out.append(name)
        if not out:
            raise ValueError("expected at least one assignor")
        return out
    if kind == "callable":
        if not callable(value):
            raise ValueError("expected a callable")
        return value
    raise AssertionError(kind)


def _build(
    client: str,
    options: Mapping[str, Option],
    config: Mapping[str, Any] | None,
    kwargs: Mapping[str, Any],
) -> tuple[dict[str, Any], set[str]]:
    given: dict[str, Any] = {}
    for key, value in (config or {}).items():
        given[str(key)] = value
    for key, value in kwargs.items():
        given[key.replace("_", ".")] = value
    out: dict[str, Any] = {}
    for key, value in given.items():
        opt = options.get(key)
        if opt is None:
            hint = difflib.get_close_matches(key, options, n=1)
            suffix = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ConfigError(f"unknown {client} configuration key {key!r}{suffix}")
        try:
            out[key] = _convert(opt, value)
        except ValueError as exc:
            raise ConfigError(f"invalid value {value!r} for {key!r}: {exc}") from None
    explicit = set(out)
    for name, opt in options.items():
        if name not in out:
            out[name] = _convert(opt, opt.default) if opt.default is not None else None
    return out, explicit


_client_ids = itertools.count(1)


def _default_client_id(out: dict[str, Any], prefix: str) -> None:
    """Kafka's client.id default: ``producer-N``, ``consumer-<group>-N``, ``adminclient-N``."""
    if out["client.id"] is None:
        out["client.id"] = f"{prefix}-{next(_client_ids)}"


def producer_config(config: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Validated producer settings; idempotence is on unless acks/retries/in-flight rule it out.

    A transactional.id makes idempotence (and so acks=all) mandatory: settings
    that contradict it raise `ConfigError`, as in Kafka's Java producer.
    """
    out, explicit = _build("producer", PRODUCER_OPTIONS, config, kwargs)
    _default_client_id(out, "producer")
    idem_explicit = "enable.idempotence" in explicit and out["enable.idempotence"]
    conflicts = []
    if out["acks"] != -1:
        conflicts.append("acks=all")
    if out["max.in.flight.requests.per.connection"] > 5:
        conflicts.append("max.in.flight.requests.per.connection <= 5")
    if out["retries"] == 0:
        conflicts.append("retries > 0")
    if out["transactional.id"] is not None:
        if not out["transactional.id"]:
            raise ConfigError(
                "transactional.id must not be empty (leave it unset for a non-transactional producer)"
            )
        if "enable.idempotence" in explicit and not out["enable.idempotence"]:
            raise ConfigError("transactional.id requires enable.idempotence=true")
        if conflicts:
            raise ConfigError(f"transactional.id requires {' and '.join(conflicts)}")
        out["enable.idempotence"] = True
    if conflicts:
        if idem_explicit:
            raise ConfigError(f"enable.idempotence=true requires {' and '.join(conflicts)}")
        out["enable.idempotence"] = False
    if {"delivery.timeout.ms", "linger.ms", "request.timeout.ms"} & explicit and out[
        "delivery.timeout.ms"
    ] < out["linger.ms"] + out["request.timeout.ms"]:
        raise ConfigError("delivery.timeout.ms must be >= linger.ms + request.timeout.ms")
    return out


def consumer_config(config: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Validated consumer settings; without group.id auto-commit is off (and may not be turned on)."""
    out, explicit = _build("consumer", CONSUMER_OPTIONS, config, kwargs)
    _default_client_id(out, f"consumer-{out['group.id']}" if out["group.id"] else "consumer")
    if out["group.id"] is None:
        if "enable.auto.commit" in explicit and out["enable.auto.commit"]:
            raise ConfigError("enable.auto.commit=true requires a group.id")
        out["enable.auto.commit"] = False
        if out["group.instance.id"] is not None:
            raise ConfigError("group.instance.id requires a group.id")
    if out["heartbeat.interval.ms"] >= out["session.timeout.ms"]:
        raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
    return out


def admin_config(config: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Validated admin client settings."""
    out, _ = _build("admin", ADMIN_OPTIONS, config, kwargs)
    _default_client_id(out, "adminclient")
    return out


Serializer = Callable[[Any], bytes | None]
