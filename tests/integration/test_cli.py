"""The broker's command line: clear errors for bad configuration, clean exit on SIGTERM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.broker_process import REPO, BrokerProcess


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "broker", *args], cwd=REPO, capture_output=True, text=True, timeout=30, env=env
    )


def test_unknown_config_key_stops_with_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "server.properties"
    cfg.write_text("num.partitions=2\nlog.retention.banana=1\n")
    res = run_cli("--config", str(cfg), "--data-dir", str(tmp_path / "d"))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"minikafka: configuration error: unknown configuration key 'log.retention.banana' (from {cfg});"
        " did you mean log.retention.ms?"
    ]


def test_print_config_shows_sources(tmp_path: Path) -> None:
    import os

    res = run_cli("--print-config", "--port", "1234", env={**os.environ, "MINIKAFKA_NUM_PARTITIONS": "4"})
    assert res.returncode == 0
    lines = {line.split("=")[0].strip(): line for line in res.stdout.splitlines()}
    assert lines["port"].endswith("# command line") and "1234" in lines["port"]
    assert "env MINIKAFKA_NUM_PARTITIONS" in lines["num.partitions"]


def test_second_broker_on_same_data_dir_refused(broker: BrokerProcess) -> None:
    res = run_cli("--data-dir", str(broker.data_dir), "--port", "0")
    assert res.returncode == 1
    assert "minikafka: cannot start broker" in res.stderr and "lock" in res.stderr.lower()


def test_json_log_lines(tmp_path: Path) -> None:
    import json

    proc = BrokerProcess(tmp_path / "data", env={"MINIKAFKA_LOG_FORMAT": "json"}).start()
    assert proc.stop() == 0
    lines = [json.loads(line) for line in proc.log().splitlines() if line.strip()]
    assert any("listening on" in doc["msg"] for doc in lines)
    assert all({"ts", "level", "logger", "msg"} <= set(doc) for doc in lines)


def test_a_config_error_found_while_the_broker_is_built_is_one_line(tmp_path: Path) -> None:
    """An inter-broker SASL listener without the broker's own login: found when the broker object is
    built (after the file was read), and still one line, not a traceback."""
    cfg = tmp_path / "server.properties"
    cfg.write_text(
        "listeners=INTERNAL://127.0.0.1:0\n"
        "listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT\n"
        "inter.broker.listener.name=INTERNAL\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "sasl.mechanism.inter.broker.protocol=PLAIN\n"
        "listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
        'PlainLoginModule required user_admin="secret";\n'
    )
    res = run_cli("--config", str(cfg), "--data-dir", str(tmp_path / "d"))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr
    assert lines[-1].startswith(
        "minikafka: configuration error: inter-broker listener INTERNAL uses SASL PLAIN"
    )
