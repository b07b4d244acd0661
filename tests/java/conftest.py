"""Kafka's own Java client against the broker (marker ``java``: `make test-java`).

Each module starts its brokers once and runs one JVM per broker configuration; every check
the JVM reports is a test of its own (tests/java/jvm.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.java import jvm


@pytest.fixture(scope="session")
def java_classes() -> Path:
    """tests/java/*.java compiled against the client's jars (once a session, only when stale)."""
    return jvm.compile_checks()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if jvm.REPORTED:
        terminalreporter.section("Java client checks")
        for line in jvm.summary_lines(jvm.REPORTED, verbose=terminalreporter.verbosity > 0):
            terminalreporter.write_line(line)
