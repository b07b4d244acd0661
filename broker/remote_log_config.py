"""Tiered storage's broker keys (KIP-405), with the names, defaults and validators of Kafka's
RemoteLogManagerConfig.

`REMOTE_LOG_KEYS` joins broker/config.py's `KEYS` (so the keys are typed,
documented and described like every other; a bad value stops the broker with
one line). ``remote.log.storage.system.enable`` is the switch: off (the
default), nothing is tiered and a topic cannot ask for it. The broker defaults
``log.local.retention.ms`` / ``.bytes`` supply the topic keys
``local.retention.*`` (storage/config.py ``BROKER_CONFIG_NAMES``); with the
switch on they must fit ``log.retention.*`` or the broker does not start
(storage/remote_config.py `validate_broker_defaults`). Five keys can also
change while the broker runs, as in Kafka (broker/dynamic/keys.py: the fetch
wait, the list-offsets timeout, the index cache size and the two rates): read
them from ``Broker.dynamic``.

Plugin properties: every property whose key starts with the value of
``remote.log.storage.manager.impl.prefix`` (``rsm.config.``) or
``remote.log.metadata.manager.impl.prefix`` (``rlmm.config.``) is accepted
whatever follows the prefix, and handed through as text, prefix stripped, as
Kafka's ``originalsWithPrefix`` does: `BrokerConfig.remote_storage_manager_configs()`
and `BrokerConfig.remote_log_metadata_manager_configs()` (``rsm.config.storage.s3.bucket.name=b``
arrives as ``{"storage.s3.bucket.name": "b"}``). They come from the properties
file, the command line, or ``MINIKAFKA_RSM_CONFIG_*`` / ``MINIKAFKA_RLMM_CONFIG_*``
environment variables (lower-cased, ``_`` read as ``.``: keys with an
underscore of their own need the file). They are static: a dynamic change is
refused. DescribeConfigs never shows their values (sensitive, as Kafka treats
every key whose type it does not know), and ``--print-config`` hides those that
look secret (`looks_secret`: ``...secret.access.key``, ``...session.token``,
passwords).

Kafka's keys left out (listed at start-up as ignored): the two ``class.path``
keys (Java class loaders) and the copy/fetch quota windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from broker.config_types import BOOLEAN, DOUBLE, INT, LONG, STRING

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1

SYSTEM_ENABLE = "remote.log.storage.system.enable"
RSM_PREFIX_KEY = "remote.log.storage.manager.impl.prefix"
RLMM_PREFIX_KEY = "remote.log.metadata.manager.impl.prefix"
DEFAULT_PREFIXES = ("rsm.config.", "rlmm.config.")
TOPIC_BASED_RLMM = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
_SECRET_SUFFIXES = ("secret.access.key", "session.token", "password", ".secret")


def _boolean(v: str) -> bool:
    """ConfigDef's BOOLEAN: true or false, any case."""
    s = v.strip().lower()
    if s not in ("true", "false"):
        raise ValueError("expected true or false")
    return s == "true"


def _non_empty(v: str) -> str:
    """ConfigDef.NonEmptyString."""
    s = v.strip()
    if not s:
        raise ValueError("String must be non-empty")
    return s


def _whole(v: str, maximum: int) -> int:
    try:
        n = int(v.strip())
    except ValueError:
        raise ValueError("expected a whole number") from None
    if n > maximum:
        raise ValueError(f"expected at most {maximum}")
    return n


def _at_least(minimum: int, maximum: int = INT64_MAX) -> Callable[[str], int]:
    """ConfigDef's Range.atLeast over an INT (``maximum`` INT32_MAX) or a LONG."""

    def parse(v: str) -> int:
        n = _whole(v, maximum)
        if n < minimum:
            raise ValueError(f"Value must be at least {minimum}")
        return n

    return parse


def _pool_size(v: str) -> int:
    """The copier and expiration pools: -1 (use remote.log.manager.thread.pool.size) or at least 1."""
    n = _whole(v, INT32_MAX)
    if n < -1 or n == 0:
        raise ValueError("Value can be -1 or greater than 0")
    return n


def _jitter(v: str) -> float:
    try:
        n = float(v.strip())
    except ValueError:
        raise ValueError("expected a number") from None
    if not 0.0 <= n <= 0.5:
        raise ValueError("Value must be between 0 and 0.5")
    return n


_INT = _at_least(1, INT32_MAX)
_LONG = _at_least(1)

