"""Kafka's own server.properties files, unmodified, start a broker that kcat can use.

The files in tests/data/kafka are Kafka's shipped settings. The test only points
the data directory, listening address and advertised address at a temp dir and
a free 127.0.0.1 port through flags and environment variables (which win over
the file, as documented); every key in the file is read as Kafka would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess, free_port

KAFKA_FILES = REPO / "tests" / "data" / "kafka"

pytestmark = pytest.mark.skipif(
    shutil.which("kcat") is None, reason="kcat not installed: apt-get install kcat"
)


def _kcat(*args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["kcat", *args], input=stdin, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def start_with(config: Path, data: Path, **env: str) -> BrokerProcess:
    port = free_port()
    broker = BrokerProcess(
        data,
        port=port,
        extra=["--config", str(config)],
        env={"MINIKAFKA_ADVERTISED_HOST": "127.0.0.1", "MINIKAFKA_ADVERTISED_PORT": str(port), **env},
    )
    return broker.start()


def check_kcat_round_trip(broker: BrokerProcess) -> None:
    assert "1 brokers:" in _kcat("-L", "-b", broker.bootstrap)
    _kcat("-P", "-b", broker.bootstrap, "-t", "stock", "-K", ":", stdin="k1:hello\nk2:world\n")
    out = _kcat("-C", "-b", broker.bootstrap, "-t", "stock", "-o", "beginning", "-e", "-f", "%k=%s\n")
    assert out.splitlines() == ["k1=hello", "k2=world"]


@pytest.mark.parametrize("name", ["kraft-3.9-server.properties", "kraft-4.0-server.properties"])
def test_stock_kraft_file_starts_a_broker_kcat_can_use(tmp_path: Path, name: str) -> None:
    broker = start_with(KAFKA_FILES / name, tmp_path / "data")
    try:
        check_kcat_round_trip(broker)
    finally:
        broker.stop()
    log = broker.log()
    ignored = [line for line in log.splitlines() if "Kafka configuration keys minikafka does not use" in line]
    assert len(ignored) == 1 and "process.roles" in ignored[0] and "num.network.threads" in ignored[0]
    assert "Traceback" not in log


def test_a_misspelt_key_stops_the_broker_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text((KAFKA_FILES / "kraft-4.0-server.properties").read_text() + "log.retention.hour=5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "broker", "--config", str(config), "--data-dir", str(tmp_path / "d")],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "'log.retention.hour'" in lines[0]
        and "did you mean log.retention.hours?" in lines[0]
    )
