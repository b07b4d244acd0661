"""Where dynamic broker configs are kept: Kafka's ZooKeeper layout, or a file on a single broker.

Cluster (Kafka's ZooKeeper mode, AdminZkClient.changeBrokerConfig)::

    /config/brokers/<id>                  {"version":1,"config":{"log.retention.ms":"3600000"}}
    /config/brokers/<default>             the cluster default, same form
    /config/changes/config_change_<seq>   {"version":2,"entity_path":"brokers/<id>"} (sequential)

A change replaces the entity's whole ``config`` map (a conditional set on the
znode's version, so two writers never lose each other's keys: the loser
re-reads and re-applies its operations), then adds the change notification
that every broker (ours and Kafka's) watches. Password configs are stored
encrypted (broker/dynamic/passwords.py).

Single broker: ``<data dir>/__minikafka_broker_configs.json`` =
``{"version": 1, "brokers": {"<default>": {...}, "0": {...}}}``, replaced
durably (temporary file, fsync, rename; mode 0600), re-read when it changes on
disk.

Blocking calls (files, kazoo): callers run them in worker threads, except at
start-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.security import zk_users
from broker.security.durable_file import ConfigMapFile

DEFAULT = "<default>"  # Kafka's name of the cluster default entity
BROKERS = "/config/brokers"
FILE = "__minikafka_broker_configs.json"


def entity(node_id: int | None) -> str:
    """The entity name of one broker's configs, or of the cluster default (None)."""
    return DEFAULT if node_id is None else str(node_id)


def local_file(data_dir: Path) -> ConfigMapFile:
    return ConfigMapFile(data_dir / FILE, "brokers", "a broker configs file")


def read_entity(
    client: KazooClient, name: str, watch: Callable[[Any], None] | None = None
) -> tuple[dict[str, str], int]:
    """(config, znode version) of ``/config/brokers/<name>``; ({}, -1) when absent. Arms ``watch`` on
    ``/config/changes`` (children) when given. ValueError for a znode that is not Kafka's JSON."""
    if watch is not None:
        try:
            client.get_children(zk_users.CHANGES, watch=watch)
        except NoNodeError:
            client.exists(zk_users.CHANGES, watch=watch)
    try:
        data, stat = client.get(f"{BROKERS}/{name}")
    except NoNodeError:
        return {}, -1
    return zk_users.decode_config(data), stat.version


def write_entity(client: KazooClient, name: str, config: dict[str, str], version: int) -> bool:
    """Replace ``/config/brokers/<name>`` with ``config`` if it is still at ``version`` (-1: absent),
    then notify; False when another writer changed it first."""
    body = json.dumps({"version": 1, "config": config}).encode()
    path = f"{BROKERS}/{name}"
    try:
        if version < 0:
            client.create(path, body, makepath=True)
        else:
            client.set(path, body, version=version)
    except (BadVersionError, NodeExistsError, NoNodeError):
        return False
    note = json.dumps({"version": 2, "entity_path": f"brokers/{name}"}).encode()
    client.create(f"{zk_users.CHANGES}/{zk_users.CHANGE_PREFIX}", note, sequence=True, makepath=True)
    return True
