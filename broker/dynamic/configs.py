"""`DynamicBrokerConfigs`: the broker's effective configuration as dynamic broker configs change it.

Precedence, as Kafka's DynamicBrokerConfig: a key's dynamic per-broker value
(``/config/brokers/<id>``), else its dynamic cluster default
(``/config/brokers/<default>``), else its static value (server.properties,
``MINIKAFKA_*`` environment, flags), else its default. A key set at a level
hides its synonyms below (a dynamic ``log.retention.ms`` beats a static
``log.retention.hours``; deleting it brings the hours back). The replication
throttle rates have no static value (Kafka reads them from the two dynamic
levels only, BrokerConfigHandler).

What other parts use (all on the event loop):

- `value(key) -> str | None`: the effective value as text (None: unset with no
  default); `int_value`, `float_value`, `bool_value` parse it.
- `leader_replication_throttled_rate` / `follower_replication_throttled_rate`:
  bytes per second as ints; ``LONG_MAX`` (Kafka's default, 9223372036854775807)
  means unthrottled.
- `on_change`: callbacks ``(changed keys) -> None``, run after the effective
  values changed (an alteration through this broker, a change notification in
  a cluster, an edited file on a single broker), with the keys whose effective
  value changed. A callback that raises is logged and the others still run.
- `checks`: callables ``(effective, changed) -> None`` that refuse a proposed
  change with `keys.DynamicConfigError` (Kafka's validateReconfiguration of the
  part concerned), run on every alteration before it is stored.

Alterations (`prepare` then `commit`, broker/handlers/alter_configs.py): the
level's current set is read from where it is kept (ZooKeeper in a cluster, so
a change made through another broker is not lost), changed, checked
(broker/dynamic/keys.py, then `checks`), and written back: conditionally on the
znode's version, re-read and re-applied on a conflict. The broker that wrote
it applies it at once; the others on the change notification.

Kept current by `start`: in a cluster, both levels are read again whenever a
child appears under ``/config/changes`` (and every ``RELOAD_S``); on one broker
when the file changes on disk. Entries Kafka would ignore (static keys, bad
values, per-broker keys at the default level, passwords that do not decode)
are dropped with an error line, as Kafka's fromPersistentProps does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from broker.cluster.zk.session import log_refresh_failure
from broker.config import KEYS, BrokerConfig, ConfigError
from broker.dynamic import keys, store
from broker.dynamic.passwords import PasswordEncoder, PasswordError

if TYPE_CHECKING:
    from broker.cluster.zk.session import ZkSession

log = logging.getLogger("minikafka.config")

RELOAD_S = 5.0
LONG_MAX = keys.INT64_MAX
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"

# Broker keys whose Kafka default is null (another key supplies the value): no DEFAULT_CONFIG synonym.
NULL_BY_DEFAULT = frozenset(
    {
        "log.retention.ms",
        "log.retention.minutes",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.flush.interval.ms",
    }
)
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 2, 3, 4, 5  # Kafka's ConfigSource ids

Change = Callable[[dict[str, str]], dict[str, str]]
Check = Callable[[Mapping[str, str], frozenset[str]], None]


class PasswordStorageError(ValueError):
    """A password config that cannot be stored (no ``password.encoder.secret`` in a cluster): Kafka
    answers INVALID_CONFIG."""


@dataclass
class Prepared:
    """A checked alteration of one level, ready for `DynamicBrokerConfigs.commit`."""

    per_broker: bool
    props: dict[str, str]
    version: int  # the level's version it was made from (znode version, or a local counter)
    change: Change


def text(value: Any) -> str:
    """A static value as Kafka prints it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _static_values(config: BrokerConfig) -> dict[str, str]:
    """Every key the static configuration sets explicitly, as text."""
    out = {k: text(v) for k, v in config.values.items() if config.sources.get(k, "default") != "default"}
    out.update(config.ignored_values)
    out.update(config.security_values)
    out.update(config.plugin_values)  # rsm.config.* ...: described as static, never changed dynamically
    for key in keys.DYNAMIC_KEYS.values():
        if key.dynamic_only:
            out.pop(key.name, None)
    return out


def default_text(key: str) -> str | None:
    """A key's default as text (minikafka's where it has the key, else Kafka's); None if null."""
    if key in KEYS:
        return text(KEYS[key].default)
    found = keys.lookup(key)
    return None if found is None else found.default


def merge(
    static: Mapping[str, str], per_broker: Mapping[str, str], default: Mapping[str, str]
) -> dict[str, str]:
    """The explicit effective values: static, then the cluster default, then the per-broker level,
    each key hiding its synonyms below (Kafka's overrideProps)."""
    out = dict(static)
    for level in (default, per_broker):
        for key, value in level.items():
            for synonym in keys.synonyms(key, listener_override=False):
                out.pop(synonym, None)
            out[key] = value
    return out


