"""One compose stack brought up for a test module, and the real-client reads its tests share."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from tests.broker_process import REPO
from tests.cluster_process import QUIET
from tests.compose.engine import DockerEngine, compose_command, missing_tools, run

PROJECT = "minikafka-test"


@contextmanager
def compose_stack(file: str, services: list[str], ports: list[int], log_dir: Path) -> Iterator[list[str]]:
    """``file`` up with ``services`` (built here), then everything down: containers, volumes, the engine.

    Yields the compose command line (``docker-compose -p ... -f ...``) for the test to use.
    """
    missing = missing_tools()
    if missing:
        pytest.skip(
            f"needs {', '.join(missing)}: make compose-tools (apt-get install docker.io docker-compose mmdebstrap)"
        )
    for port in ports:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                pytest.fail(
                    f"something already listens on 127.0.0.1:{port}, which the compose stack publishes"
                )
    compose = [*compose_command(), "-p", PROJECT, "-f", str(REPO / file)]
    engine = DockerEngine(log_dir)
    with engine:
        started_here = engine.proc is not None
        engine.ensure_base_image()
        run(*compose, "down", "-v", "--remove-orphans", check=False, cwd=REPO)
        try:
            up = run(*compose, "up", "-d", "--build", *services, check=False, cwd=REPO, timeout=1500)
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            yield compose
        finally:
            logs = run(*compose, "logs", "--no-color", check=False, cwd=REPO)
            (REPO / f".compose-test-{Path(file).stem}.log").write_text(logs.stdout[-400_000:])
            run(*compose, "down", "-v", "--remove-orphans", check=False, cwd=REPO, timeout=300)
    if started_here:  # the engine is gone, and so is what it leaves behind
        assert run("ip", "link", "show", "docker0", check=False).returncode != 0, "docker0 left behind"
        assert "-P FORWARD ACCEPT" in run("iptables", "-S", "FORWARD").stdout, "FORWARD policy left at DROP"


def health(compose: list[str], service: str) -> str:
    cid = run(*compose, "ps", "-q", service, cwd=REPO).stdout.strip()
    if not cid:
        return "gone"
    state = json.loads(run("docker", "inspect", cid).stdout)[0]["State"]
    return state.get("Health", {}).get("Status", state["Status"])


def wait_healthy(compose: list[str], services: list[str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    for service in services:
        while (status := health(compose, service)) != "healthy":
            assert status in ("starting", "running"), f"{service}: {status}"
            assert time.monotonic() < deadline, f"{service}: the health check never passed"
            time.sleep(2)


def read_keys(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 60) -> list[bytes]:
    """The keys of every partition of ``topic``, from the start to the end, partition by partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{topic}-{time.time()}",
            "enable.partition.eof": True,
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    keys: list[bytes] = []
    done: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(done) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    done.add(msg.partition())
                continue
            keys.append(msg.key() or b"")
    finally:
        consumer.close()
    assert len(done) == partitions, f"{topic}: read {len(keys)} records, not every partition to its end"
    return keys
