"""Flink's Kafka connector against a 3-broker cluster (marker ``flink``: `make test-flink`).

The job runs under build/flink/venv (apache-flink, kept apart from the test venv: see
tests/flink/requirements.txt) with the connector jars in build/flink/lib; the cluster is
started once for the module and its topics are per test.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from broker.dev_cluster import INSTALL_HINT as ZOOKEEPER_HINT
from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_available
from tests.flink.fetch_jars import JARS, connector_flink_version
from tests.flink.flink_run import FLINK_DIR, INSTALL_HINT, RESULTS, FlinkInstall


@pytest.fixture(scope="session")
def flink_install() -> FlinkInstall:
    """The PyFlink venv and the jars; fails (not skips) when missing or when the installed Flink
    is not the one the connector was built for."""
    python = FLINK_DIR / "venv" / "bin" / "python"
    jars = tuple(FLINK_DIR / "lib" / jar for jar in JARS)
    if shutil.which("java") is None:
        pytest.fail("Java 17 is needed: apt-get install openjdk-17-jre-headless", pytrace=False)
    if not python.exists() or not all(jar.is_file() for jar in jars):
        pytest.fail(INSTALL_HINT, pytrace=False)
    installed = subprocess.run(
        [str(python), "-c", "from pyflink.version import __version__; print(__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    wanted = connector_flink_version(jars[0])
    if not installed.startswith(wanted + "."):
        pytest.fail(f"apache-flink {installed} installed, the connector is built for Flink {wanted}")
    return FlinkInstall(python, jars)


@pytest.fixture(scope="module")
def flink_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """ZooKeeper and three brokers for the module."""
    if not zookeeper_available():
        pytest.fail(f"ZooKeeper is needed: {ZOOKEEPER_HINT}", pytrace=False)
    root = tmp_path_factory.mktemp("flink-cluster")
    with ZooKeeperProcess(root / "zookeeper") as zk, Cluster(root, zk) as cluster:
        yield cluster


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RESULTS:
        terminalreporter.section("Flink exactly-once runs")
        for line in RESULTS:
            terminalreporter.write_line(line)
