"""docker-compose.yml and the Dockerfile stay honest without a Docker engine.

The compose file is checked for structure, then the broker service's own
command line and environment are run as a local process (data dir, host and
port swapped for a temp dir, 127.0.0.1 and a free port) and real clients use
it; the Dockerfile's HEALTHCHECK command is run against it too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests.broker_process import REPO, free_port

COMPOSE_TOP_LEVEL = {"version", "name", "services", "volumes", "networks", "configs", "secrets"}
SERVICE_KEYS = {
    "build",
    "image",
    "command",
    "entrypoint",
    "environment",
    "ports",
    "volumes",
    "depends_on",
    "healthcheck",
    "restart",
    "working_dir",
    "user",
    "networks",
    "profiles",
    "stop_grace_period",
    "network_mode",
}
BUILD_KEYS = {"context", "dockerfile", "target", "args"}


DOCKERFILE = (REPO / "Dockerfile").read_text()


def load_compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_structure() -> None:
    doc = load_compose()
    assert set(doc) <= COMPOSE_TOP_LEVEL
    named_volumes = set(doc.get("volumes") or {})
    for name, svc in doc["services"].items():
        assert set(svc) <= SERVICE_KEYS, f"{name}: unknown keys {set(svc) - SERVICE_KEYS}"
        assert "image" in svc or "build" in svc, name
        build = svc.get("build")
        if isinstance(build, dict):
            assert set(build) <= BUILD_KEYS, f"{name}: unknown build keys {set(build) - BUILD_KEYS}"
            target = build.get("target")
            if target is not None:
                assert re.search(rf"^FROM \S+ AS {re.escape(target)}$", DOCKERFILE, re.M), (
                    f"no stage {target}"
                )
        network = svc.get("network_mode")
        if network is not None:
            assert (
                network in ("host", "none", "bridge") or network.removeprefix("service:") in doc["services"]
            )
        for dep, cond in (svc.get("depends_on") or {}).items():
            assert dep in doc["services"], f"{name} depends on unknown service {dep}"
            assert cond.get("condition") in (
                "service_started",
                "service_healthy",
                "service_completed_successfully",
            )
        if "command" in svc:
            assert isinstance(svc["command"], list) and all(isinstance(a, str) for a in svc["command"])
        for port in svc.get("ports", []):
            assert re.fullmatch(r"(\d+:)?\d+", str(port)), port
        for vol in svc.get("volumes", []):
            source = str(vol).split(":")[0]
            assert source.startswith((".", "/")) or source in named_volumes, f"undeclared volume {source}"
        for value in (svc.get("environment") or {}).values():
            assert isinstance(value, str), "environment values must be strings in compose"
    broker = doc["services"]["broker"]
    assert broker["command"][:3] == ["python", "-m", "broker"]
    assert any(str(p).endswith(":9092") for p in broker["ports"])


def healthcheck_command() -> list[str]:
    m = re.search(r"HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])", DOCKERFILE)
    assert m, "Dockerfile has a HEALTHCHECK with an exec-form CMD"
    return json.loads(m.group(1))


def test_compose_broker_command_runs_locally(tmp_path: Path) -> None:
    broker = load_compose()["services"]["broker"]
    port = free_port()
    swap = {
        "/data": str(tmp_path / "data"),
        "0.0.0.0": "127.0.0.1",
        "9092": str(port),
        "localhost": "127.0.0.1",
    }
    argv = [swap.get(a, a) for a in broker["command"]]
    argv[0] = sys.executable
    env = {**os.environ, **broker.get("environment", {}), "PYTHONPATH": str(REPO)}
    log = open(tmp_path / "broker.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        health = [sys.executable if a == "python" else a for a in healthcheck_command()]
        health = [str(port) if a == "9092" else a for a in health]
        deadline = time.monotonic() + 20
        while subprocess.run(health, cwd=REPO, env=env, capture_output=True).returncode != 0:
            assert proc.poll() is None, (tmp_path / "broker.log").read_text()
            assert time.monotonic() < deadline, "healthcheck never passed"
            time.sleep(0.2)

        from kafka import KafkaConsumer, KafkaProducer

        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}")
        producer.send("compose", b"from-compose").get(20)
        producer.close()
        consumer = KafkaConsumer(
            "compose",
            bootstrap_servers=f"127.0.0.1:{port}",
            group_id=None,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10000,
        )
        assert [r.value for r in consumer] == [b"from-compose"]
        consumer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
        log.close()
    assert (tmp_path / "data" / "compose-0").is_dir()
    # the healthcheck fails cleanly once the broker is gone
    res = subprocess.run(health, cwd=REPO, env=env, capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.startswith("unhealthy:")
