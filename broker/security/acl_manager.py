"""The durable ACLs behind CreateAcls, DescribeAcls and DeleteAcls, kept current in the `Authorizer`.

`AclManager` owns where the ACLs live and makes the authorizer's in-memory
set follow them:

- Single broker (constructed with a data directory): one JSON file,
  ``<data_dir>/__minikafka_acls.json`` (`acl_store.LocalAclStore`), read at
  construction (a file that cannot be read back raises ValueError with one
  line: the broker does not start rather than run with ACLs missing). A
  change rewrites the whole file (temporary file, fsync, rename) in a worker
  thread, then updates the authorizer.
- Cluster (constructed without one, `start` given the `ZkSession`): Kafka's
  ZooKeeper-mode layout (`acl_store`'s docstring): one znode per resource
  pattern under ``/kafka-acl`` (LITERAL) or ``/kafka-acl-extended/prefixed``
  (PREFIXED), so Kafka's tools and brokers read what this one writes and the
  other way round. A change to a pattern reads its znode, computes the new
  set and writes it conditionally on the version read (create if absent,
  delete when no ACL is left); a conflicting writer makes it read again and
  merge (Kafka's AclAuthorizer.updateResourceAcls). When the set changed, a
  sequential notification ``acl_changes_<seq>`` is created under
  ``/kafka-acl-changes`` (LITERAL) or ``/kafka-acl-extended-changes``
  (PREFIXED), as Kafka writes them; the writing broker updates its authorizer
  at once. Every broker re-reads all ACLs at `start`, whenever a child appears
  under either change root (kazoo child watches, re-armed by every read), and
  every ``RELOAD_S`` seconds as a safety net (lost watches, lost sessions):
  level-triggered, a missed event only delays the next read. Notifications
  older than 15 minutes are deleted (Kafka's changeExpirationMs), checked at
  most once a minute.

Contracts:

- `create` answers per binding ``(error code, message)``: INVALID_REQUEST with
  `validate_binding`'s message for a binding Kafka refuses, UNKNOWN_SERVER_ERROR
  (no message, as Kafka hides them) when the store could not be written; an
  ACL that exists already succeeds and writes nothing.
- `delete` answers per filter ``(error code, message, removed bindings)``; an
  ACL several filters select is reported under the first of them only (Kafka
  does the same). Besides the ACLs this broker knows of, a filter naming
  exactly one or two patterns (concrete type, a name, LITERAL, PREFIXED or
  ANY) has those znodes read, so it removes ACLs other brokers wrote a moment
  ago.
- Both are durable before they return: the file fsync'd, or the znodes
  written. This broker's writes and re-reads are serialized by one lock, so a
  re-read never undoes a write it did not see.
- `describe` is the authorizer's `bindings` (grouped by pattern).

Use from the event loop only (the authorizer is not thread-safe); blocking
file and ZooKeeper calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.security import zk_users
from broker.security.acl_store import (
    ACL_CHANGES,
    CHANGE_PREFIX,
    EXTENDED_ACL_CHANGES,
    FILE,
    LocalAclStore,
    acl_path,
    change_path,
    decode_resource_acls,
    encode_change,
    encode_resource_acls,
    pattern_root,
    resource_type_path,
)
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_kafka_name,
    validate_binding,
)
from broker.security.authorizer import Authorizer
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.zk.session import ZkSession

log = logging.getLogger("minikafka.acls")

RELOAD_S = 5.0  # full re-read from ZooKeeper at least this often
MAX_UPDATE_RETRIES = 30  # conditional writes of one znode that lost a race before giving up
PURGE_EVERY_S = 60.0
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)
# Kafka's AclEntry.RESOURCE_TYPES: the types that get a znode under each store at start-up.
STORED_RESOURCE_TYPES = tuple(t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY))

CreateResult = tuple[int, str | None]
DeleteResult = tuple[int, str | None, list[AclBinding]]
# A pattern's ACLs as ZooKeeper holds them, and the patterns whose znode could not be read.
Snapshot = tuple[dict[ResourcePattern, list[AccessControlEntry]], dict[ResourcePattern, str]]


class AclManager:
    """The durable ACLs of one broker (see the module docstring)."""

    def __init__(self, authorizer: Authorizer, data_dir: Path | None = None) -> None:
        """With ``data_dir``: the single broker's file, loaded now (ValueError if it is corrupt).
        Without: the cluster's ZooKeeper, read from `start`."""
        self.authorizer = authorizer
        self.zk: ZkSession | None = None
        self._store = None if data_dir is None else LocalAclStore(Path(data_dir) / FILE)
        if self._store is not None:
            authorizer.replace_all(self._store.load())
        self._lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_purge = 0.0

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self, zk: ZkSession | None = None) -> None:
        """Cluster (``zk`` given, or `zk` set before): create Kafka's ACL znodes if missing, read
        every ACL (a znode that cannot be read raises ValueError, as Kafka refuses to start), arm
        the watches and re-read from then on. Single broker: nothing to do."""
        if zk is not None:
            self.zk = zk
        if self.zk is None or self._store is not None:
            return
        self._loop = asyncio.get_running_loop()
        await self.zk.run(_zk_create_paths, self.zk.client)
        async with self._lock:
            snapshot, bad = await self.zk.run(_zk_read_all, self.zk.client, self._fired)
            if bad:
                pattern, why = next(iter(bad.items()))
                raise ValueError(f"ACLs of {_describe(pattern)} in ZooKeeper cannot be read: {why}")
            self._apply_snapshot(snapshot, bad)
        log.info("%d ACLs read from ZooKeeper", len(self.authorizer))
        self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -- the three APIs ---------------------------------------------------------------------------
    def describe(self, filter: AclBindingFilter) -> list[AclBinding]:
        """The ACLs ``filter`` selects, grouped by resource pattern."""
        return self.authorizer.bindings(filter)

    async def create(self, bindings: list[AclBinding]) -> list[CreateResult]:
        """Add ``bindings`` durably; per binding (error code, message), in order."""
        results: list[CreateResult] = [(ErrorCode.NONE, None)] * len(bindings)
        valid: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            reason = validate_binding(binding)
            if reason is not None:
                results[i] = (ErrorCode.INVALID_REQUEST, reason)
            else:
                valid.setdefault(binding.pattern, []).append(i)
        if not valid:
            return results
        async with self._lock:
            if self._store is not None:
                failed = await self._create_local([bindings[i] for idx in valid.values() for i in idx])
                if failed:
                    for idx in valid.values():
                        for i in idx:
                            results[i] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
                return results
            zk = self._require_zk()
            outcomes = await asyncio.gather(
                *(
                    zk.run(_zk_update, zk.client, pattern, [bindings[i].entry for i in idx], [])
                    for pattern, idx in valid.items()
                ),
                return_exceptions=True,
            )
            for (pattern, idx), outcome in zip(valid.items(), outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    log.error("creating ACLs of %s in ZooKeeper failed: %r", _describe(pattern), outcome)
                    for i in idx:
                        results[i] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
                else:
                    self.authorizer.replace_resource(pattern, outcome[0])
        return results

    async def delete(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        """Remove the ACLs ``filters`` select, durably; per filter (error code, message, removed)."""
        async with self._lock:
            if self._store is not None:
                return await self._delete_local(filters)
            zk = self._require_zk()
            candidates = self._candidates(filters)
            outcomes = await asyncio.gather(
                *(
                    zk.run(_zk_update, zk.client, pattern, [], chosen)
                    for pattern, chosen in candidates.items()
                ),
                return_exceptions=True,
            )
            removed: list[list[AclBinding]] = [[] for _ in filters]
            failed: set[int] = set()
            for (pattern, chosen), outcome in zip(candidates.items(), outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    log.error("deleting ACLs of %s in ZooKeeper failed: %r", _describe(pattern), outcome)
                    failed.update(i for i, _ in chosen)
                    continue
                entries, gone = outcome
                self.authorizer.replace_resource(pattern, entries)
                for entry, i in gone.items():
                    removed[i].append(AclBinding(pattern, entry))
        return [
            (ErrorCode.UNKNOWN_SERVER_ERROR, None, removed[i])
            if i in failed
            else (ErrorCode.NONE, None, removed[i])
            for i in range(len(filters))
        ]

    # -- single broker ----------------------------------------------------------------------------
    async def _create_local(self, added: list[AclBinding]) -> bool:
        """Store and apply ``added``; True if the file could not be written (nothing applied)."""
        assert self._store is not None
        current = self.authorizer.bindings()
        merged = list(dict.fromkeys([*current, *added]))
        if len(merged) != len(current):
            try:
                await asyncio.to_thread(self._store.save, merged)
            except (OSError, ValueError) as exc:
                log.error("writing %s failed: %s", self._store.path, exc)
                return True
        self.authorizer.add(added)
        return False

    async def _delete_local(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        assert self._store is not None
        taken: dict[AclBinding, int] = {}
        for i, f in enumerate(filters):
            for binding in self.authorizer.bindings(f):
                taken.setdefault(binding, i)
        if taken:
            remaining = [b for b in self.authorizer.bindings() if b not in taken]
            try:
                await asyncio.to_thread(self._store.save, remaining)
            except (OSError, ValueError) as exc:
                log.error("writing %s failed: %s", self._store.path, exc)
                return [(ErrorCode.UNKNOWN_SERVER_ERROR, None, []) for _ in filters]
            by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
            for binding in taken:
                by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
            for pattern, gone in by_pattern.items():
                kept = [b.entry for b in self.authorizer.bindings(_exactly(pattern)) if b.entry not in gone]
                self.authorizer.replace_resource(pattern, kept)
        removed: list[list[AclBinding]] = [[] for _ in filters]
        for binding, i in taken.items():
            removed[i].append(binding)
        return [(ErrorCode.NONE, None, r) for r in removed]

    # -- cluster ----------------------------------------------------------------------------------
    def _require_zk(self) -> ZkSession:
        if self.zk is None:
            raise RuntimeError("ACLs in ZooKeeper used before AclManager.start")
        return self.zk

    def _candidates(
        self, filters: list[AclBindingFilter]
    ) -> dict[ResourcePattern, list[tuple[int, AclBindingFilter]]]:
        """The patterns a delete must rewrite, each with the (index, filter) pairs that select it:
        every known pattern a filter matches, plus the exact patterns of filters that name them
        (Kafka's deleteAcls: the cache's keys plus filterToResources of matchesAtMostOne)."""
        patterns = dict.fromkeys(b.pattern for b in self.authorizer.bindings())
        for f in filters:
            if f.name is None or f.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
                continue
            if f.pattern_type == PatternType.ANY:
                kinds: Iterable[PatternType] = STORED_PATTERN_TYPES
            elif f.pattern_type in STORED_PATTERN_TYPES:
                kinds = (f.pattern_type,)
            else:
                continue
            for kind in kinds:
                pattern = ResourcePattern(f.resource_type, f.name, kind)
                if "/" not in pattern.name and pattern.name:
                    patterns.setdefault(pattern, None)
        out: dict[ResourcePattern, list[tuple[int, AclBindingFilter]]] = {}
        for pattern in patterns:
            chosen = [(i, f) for i, f in enumerate(filters) if f.matches_pattern(pattern)]
            if chosen:
                out[pattern] = chosen
        return out

    def _fired(self, _event: Any) -> None:
        """A kazoo watch (any thread): a change notification appeared, re-read."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed.set)

    async def refresh(self) -> None:
        """Re-read every ACL from ZooKeeper into the authorizer (re-arming the watches)."""
        zk = self._require_zk()
        async with self._lock:
            snapshot, bad = await zk.run(_zk_read_all, zk.client, self._fired)
            for pattern, why in bad.items():
                log.error(
                    "ACLs of %s in ZooKeeper cannot be read, keeping the known ones: %s",
                    _describe(pattern),
                    why,
                )
            self._apply_snapshot(snapshot, bad)
        now = time.monotonic()
        if now - self._last_purge >= PURGE_EVERY_S:
            self._last_purge = now
            await zk.run(_zk_purge_changes, zk.client, int(time.time() * 1000))

    def _apply_snapshot(
        self, snapshot: dict[ResourcePattern, list[AccessControlEntry]], bad: dict[ResourcePattern, str]
    ) -> None:
        """Make the authorizer hold ``snapshot``, touching only the patterns that differ."""
        current: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding in self.authorizer.bindings():
            current.setdefault(binding.pattern, set()).add(binding.entry)
        for pattern in current.keys() | snapshot.keys():
            if pattern in bad:
                continue
            entries = snapshot.get(pattern, [])
            if set(entries) != current.get(pattern, set()):
                self.authorizer.replace_resource(pattern, entries)

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RELOAD_S):
                    await self._changed.wait()
            self._changed.clear()
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("re-reading ACLs from ZooKeeper failed, keeping the current ones: %r", exc)


def _exactly(pattern: ResourcePattern) -> AclBindingFilter:
    return AclBindingFilter(pattern.resource_type, pattern.name, pattern.pattern_type)


def _describe(pattern: ResourcePattern) -> str:
    return f"{pattern.pattern_type.name} {pattern.resource_type.name} {pattern.name!r}"


# -- ZooKeeper (blocking kazoo calls: run them with ZkSession.run) ----------------------------------
def _zk_create_paths(client: KazooClient) -> None:
    """Kafka's KafkaZkClient.createAclPaths: each store's root and per-type znodes, the change roots."""
    for kind in STORED_PATTERN_TYPES:
        client.ensure_path(pattern_root(kind))
        for resource_type in STORED_RESOURCE_TYPES:
            client.ensure_path(resource_type_path(kind, resource_type))
    client.ensure_path(ACL_CHANGES)
    client.ensure_path(EXTENDED_ACL_CHANGES)


def _zk_read_all(client: KazooClient, watch: Callable[[Any], None]) -> Snapshot:
    """Every pattern's ACLs, after arming ``watch`` on both change roots' children.

    Unknown resource type znodes are skipped, as Kafka does; a pattern whose
    data is not Kafka's JSON is reported in the second dict instead.
    """
    for root in (ACL_CHANGES, EXTENDED_ACL_CHANGES):
        try:
            client.get_children(root, watch=watch)
        except NoNodeError:
            client.exists(root, watch=watch)  # fires when the root is created
    patterns: list[ResourcePattern] = []
    for kind in STORED_PATTERN_TYPES:
        root = pattern_root(kind)
        try:
            type_names = client.get_children(root)
        except NoNodeError:
            continue
        for type_name in type_names:
            resource_type = parse_kafka_name(ResourceType, type_name)
            if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
                log.warning("ignoring unknown resource type znode %s/%s", root, type_name)
                continue
            try:
                names = client.get_children(f"{root}/{type_name}")
            except NoNodeError:
                continue
            patterns.extend(ResourcePattern(resource_type, name, kind) for name in names)
    pending = [(p, client.get_async(acl_path(p))) for p in patterns]
    acls: dict[ResourcePattern, list[AccessControlEntry]] = {}
    bad: dict[ResourcePattern, str] = {}
    for pattern, result in pending:
        try:
            data, _stat = result.get()
        except NoNodeError:
            continue  # deleted since it was listed
        try:
            entries = decode_resource_acls(data)
        except ValueError as exc:
            bad[pattern] = str(exc)
            continue
        if entries:
            acls[pattern] = entries
    return acls, bad


def _zk_update(
    client: KazooClient,
    pattern: ResourcePattern,
    added: list[AccessControlEntry],
    filters: list[tuple[int, AclBindingFilter]],
) -> tuple[list[AccessControlEntry], dict[AccessControlEntry, int]]:
    """Rewrite ``pattern``'s znode: drop the entries some filter selects, add ``added``.

    Returns the entries the znode holds afterwards and the dropped ones, each
    with the index of the first filter selecting it. Conditional on the version
    read (create when absent, delete when empty), re-read and merged on a lost
    race; a change notification follows a write that changed the set.
    """
    path = acl_path(pattern)
    for attempt in range(MAX_UPDATE_RETRIES):
        try:
            data, stat = client.get(path)
            version = stat.version
        except NoNodeError:
            data, version = None, -1
        current = list(dict.fromkeys(decode_resource_acls(data)))
        gone: dict[AccessControlEntry, int] = {}
        kept: list[AccessControlEntry] = []
        for entry in current:
            first = next((i for i, f in filters if f.matches_entry(entry)), None)
            if first is None:
                kept.append(entry)
            else:
                gone[entry] = first
        new = list(dict.fromkeys([*kept, *added]))
        if set(new) == set(current):
            return current, {}
        try:
            if not new:
                client.delete(path, version=version)
            elif version < 0:
                client.create(path, encode_resource_acls(new), makepath=True)
            else:
                client.set(path, encode_resource_acls(new), version=version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))  # another writer won: read, merge
            continue
        client.create(change_path(pattern), encode_change(pattern), sequence=True, makepath=True)
        return new, gone
    raise RuntimeError(f"Failed to update ACLs for {_describe(pattern)} after {MAX_UPDATE_RETRIES} tries")


def _zk_purge_changes(client: KazooClient, now_ms: int) -> None:
    """Delete ACL change notifications older than Kafka's 15 minutes (every broker has read them)."""
    for root in (ACL_CHANGES, EXTENDED_ACL_CHANGES):
        zk_users.purge_changes(client, root, CHANGE_PREFIX, now_ms)
