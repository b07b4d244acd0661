"""Kafka's ZooKeeper-mode server.properties, unmodified, makes a one-broker cluster on a real ZooKeeper."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cluster_process import ZooKeeperProcess
from tests.integration.test_stock_properties import KAFKA_FILES, check_kcat_round_trip, start_with

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed"),
]


def test_stock_zookeeper_file_joins_zookeeper_and_serves_kcat(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    broker = start_with(
        KAFKA_FILES / "zookeeper-3.9-server.properties",
        tmp_path / "data",
        MINIKAFKA_ZOOKEEPER_CONNECT=zookeeper.connect_string,  # the file's localhost:2181, on the test's port
    )
    try:
        check_kcat_round_trip(broker)
    finally:
        broker.stop()
    log = broker.log()
    assert "registered as broker 0 in ZooKeeper" in log and "is the controller" in log
    assert "Traceback" not in log
