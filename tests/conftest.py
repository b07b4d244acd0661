from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess

# Brokers started by the tests (subprocesses inherit this; a test's own setting wins) start a new
# group's first rebalance after 100 ms instead of Kafka's 3 s default, as Kafka's own
# config/server.properties does for development (it sets 0): most tests create groups, and the
# wait was a tenth of `make test`. The delay itself is tested in tests/unit/test_group_coordinator.py.
os.environ.setdefault("MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "100")


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
