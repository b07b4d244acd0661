"""Fixtures of the client tests: one broker per test module (fast group settings), unique topic names."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.broker_process import BrokerProcess

GROUP_ENV = {
    "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "MINIKAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
}

_names = itertools.count()


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker shared by the tests of one module."""
    proc = BrokerProcess(tmp_path_factory.mktemp("client") / "data", env=GROUP_ENV).start()
    try:
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name unique to the test (created on first use by the broker)."""
    return f"{request.node.name.split('[')[0][:40]}-{next(_names)}".replace("_", "-")
