"""`make cluster` (python -m broker.dev_cluster): ZooKeeper and three brokers that answer, each in the
rack it was given, stopped by Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.broker_process import REPO, free_port
from tests.cluster.helpers import broker_racks
from tests.cluster_process import QUIET, zookeeper_available

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(not zookeeper_available(), reason="ZooKeeper not installed"),
]


def test_dev_cluster_starts_three_brokers_in_their_racks_and_stops_them_all(tmp_path: Path) -> None:
    first = free_port()  # the next two are very likely free as well
    ports = [first, first + 1, first + 2]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.dev_cluster",
            "--data-dir",
            str(tmp_path / "data"),
            "--first-port",
            str(first),
            "--zookeeper-port",
            str(free_port()),
            "--racks",
            "a,b",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
        deadline = time.monotonic() + 60
        brokers: set[int] = set()
        while brokers != {1, 2, 3} and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                brokers = set(
                    AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
                    .list_topics(timeout=2)
                    .brokers
                )
            except Exception:
                time.sleep(0.5)
        assert brokers == {1, 2, 3}
        # the racks are given in turn
        assert broker_racks(bootstrap) == {1: "a", 2: "b", 3: "a"}
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Ctrl-C stops everything" in out
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path / "data")], capture_output=True, text=True).stdout
    assert leftover == "", f"processes left running: {leftover}"
