"""`minikafka console`: settings from flags, a properties file and the environment; one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import load, parser
from console.settings import SettingsError

REPO = Path(__file__).resolve().parents[2]


def test_flags_win_over_the_environment_and_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "console.properties"
    conf.write_text(
        "# a comment\nconsole.port=9000\nconsole.retention=3\nbootstrap.servers=file:9092\n"
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
    )
    args = parser().parse_args(["--config", str(conf), "--bootstrap-server", "flag:9092"])
    settings = load(args, {"MINIKAFKA_CONSOLE_PORT": "9100", "MINIKAFKA_CONSOLE_SAMPLE_INTERVAL_MS": "2500"})
    assert settings.port == 9100
    assert settings.retention_days == 3
    assert settings.sample_interval_s == 2.5
    assert settings.bootstrap_servers == "flag:9092"
    client = settings.client_config()
    assert client["security.protocol"] == "SASL_SSL" and client["bootstrap.servers"] == "flag:9092"
    assert load(parser().parse_args(["--port", "9200", "--config", str(conf)]), {}).port == 9200


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("console.port=eighty", "console.port must be a number"),
        ("console.port=70000", "console.port must be a port number"),
        ("console.retention=0", "console.retention must be at least"),
        ("console.colour=blue", "unknown console setting 'console.colour'"),
        ("just a line", "expected key=value"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, text: str, expected: str) -> None:
    conf = tmp_path / "c.properties"
    conf.write_text(text + "\n")
    with pytest.raises(SettingsError, match=expected):
        load(parser().parse_args(["--config", str(conf)]), {})


def test_the_command_says_one_line_and_exits_2(tmp_path: Path) -> None:
    missing = subprocess.run(
        [sys.executable, "-m", "broker.cli", "console", "--config", str(tmp_path / "nope.properties")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"minikafka console: cannot read {tmp_path / 'nope.properties'}: No such file or directory"
    ]


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "console", "--port", str(port), "--history", str(tmp_path / "h.sqlite3")],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(f"minikafka console: cannot serve on 127.0.0.1:{port}")
    )
