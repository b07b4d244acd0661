from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess


@pytest.fixture
def gbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker for group tests: a new group's first rebalance waits 100 ms, not Kafka's 3 s."""
    proc = BrokerProcess(tmp_path / "data", env={"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "100"}).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A fresh broker subprocess on a free port with a temp data dir."""
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


@pytest.fixture
def kcat() -> str:
    path = shutil.which("kcat")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("kcat is not installed (CI installs it with apt-get in .ci/run)")
        pytest.skip("kcat not installed: apt-get install kcat")
    return path
