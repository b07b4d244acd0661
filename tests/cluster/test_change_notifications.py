"""Kafka's expiry of change notifications, against a real ZooKeeper (marker ``cluster``)."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from broker.security import zk_users
from tests.cluster_process import ZooKeeperProcess

pytestmark = pytest.mark.cluster


def test_notifications_older_than_fifteen_minutes_are_purged(zookeeper: ZooKeeperProcess) -> None:
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(timeout=15)
    try:
        for _ in range(3):
            client.create(f"{zk_users.CHANGES}/{zk_users.CHANGE_PREFIX}", b"{}", sequence=True, makepath=True)
        client.create(f"{zk_users.CHANGES}/other", b"")
        now_ms = int(time.time() * 1000)
        zk_users.purge_changes(client, zk_users.CHANGES, zk_users.CHANGE_PREFIX, now_ms)
        assert len(client.get_children(zk_users.CHANGES)) == 4  # all recent: kept
        later = now_ms + zk_users.CHANGE_EXPIRATION_MS + 60_000
        zk_users.purge_changes(client, zk_users.CHANGES, zk_users.CHANGE_PREFIX, later)
        assert client.get_children(zk_users.CHANGES) == ["other"]  # only notifications go
    finally:
        client.stop()
        client.close()
