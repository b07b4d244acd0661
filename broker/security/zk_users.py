"""User configs (SCRAM credentials, quotas) in ZooKeeper, in Kafka's ZK-mode layout.

    /config/users/<name>                   {"version":1,"config":{"SCRAM-SHA-512":"salt=...,...",
                                                                  "producer_byte_rate":"1024"}}
    /config/changes/config_change_<seq>    {"version":2,"entity_path":"users/<name>"} (sequential)

User names in paths are sanitized as Kafka's Sanitizer does. A change
rewrites the user's znode (merging into the keys it holds, deleting
the znode when none is left), then adds a change notification; every broker
watches ``/config/changes`` and re-reads all users when a child appears, so
a change made by any broker (or by Kafka's own tools) reaches all of them.
Blocking kazoo calls: the caller runs them in a worker thread (`ZkSession.run`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote_plus

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

CONFIG = "/config"
USERS = "/config/users"
DEFAULT = "<default>"  # Kafka's name of the default entity (ZooKeeperInternals.DEFAULT_STRING)
CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"


def sanitize(name: str) -> str:
    """Kafka's Sanitizer.sanitize: URL-encoded UTF-8 keeping ``A-Za-z0-9._-`` (DEFAULT as it is)."""
    if name == DEFAULT:
        return name
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Kafka's Sanitizer.desanitize (Java's URLDecoder: ``+`` is a space)."""
    if name == DEFAULT:
        return name
    return unquote_plus(name)


def decode_config(data: bytes) -> dict[str, str]:
    """The ``config`` map of an entity config znode; ValueError when it is not one."""
    doc = json.loads(data.decode() or "{}")
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ValueError("config is not an object")
    return {str(k): str(v) for k, v in config.items()}


def read_users(client: KazooClient, watch: Callable[[Any], None] | None = None) -> dict[str, dict[str, str]]:
    """Every user's config; arms ``watch`` on ``/config/changes`` (children) when given."""
    if watch is not None:
        try:
            client.get_children(CHANGES, watch=watch)
        except NoNodeError:
            client.exists(CHANGES, watch=watch)
    try:
        names = client.get_children(USERS)
    except NoNodeError:
        return {}
    pending = [(name, client.get_async(f"{USERS}/{name}")) for name in names]
    out = {}
    for name, result in pending:
        try:
            data, _ = result.get()
        except NoNodeError:
            continue
        try:
            out[desanitize(name)] = decode_config(data)
        except (ValueError, UnicodeDecodeError):
            continue  # not ours to fix; the broker logs nothing per user here
    return out


def write_users(client: KazooClient, changes: dict[str, dict[str, str | None]]) -> None:
    """Merge ``changes`` ({user: {key: value or None}}) into the users' znodes, then notify."""
    for user, change in changes.items():
        merge_entity(client, f"users/{sanitize(user)}", change)


def merge_entity(client: KazooClient, entity_path: str, change: dict[str, str | None]) -> None:
    """Merge ``change`` into the entity config znode ``/config/<entity_path>`` (a conditional
    write, retried on a conflicting writer), then add the change notification."""
    znode = f"{CONFIG}/{entity_path}"
    while True:
        try:
            data, stat = client.get(znode)
            config, version = decode_config(data), stat.version
        except NoNodeError:
            config, version = {}, -1
        for key, value in change.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        body = json.dumps({"version": 1, "config": config}).encode()
        try:
            if version < 0:
                client.create(znode, body, makepath=True)
            else:
                client.set(znode, body, version=version)
            break
        except (NodeExistsError, BadVersionError):
            continue  # another writer got there first: merge into what it wrote
    note = json.dumps({"version": 2, "entity_path": entity_path}).encode()
    client.create(f"{CHANGES}/{CHANGE_PREFIX}", note, sequence=True, makepath=True)


CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener.changeExpirationMs


def purge_changes(client: KazooClient, root: str, prefix: str, now_ms: int) -> None:
    """Delete the change notifications under ``root`` older than Kafka's 15 minutes (every broker
    has read them by then), as Kafka's notification listener does."""
    try:
        names = [n for n in client.get_children(root) if n.startswith(prefix)]
    except NoNodeError:
        return
    pending = [(f"{root}/{n}", client.exists_async(f"{root}/{n}")) for n in names]
    for path, result in pending:
        stat = result.get()
        if stat is not None and now_ms - stat.ctime > CHANGE_EXPIRATION_MS:
            try:
                client.delete(path)
            except NoNodeError:
                continue
