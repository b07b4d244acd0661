"""Where client quotas are kept: Kafka's ZooKeeper-mode layout, or the data directory on one broker.

Entity paths, as Kafka's AdminZkClient names them under ``/config`` (names
sanitized as Kafka's ``Sanitizer`` does: URL-encoding of UTF-8 that keeps only
``A-Za-z0-9._-``, a space as ``%20``; `DEFAULT` stays ``<default>``)::

    users/<user>                       user (shares its znode with the SCRAM credentials)
    clients/<client-id>                client-id
    users/<user>/clients/<client-id>   user and client-id

Each holds Kafka's entity config ``{"version":1,"config":{"producer_byte_rate":"1048576",...}}``.

- Cluster: the znodes ``/config/<entity path>``; a write merges into the keys
  the znode holds (a conditional set, retried on a conflicting writer), then
  adds ``/config/changes/config_change_<seq>`` = ``{"version":2,"entity_path":
  "<entity path>"}`` so that every broker (and Kafka's) re-reads. Users go
  through broker/security/zk_users.py, which keeps the SCRAM keys.
- Single broker: users' quota keys sit in the users file of
  broker/security/credentials.py (beside their SCRAM credentials), the other
  entities in ``<data dir>/__minikafka_client_quotas.json`` =
  ``{"version": 1, "entities": {"clients/app": {"producer_byte_rate": "1024"}}}``,
  replaced atomically (temporary file, fsync, rename) and re-read when it
  changes on disk.

Blocking calls (files, kazoo): callers run them in worker threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from broker.security import zk_users
from broker.security.durable_file import ConfigMapFile
from broker.security.quota_config import QUOTA_KEYS, Entity, Quotas
from broker.security.zk_users import desanitize, sanitize

log = logging.getLogger("minikafka.security")

FILE = "__minikafka_client_quotas.json"
CONFIG = "/config"
CLIENTS = "/config/clients"
Changes = dict[str, str | None]  # key -> value, or None to delete


def entity_path(entity: Entity) -> str:
    """``users/<u>``, ``clients/<c>`` or ``users/<u>/clients/<c>`` (sanitized names)."""
    user, client = entity
    if user is not None and client is not None:
        return f"users/{sanitize(user)}/clients/{sanitize(client)}"
    if user is not None:
        return f"users/{sanitize(user)}"
    assert client is not None
    return f"clients/{sanitize(client)}"


def parse_entity_path(path: str) -> Entity | None:
    """The entity of an entity path, None when it is not one of the three forms."""
    parts = path.split("/")
    if len(parts) == 2 and parts[0] == "users" and parts[1]:
        return (desanitize(parts[1]), None)
    if len(parts) == 2 and parts[0] == "clients" and parts[1]:
        return (None, desanitize(parts[1]))
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients" and parts[1] and parts[3]:
        return (desanitize(parts[1]), desanitize(parts[3]))
    return None


def quota_values(config: dict[str, str], where: str) -> dict[str, float]:
    """The quota keys of an entity config as numbers (others, e.g. SCRAM credentials, left out)."""
    out = {}
    for key, text in config.items():
        if key not in QUOTA_KEYS:
            continue
        try:
            out[key] = float(text)
        except ValueError:
            log.warning("ignoring the malformed quota %s=%r of %s", key, text, where)
    return out


def add_entities(quotas: Quotas, configs: dict[str, dict[str, str]]) -> None:
    """Add ``{entity path: config}`` to ``quotas`` (entities without quota keys are left out)."""
    for path, config in configs.items():
        entity = parse_entity_path(path)
        if entity is None:
            continue
        values = quota_values(config, path)
        if values:
            quotas[entity] = values


# -- the single broker's file --------------------------------------------------------------------
def local_quota_file(data_dir: Path) -> ConfigMapFile:
    """``<data dir>/__minikafka_client_quotas.json``: client-id and user+client-id entities."""
    return ConfigMapFile(data_dir / FILE, "entities", "a client quotas file")


# -- ZooKeeper -------------------------------------------------------------------------------------
def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return list(client.get_children(path))
    except NoNodeError:
        return []


def read_zk_quotas(client: KazooClient, watch: Callable[[Any], None] | None = None) -> Quotas:
    """Every entity's quotas from ZooKeeper; arms ``watch`` on ``/config/changes`` when given."""
    configs: dict[str, dict[str, str]] = {
        f"users/{sanitize(name)}": config for name, config in zk_users.read_users(client, watch).items()
    }
    paths = [f"clients/{c}" for c in _children(client, CLIENTS)]
    pending = [(u, client.get_children_async(f"{CONFIG}/{u}/clients")) for u in list(configs)]
    for user_path, result in pending:
        try:
            paths.extend(f"{user_path}/clients/{c}" for c in result.get())
        except NoNodeError:
            continue
    reads = [(p, client.get_async(f"{CONFIG}/{p}")) for p in paths]
    for path, result in reads:
        try:
            data, _ = result.get()
            configs[path] = zk_users.decode_config(data)
        except NoNodeError:
            continue
        except (ValueError, UnicodeDecodeError):
            log.warning("ignoring the malformed entity config znode %s/%s", CONFIG, path)
    quotas: Quotas = {}
    add_entities(quotas, configs)
    return quotas


def write_zk_entity(client: KazooClient, path: str, change: Changes) -> None:
    """Merge ``change`` into the znode ``/config/<path>`` (a client-id or user+client-id entity),
    then add the change notification."""
    zk_users.merge_entity(client, path, change)
