"""A real ZooKeeper and three real brokers per test (marker ``cluster``: `make test-cluster`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_for_test

pytestmark = pytest.mark.cluster


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperProcess]:
    with zookeeper_for_test(tmp_path / "zookeeper") as zk:
        yield zk


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: ZooKeeperProcess) -> Iterator[Cluster]:
    with Cluster(tmp_path, zookeeper) as c:
        yield c
