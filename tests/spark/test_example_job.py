"""The example Spark job, run exactly as docker-compose's spark-example service runs it.

The service's command line and environment come from docker-compose.single.yml
(broker address swapped for a local broker subprocess); the job seeds the
input topic, aggregates it in its own Spark process and writes the totals,
which confluent-kafka reads back and this test recomputes independently.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from client.spark.example_job import sample_events
from tests.broker_process import REPO, BrokerProcess
from tests.compat.clients import consume_confluent
from tests.spark.conftest import running_broker

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory, "spark-example") as proc:
        yield proc


def load_compose() -> dict[str, Any]:
    """docker-compose.single.yml as a dict (the file is brought up for real by tests/compose)."""
    return yaml.safe_load((REPO / "docker-compose.single.yml").read_text())


def test_compose_spark_example_service_runs_the_job(broker: BrokerProcess) -> None:
    service = load_compose()["services"]["spark-example"]
    assert service["network_mode"] == "service:broker"
    argv = [broker.bootstrap if a == "localhost:9092" else a for a in service["command"]]
    assert argv[:3] == ["python", "-m", "client.spark.example_job"] and broker.bootstrap in argv
    argv[0] = sys.executable
    seeded = int(argv[argv.index("--seed") + 1])
    env = {
        **os.environ,
        **service.get("environment", {}),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]

    expected: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for key, value, ts in sample_events(seeded):
        minute = dt.datetime.fromtimestamp(ts // 60_000 * 60, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        entry = expected[(key.decode(), minute)]
        entry[0] += 1
        entry[1] += json.loads(value)["amount"]
    assert f"wrote {len(expected)} per-user, per-minute totals" in done.stdout

    got = {}
    for m in consume_confluent(broker.bootstrap, "events-per-minute", 0, len(expected)):
        row = json.loads(m.value)
        assert m.key == row["user"].encode()
        got[(row["user"], row["minute"])] = (row["count"], row["total"])
    assert got.keys() == expected.keys()
    for k, (count, total) in expected.items():
        assert got[k][0] == count and got[k][1] == pytest.approx(total, abs=0.01), k