# (name, Kafka's ConfigType, parse, default, what it does): Kafka's defaults and validators.
_TABLE: tuple[tuple[str, int, Callable[[str], Any], Any, str], ...] = (
    (
        SYSTEM_ENABLE,
        BOOLEAN,
        _boolean,
        False,
        "tiered storage on this broker (topics opt in with remote.storage.enable)",
    ),
    (
        "remote.log.storage.manager.class.name",
        STRING,
        _non_empty,
        "",
        "the RemoteStorageManager implementation, as a Kafka class name (empty: unset)",
    ),
    (
        RSM_PREFIX_KEY,
        STRING,
        _non_empty,
        DEFAULT_PREFIXES[0],
        "properties with this prefix configure remote storage",
    ),
    (
        "remote.log.metadata.manager.class.name",
        STRING,
        _non_empty,
        TOPIC_BASED_RLMM,
        "the RemoteLogMetadataManager implementation (Kafka's default: segment metadata in __remote_log_metadata)",
    ),
    (
        RLMM_PREFIX_KEY,
        STRING,
        _non_empty,
        DEFAULT_PREFIXES[1],
        "properties with this prefix configure the remote log metadata manager",
    ),
    (
        "remote.log.metadata.manager.listener.name",
        STRING,
        _non_empty,
        "",
        "listener the metadata manager's clients reach this broker on (empty: unset)",
    ),
    (
        "remote.log.metadata.custom.metadata.max.bytes",
        INT,
        _at_least(0, INT32_MAX),
        128,
        "largest custom metadata a remote storage plugin may return for a segment",
    ),
    (
        "remote.log.index.file.cache.total.size.bytes",
        LONG,
        _LONG,
        1073741824,
        "disk space for indexes fetched from remote storage",
    ),
    ("remote.log.manager.thread.pool.size", INT, _INT, 10, "threads of the remote log manager's tasks"),
    (
        "remote.log.manager.copier.thread.pool.size",
        INT,
        _pool_size,
        -1,
        "threads that copy segments to remote storage (-1: remote.log.manager.thread.pool.size)",
    ),
    (
        "remote.log.manager.expiration.thread.pool.size",
        INT,
        _pool_size,
        -1,
        "threads that delete expired remote segments (-1: remote.log.manager.thread.pool.size)",
    ),
    (
        "remote.log.manager.task.interval.ms",
        LONG,
        _LONG,
        30000,
        "interval of the copy and expiration tasks of each tiered partition",
    ),
    (
        "remote.log.manager.task.retry.backoff.ms",
        LONG,
        _LONG,
        500,
        "first wait before a failed task is retried",
    ),
    (
        "remote.log.manager.task.retry.backoff.max.ms",
        LONG,
        _LONG,
        30000,
        "longest wait between retries of a failed task (the wait doubles up to it)",
    ),
    (
        "remote.log.manager.task.retry.jitter",
        DOUBLE,
        _jitter,
        0.2,
        "random share (0-0.5) added to retry waits",
    ),
    ("remote.log.reader.threads", INT, _INT, 10, "threads that read from remote storage for fetches"),
    (
        "remote.log.reader.max.pending.tasks",
        INT,
        _INT,
        100,
        "remote reads queued at most; beyond, fetches from remote storage answer an error",
    ),
    ("remote.fetch.max.wait.ms", INT, _INT, 500, "longest a fetch waits for data from remote storage"),
    (
        "remote.log.manager.copy.max.bytes.per.second",
        LONG,
        _LONG,
        INT64_MAX,
        "bytes per second all copies to remote storage may use together",
    ),
    (
        "remote.log.manager.fetch.max.bytes.per.second",
        LONG,
        _LONG,
        INT64_MAX,
        "bytes per second all reads from remote storage may use together",
    ),
    (
        "remote.list.offsets.request.timeout.ms",
        LONG,
        _LONG,
        30000,
        "longest a ListOffsets waits for remote storage when the request gives no timeout",
    ),
    (
        "log.local.retention.ms",
        LONG,
        _at_least(-2),
        -2,
        "local.retention.ms of tiered topics without one (-2: log.retention.ms)",
    ),
    (
        "log.local.retention.bytes",
        LONG,
        _at_least(-2),
        -2,
        "local.retention.bytes of tiered topics without one (-2: log.retention.bytes)",
    ),
)

REMOTE_LOG_KEYS: tuple[tuple[str, Callable[[str], Any], Any, str], ...] = tuple(
    (name, parse, default, doc) for name, _, parse, default, doc in _TABLE
)
"""(name, parse, default, doc) of each key, for broker/config.py's `Key`."""

KINDS: dict[str, int] = {name: kind for name, kind, *_ in _TABLE}
"""Kafka's ConfigType of each key (DescribeConfigs' config_type)."""


def plugin_prefixes(values: Mapping[str, Any]) -> tuple[str, str]:
    """The remote storage manager's and the metadata manager's property prefixes in ``values``
    (a broker's typed values)."""
    return (
        str(values.get(RSM_PREFIX_KEY, DEFAULT_PREFIXES[0])),
        str(values.get(RLMM_PREFIX_KEY, DEFAULT_PREFIXES[1])),
    )


def strip_prefix(values: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The entries of ``values`` whose key starts with ``prefix``, the prefix cut off (Kafka's
    originalsWithPrefix)."""
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix) and len(k) > len(prefix)}


def looks_secret(name: str) -> bool:
    """Whether a plugin property's name says it holds a secret (AWS keys and tokens, passwords)."""
    return name.lower().endswith(_SECRET_SUFFIXES)
