"""Fixtures of the console tests: the client tests' broker (one per module, fast group settings)
and unique topic names."""

from typing import Any

import pytest

from tests.client.conftest import kafka, topic

__all__ = ["REPORTS", "kafka", "topic"]

REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the test (``item.stash[REPORTS]``), so a fixture can tell a
    failed test in its teardown (the browser tests save a screenshot and the console's log)."""
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report
