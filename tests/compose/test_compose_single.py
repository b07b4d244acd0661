"""docker-compose.single.yml brought up for real (`make test-compose`): one broker, no ZooKeeper.

The stack is built from the repository's Dockerfile, the broker's health check
must turn healthy, confluent-kafka produces and consumes through the published
port, the Spark example service runs to completion and its output topic has
rows; then everything is torn down (containers, volumes, the engine this test
started, and what dockerd leaves in iptables and links).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from tests.broker_process import REPO
from tests.compose.engine import run
from tests.compose.stack import compose_stack, read_keys, wait_healthy

pytestmark = [pytest.mark.compose, pytest.mark.timeout(2400)]

BOOTSTRAP = "127.0.0.1:9092"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with compose_stack(
        "docker-compose.single.yml", ["broker"], [9092], tmp_path_factory.mktemp("docker")
    ) as c:
        yield c


def test_broker_turns_healthy_and_serves_real_clients(stack: list[str]) -> None:
    wait_healthy(stack, ["broker"], 120)
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all"})
    for n in range(100):
        producer.produce("compose-test", key=str(n).encode(), value=b"v%d" % n)
    assert producer.flush(30) == 0
    assert [int(key) for key in read_keys(BOOTSTRAP, "compose-test")] == list(range(100))


def test_spark_example_runs_to_completion(stack: list[str]) -> None:
    built = run(*stack, "build", "spark-example", check=False, cwd=REPO, timeout=1500)  # `run` never builds
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    job = run(*stack, "run", "--rm", "spark-example", check=False, cwd=REPO, timeout=1500)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert read_keys(BOOTSTRAP, "events-per-minute")  # the job's per-minute totals
