"""docker-compose.yml brought up for real (`make test-compose`): a real engine, real images, real clients.

The stack is built from the repository's Dockerfile, the broker's health check
must turn healthy, confluent-kafka produces and consumes through the published
port, the Spark example service runs to completion and its output topic has
rows; then everything is torn down (containers, volumes, the engine this test
started, and what dockerd leaves in iptables and links).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.broker_process import REPO
from tests.compose.engine import DockerEngine, compose_command, missing_tools, run

pytestmark = [pytest.mark.compose, pytest.mark.timeout(2400)]

PROJECT = "minikafka-test"
BOOTSTRAP = "127.0.0.1:9092"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    missing = missing_tools()
    if missing:
        pytest.skip(
            f"needs {', '.join(missing)}: make compose-tools (apt-get install docker.io docker-compose mmdebstrap)"
        )
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 9092)) == 0:
            pytest.fail("something already listens on 127.0.0.1:9092, which the compose stack publishes")
    compose = [*compose_command(), "-p", PROJECT, "-f", str(REPO / "docker-compose.yml")]
    engine = DockerEngine(tmp_path_factory.mktemp("docker"))
    with engine:
        started_here = engine.proc is not None
        engine.ensure_base_image()
        run(*compose, "down", "-v", "--remove-orphans", check=False, cwd=REPO)
        try:
            up = run(*compose, "up", "-d", "--build", "broker", check=False, cwd=REPO, timeout=1500)
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            yield compose
        finally:
            logs = run(*compose, "logs", "--no-color", check=False, cwd=REPO)
            (REPO / ".compose-test.log").write_text(logs.stdout[-200_000:])
            run(*compose, "down", "-v", "--remove-orphans", check=False, cwd=REPO, timeout=300)
    if started_here:  # the engine is gone, and so is what it leaves behind
        assert run("ip", "link", "show", "docker0", check=False).returncode != 0, "docker0 left behind"
        assert "-P FORWARD ACCEPT" in run("iptables", "-S", "FORWARD").stdout, "FORWARD policy left at DROP"


def _health(compose: list[str]) -> str:
    cid = run(*compose, "ps", "-q", "broker", cwd=REPO).stdout.strip()
    state = json.loads(run("docker", "inspect", cid).stdout)[0]["State"]
    return state.get("Health", {}).get("Status", state["Status"])


def test_broker_turns_healthy_and_serves_real_clients(stack: list[str]) -> None:
    deadline = time.monotonic() + 120
    while (status := _health(stack)) != "healthy":
        assert status in ("starting", "running"), status
        assert time.monotonic() < deadline, "the broker's health check never passed"
        time.sleep(2)
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all"})
    for n in range(100):
        producer.produce("compose-test", key=str(n).encode(), value=b"v%d" % n)
    assert producer.flush(30) == 0
    assert [int(key) for key in _read_keys("compose-test")] == list(range(100))


def test_spark_example_runs_to_completion(stack: list[str]) -> None:
    job = run(*stack, "run", "--rm", "spark-example", check=False, cwd=REPO, timeout=1500)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert _read_keys("events-per-minute")  # the job's per-minute totals


def _read_keys(topic: str) -> list[bytes]:
    """The keys of partition 0 of ``topic`` from its start to its end, through the published port."""
    consumer = Consumer(
        {"bootstrap.servers": BOOTSTRAP, "group.id": f"read-{topic}", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    keys = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    break
                continue
            keys.append(msg.key() or b"")
    finally:
        consumer.close()
    return keys
