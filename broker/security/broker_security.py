"""The broker's security: every listener's TLS and SASL, and the SCRAM credentials.

`BrokerSecurity` is built with the broker (configuration mistakes are
`ConfigError`s before anything listens), hands each new connection its
`Session`, and keeps things current while the broker runs:

- TLS key and trust stores are re-read when their files change (checked every
  ``RELOAD_S``) or on SIGHUP; connections accepted afterwards get the new ones.
- SCRAM credentials come from the data directory's file on a single broker
  (re-read when it changes) or from ZooKeeper in a cluster (re-read when a
  change notification appears).
- Client quotas (`quotas`, broker/security/quotas.py) are kept current the same
  way, and measured per client as requests are handled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from broker.cluster.zk.session import log_refresh_failure
from broker.config import BrokerConfig, ConfigError
from broker.security.acl_manager import AclManager
from broker.security.acls import AclOperation, ResourceType
from broker.security.authorizer import Authorizer, parse_super_users
from broker.security.credentials import CredentialStore, local_users_file
from broker.security.listener import ListenerSecurity, link_security, listener_security, scoped_lookup
from broker.security.quotas import ClientQuotas
from broker.security.session import Session
from broker.security.tls import TlsSettings

if TYPE_CHECKING:
    from pathlib import Path

    from broker.cluster.zk.session import ZkSession

log = logging.getLogger("minikafka.security")

RELOAD_S = 5.0
PURGE_EVERY_S = 60.0


class BrokerSecurity:
    def __init__(self, config: BrokerConfig, data_dir: Path) -> None:
        """Credentials come from ``data_dir`` unless ``zookeeper.connect`` is set; then the broker
        sets `zk` to its session before `start`."""
        self.listeners: dict[str, ListenerSecurity] = {
            lst.name: listener_security(config, lst) for lst in config.served_listeners()
        }
        # how this broker reaches the others (replica fetchers, transaction markers)
        self.link_security = link_security(config, self.listeners[config.inter_broker_listener])
        self._reauth_ms = int(config["connections.max.reauth.ms"])
        self.failed_auth_delay_s = int(config["connection.failed.authentication.delay.ms"]) / 1000
        self.zk: ZkSession | None = None
        self._file = None if config["zookeeper.connect"] else local_users_file(data_dir)
        self.credentials = CredentialStore(self._write_users)
        if self._file is not None:
            try:
                self.credentials.replace_all(self._file.load())
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        # Kafka's authorizer, when authorizer.class.name is set; None lets every request through.
        self.authorizer: Authorizer | None = None
        if config["authorizer.class.name"]:
            self.authorizer = Authorizer(
                parse_super_users(str(config["super.users"])),
                bool(config["allow.everyone.if.no.acl.found"]),
            )
        # -- ACLs (acl_manager.py): the durable ACLs behind `authorizer`; None without an authorizer.
        self.acls: AclManager | None = None
        if self.authorizer is not None:
            try:
                self.acls = AclManager(self.authorizer, None if config["zookeeper.connect"] else data_dir)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users_write_lock = asyncio.Lock()
        self._last_purge = 0.0
        self._users_changed = asyncio.Event()
        # -- client quotas (quotas.py): user quotas are kept beside the SCRAM keys (`_write_users`)
        self.quotas = ClientQuotas(
            config, None if config["zookeeper.connect"] else data_dir, self._write_users
        )

    @property
    def secured(self) -> bool:
        return any(s.protocol != "PLAINTEXT" for s in self.listeners.values())

    def ssl_context(self, listener: str) -> Any:
        tls = self.listeners[listener].tls
        return None if tls is None else tls.context

    def session(self, listener: str, host: str) -> Session:
        return Session(self.listeners[listener], host, self.credentials, self._reauth_ms)

    # -- authorization --------------------------------------------------------------------------
    def authorize(
        self, session: Session, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """Whether the session's principal may perform ``operation`` on the resource (always, with no
        authorizer configured)."""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize(session.principal, session.host, operation, resource_type, name)

    def authorize_any(self, session: Session, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Kafka's authorizeByResourceType: whether some resource of the type allows ``operation``."""
        authorizer = self.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize_any(session.principal, session.host, operation, resource_type)

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        if self.zk is not None:
            await self._read_zk_users()
        if any(s.tls is not None for s in self.listeners.values()):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(signal.SIGHUP, self.reload_tls)
        self._task = asyncio.ensure_future(self._watch())
        if self.acls is not None:  # ACLs: read from ZooKeeper in a cluster, then watched
            await self.acls.start(self.zk)
        await self.quotas.start(self.zk)

    async def stop(self) -> None:
        await self.quotas.stop()
        if self.acls is not None:
            await self.acls.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def reconfigure_tls(self, values: Mapping[str, str], validate_only: bool = False) -> None:
        """Every TLS listener's key and trust stores from ``values`` (the effective configuration,
        where dynamic ``listener.name.<l>.ssl.*`` keys win): a listener whose store settings changed
        loads the new stores for the connections it accepts from then on. ValueError naming the
        listener when a new store cannot be used (checked for every listener before any changes)."""
        changed = []
        for name, security in self.listeners.items():
            tls = security.tls
            if tls is None:
                continue
            settings = TlsSettings.from_lookup(scoped_lookup(values, name))
            if settings == tls.settings:
                continue
            try:
                tls.reconfigure(settings, validate_only=True)
            except ValueError as exc:
                raise ValueError(f"listener {name}: {exc}") from None
            changed.append((name, tls, settings))
        if validate_only:
            return
        for name, tls, settings in changed:
            tls.reconfigure(settings)
            log.info("listener %s: TLS key and trust stores now from the dynamic broker configuration", name)

    def reload_tls(self) -> None:
        for name, security in self.listeners.items():
            if security.tls is not None and security.tls.maybe_reload():
                log.info("listener %s: TLS key and trust stores reloaded", name)

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                async with asyncio.timeout(RELOAD_S):
                    await self._users_changed.wait()
            self._users_changed.clear()
            try:
                self.reload_tls()
                if self._file is not None and self._file.changed():
                    async with self.credentials.lock:
                        self.credentials.replace_all(self._file.load())
                    log.info("SCRAM credentials re-read from %s", self._file.path)
                elif self.zk is not None:
                    await self._read_zk_users()
                    await self._purge_zk_changes()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_refresh_failure(log, exc, "security settings")

    # -- users ----------------------------------------------------------------------------------
    async def _write_users(self, changes: dict[str, dict[str, str | None]]) -> None:
        """Merge ``changes`` into the durable user configs (SCRAM credentials and user quotas share
        them), one writer at a time: the file is read, changed and replaced as a whole."""
        async with self._users_write_lock:
            if self._file is not None:
                await asyncio.to_thread(self._file.apply, changes)
                return
            from broker.security import zk_users

            assert self.zk is not None
            await self.zk.run(zk_users.write_users, self.zk.client, changes)

    async def _read_zk_users(self) -> None:
        from broker.security import zk_users

        assert self.zk is not None
        async with self.credentials.lock:  # not interleaved with an alteration's write and update
            users = await self.zk.run(zk_users.read_users, self.zk.client, self._zk_fired)
            self.credentials.replace_all(users)

    async def _purge_zk_changes(self) -> None:
        """Kafka's expiry of old ``/config/changes`` notifications, at most once a minute."""
        from broker.security import zk_users

        now = time.monotonic()
        if self.zk is None or now - self._last_purge < PURGE_EVERY_S:
            return
        self._last_purge = now
        await self.zk.run(
            zk_users.purge_changes,
            self.zk.client,
            zk_users.CHANGES,
            zk_users.CHANGE_PREFIX,
            int(time.time() * 1000),
        )

    def _zk_fired(self, _event: Any) -> None:
        """A ZooKeeper watch (kazoo's thread); one callback, so re-arming it never adds another."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._users_changed.set)
