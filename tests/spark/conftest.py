"""One local[2] Spark session for every Spark test (a JVM start costs seconds), plus helpers."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    if os.environ.get("CI"):
        pytest.fail("Java 17+ is needed for the PySpark tests (apt-get install openjdk-17-jre-headless)")
    pytest.skip("no Java runtime: apt-get install openjdk-17-jre-headless", allow_module_level=True)

from pyspark.sql import SparkSession  # noqa: E402

from client.admin import AdminClient, NewTopic  # noqa: E402
from client.spark.session import local_session  # noqa: E402
from tests.broker_process import REPO, BrokerProcess  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    session = local_session("minikafka-spark-test", shuffle_partitions=2)
    try:
        yield session
    finally:
        session.stop()


def create_topics(bootstrap: str, **partitions: int) -> None:
    """Create topics named by keyword with that many partitions each."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        result = admin.create_topics([NewTopic(name, n, 1) for name, n in partitions.items()])
        assert all(err is None for err in result.values()), result


@contextlib.contextmanager
def running_broker(
    tmp_path_factory: pytest.TempPathFactory, name: str, env: dict[str, str] | None = None
) -> Iterator[BrokerProcess]:
    """A broker subprocess with its data in a fresh temp dir; it must exit cleanly when stopped."""
    proc = BrokerProcess(tmp_path_factory.mktemp(name) / "data", env=env).start()
    try:
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"