class DynamicBrokerConfigs:
    def __init__(self, config: BrokerConfig, data_dir: Path | None) -> None:
        """``data_dir``: where a single broker keeps its configs; None in a cluster (ZooKeeper, `load`).
        ConfigError for unusable ``password.encoder.*`` settings."""
        self.node_id = config.node_id
        self.static = _static_values(config)
        self.per_broker: dict[str, str] = {}
        self.cluster_default: dict[str, str] = {}
        self._explicit = dict(self.static)
        self.on_change: list[Callable[[frozenset[str]], None]] = []
        self.checks: list[Check] = []
        self.zk: ZkSession | None = None
        self._file = None if data_dir is None else store.local_file(data_dir)
        try:
            self._encoder = PasswordEncoder.from_values(config.ignored_values)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._generation = 0  # the local file's version, for `commit`'s conflict check
        self._lock = asyncio.Lock()  # a re-read never undoes a write it did not see
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._fired: Callable[[Any], None] | None = None

    # -- reading -----------------------------------------------------------------------------------
    def value(self, key: str) -> str | None:
        found = self._explicit.get(key)
        return found if found is not None else default_text(key)

    def int_value(self, key: str) -> int:
        return int(str(self.value(key)).strip())

    def float_value(self, key: str) -> float:
        return float(str(self.value(key)).strip())

    def bool_value(self, key: str) -> bool:
        return str(self.value(key)).strip().lower() == "true"

    @property
    def leader_replication_throttled_rate(self) -> int:
        """Bytes/s a leader may send for throttled replicas (LONG_MAX: unthrottled)."""
        return self.int_value(LEADER_RATE)

    @property
    def follower_replication_throttled_rate(self) -> int:
        """Bytes/s a follower may fetch for throttled replicas (LONG_MAX: unthrottled)."""
        return self.int_value(FOLLOWER_RATE)

    def explicit(self) -> Mapping[str, str]:
        """Every key set explicitly, statically or dynamically, with its effective value (do not modify)."""
        return self._explicit

    def synonym_chain(
        self,
        name: str,
        include_static: bool = True,
        default_of: Callable[[str], str | None] = default_text,
    ) -> list[tuple[str, str, int]]:
        """Kafka's configSynonyms of broker key ``name``: ``(key, value, source)`` for each of its
        synonyms set per broker, then at the cluster default, then statically, then by default
        (``default_of``; none for keys whose Kafka default is null), from ``name`` itself on."""
        names = keys.synonyms(name)
        levels: list[tuple[int, Callable[[str], str | None]]] = [
            (DYNAMIC_BROKER, self.per_broker.get),
            (DYNAMIC_DEFAULT, self.cluster_default.get),
        ]
        if include_static:
            levels.append((STATIC, self.static.get))
            levels.append((DEFAULT, lambda k: None if k in NULL_BY_DEFAULT else default_of(k)))
        chain = [(n, v, source) for source, get in levels for n in names if (v := get(n)) is not None]
        while chain and chain[0][0] != name:
            chain.pop(0)
        return chain

    # -- loading -----------------------------------------------------------------------------------
    def load(self, zk: ZkSession | None) -> None:
        """Read both levels, blocking (start-up, before the logs open); ConfigError for a local file
        that is not ours."""
        self.zk = zk
        if zk is not None:
            per, _ = store.read_entity(zk.client, store.entity(self.node_id))
            default, _ = store.read_entity(zk.client, store.DEFAULT)
        else:
            assert self._file is not None
            try:
                configs = self._file.load()
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            per = configs.get(store.entity(self.node_id), {})
            default = configs.get(store.DEFAULT, {})
        self._set(self._usable(per, True), self._usable(default, False), announce=False)

    def announce(self) -> None:
        """Run the `on_change` callbacks for every dynamically set key (start-up, once the parts that
        act on them exist)."""
        self._run_callbacks(frozenset(self.per_broker) | frozenset(self.cluster_default))

    def _usable(self, stored: Mapping[str, str], per_broker: bool, quiet: bool = False) -> dict[str, str]:
        """The stored entries of a level that can be applied (passwords decoded); others logged."""
        where = f"broker {self.node_id}" if per_broker else "default cluster"
        out = {}
        for name, value in stored.items():
            if keys.is_password(name) and self.zk is not None:
                if self._encoder is None:
                    if not quiet:
                        log.error(
                            "Dynamic password config %s could not be decoded (no password.encoder.secret), ignoring",
                            name,
                        )
                    continue
                try:
                    value = self._encoder.decode(value)
                except PasswordError:
                    if not quiet:
                        log.error("Dynamic password config %s could not be decoded, ignoring", name)
                    continue
            try:
                keys.validate({name: value}, per_broker)
            except keys.DynamicConfigError as exc:
                if not quiet:
                    log.error("Dynamic %s config %s will be ignored: %s", where, name, exc)
                continue
            out[name] = value
        return out

    def _set(self, per: dict[str, str], default: dict[str, str], announce: bool = True) -> frozenset[str]:
        new = merge(self.static, per, default)
        old = self._explicit
        changed = frozenset(k for k in set(new) | set(old) if new.get(k) != old.get(k))
        self.per_broker, self.cluster_default, self._explicit = per, default, new
        if changed and announce:
            log.info("dynamic broker configs changed: %s", ", ".join(sorted(changed)))
            self._run_callbacks(changed)
        return changed

    def _run_callbacks(self, changed: frozenset[str]) -> None:
        for callback in list(self.on_change):
            try:
                callback(changed)
            except Exception:
                log.exception("applying dynamic broker configs %s failed", ", ".join(sorted(changed)))

    # -- altering ----------------------------------------------------------------------------------
    async def prepare(self, per_broker: bool, change: Change) -> Prepared:
        """Read the level's current set, apply ``change`` to a copy, check the result (KafkaError from
        ``change``, DynamicConfigError from the checks)."""
        current, version = await self._read_level(per_broker)
        props = change(dict(current))
        self.check(props, per_broker)
        return Prepared(per_broker, props, version, change)

    def check(self, props: Mapping[str, str], per_broker: bool) -> None:
        """Kafka's validation of a level's new set: keys, types and levels, then each part's `checks`
        against the effective configuration it would make."""
        keys.validate(props, per_broker)
        per = props if per_broker else self.per_broker
        default = self.cluster_default if per_broker else props
        effective = merge(self.static, per, default)
        old = self._explicit
        changed = frozenset(k for k in set(effective) | set(old) if effective.get(k) != old.get(k))
        for check in self.checks:
            check(effective, changed)

    async def commit(self, prepared: Prepared) -> None:
        """Store a prepared alteration and apply it here (re-prepared if another writer came first).
        PasswordStorageError when a password cannot be stored."""
        async with self._lock:
            while True:
                name = store.entity(self.node_id if prepared.per_broker else None)
                if self.zk is not None:
                    persistent = self._persistent(prepared.props)
                    zk = self.zk
                    if await zk.run(store.write_entity, zk.client, name, persistent, prepared.version):
                        break
                elif prepared.version == self._generation:
                    assert self._file is not None
                    old = self.per_broker if prepared.per_broker else self.cluster_default
                    delta: dict[str, str | None] = {k: None for k in old if k not in prepared.props}
                    delta.update(prepared.props)
                    await asyncio.to_thread(self._file.apply, {name: delta})
                    self._generation += 1
                    break
                prepared = await self.prepare(prepared.per_broker, prepared.change)
            if prepared.per_broker:
                self._set(dict(prepared.props), self.cluster_default)
            else:
                self._set(self.per_broker, dict(prepared.props))

    def _persistent(self, props: Mapping[str, str]) -> dict[str, str]:
        """A level's set as ZooKeeper keeps it: password configs encrypted."""
        out = dict(props)
        for name, value in props.items():
            if keys.is_password(name):
                if self._encoder is None:
                    raise PasswordStorageError("Password encoder secret not configured")
                out[name] = self._encoder.encode(value)
        return out

    async def _read_level(self, per_broker: bool) -> tuple[dict[str, str], int]:
        if self.zk is None:
            return dict(self.per_broker if per_broker else self.cluster_default), self._generation
        name = store.entity(self.node_id if per_broker else None)
        stored, version = await self.zk.run(store.read_entity, self.zk.client, name)
        return self._usable(stored, per_broker, quiet=True), version

    # -- keeping current ---------------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def fired(_event: Any) -> None:  # one function: kazoo keeps a set of them until the watch fires
            loop.call_soon_threadsafe(self._changed.set)

        self._fired = fired
        if self.zk is not None:
            await self.refresh()
        self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def refresh(self) -> None:
        """Read both levels again from where they are kept and apply what changed."""
        async with self._lock:
            if self.zk is not None:
                zk = self.zk
                per_raw, _ = await zk.run(
                    store.read_entity, zk.client, store.entity(self.node_id), self._fired
                )
                default_raw, _ = await zk.run(store.read_entity, zk.client, store.DEFAULT)
            else:
                assert self._file is not None
                configs = await asyncio.to_thread(self._file.load)
                per_raw = configs.get(store.entity(self.node_id), {})
                default_raw = configs.get(store.DEFAULT, {})
                self._generation += 1
            self._set(self._usable(per_raw, True), self._usable(default_raw, False))

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                async with asyncio.timeout(RELOAD_S):
                    await self._changed.wait()
            self._changed.clear()
            try:
                if self.zk is not None or (self._file is not None and self._file.changed()):
                    await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_refresh_failure(log, exc, "dynamic broker configs")
