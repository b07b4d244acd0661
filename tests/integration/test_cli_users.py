"""`minikafka users list|add|delete` as real subprocesses against a broker with a SCRAM listener."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess
from tests.client.test_admin_users import start_sasl_broker

pytestmark = [pytest.mark.cli, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_sasl_broker(tmp_path_factory.mktemp("cli-users"))
    try:
        yield proc, sasl
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


def mk(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run `minikafka ARGS...` (the console script's entry point); never a traceback."""
    res = subprocess.run(
        [sys.executable, "-m", "broker.cli", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr, res.stderr
    return res


def ok(*args: str, stdin: str = "") -> str:
    res = mk(*args, stdin=stdin)
    assert res.returncode == 0 and not res.stderr, (args, res.stdout, res.stderr)
    return res.stdout


def fails(*args: str, message: str, stdin: str = "") -> None:
    """Exit code 1 and exactly one line on stderr containing ``message``."""
    res = mk(*args, stdin=stdin)
    assert res.returncode == 1, (args, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error: ") and message in lines[0], lines


def listing(bootstrap: str, *names: str) -> list[dict[str, object]]:
    return json.loads(ok("users", "list", *names, "--bootstrap-server", bootstrap, "--json"))


def test_add_list_delete(brokers: tuple[BrokerProcess, str]) -> None:
    b = ("--bootstrap-server", brokers[0].bootstrap)
    out = ok("users", "add", "alice", "--password", "pw-one", *b)
    assert out == "Set the SCRAM-SHA-512 credential of user alice (4096 iterations).\n"
    added = json.loads(
        ok(
            "users",
            "add",
            "alice",
            "--mechanism",
            "scram-sha-256",
            "--iterations",
            "8192",
            "--json",
            *b,
            stdin="pw\n",
        )
    )
    assert added == {"user": "alice", "set": ["SCRAM-SHA-256"], "iterations": 8192}
    rows = [line.split() for line in ok("users", "list", "alice", *b).splitlines()]
    assert rows == [
        ["USER", "MECHANISM", "ITERATIONS"],
        ["alice", "SCRAM-SHA-256", "8192"],
        ["alice", "SCRAM-SHA-512", "4096"],
    ]
    assert listing(b[1], "alice") == [
        {
            "user": "alice",
            "credentials": [
                {"mechanism": "SCRAM-SHA-256", "iterations": 8192},
                {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
            ],
        }
    ]
    assert ok("users", "delete", "alice", "--mechanism", "SCRAM-SHA-256", *b) == (
        "Deleted the SCRAM-SHA-256 credential of user alice.\n"
    )
    assert "alice" in [u["user"] for u in listing(b[1])]
    assert json.loads(ok("users", "delete", "alice", "--json", *b)) == {
        "user": "alice",
        "deleted": ["SCRAM-SHA-512"],
    }
    fails("users", "list", "alice", *b, message="user 'alice' has no SCRAM credentials")
    assert "alice" not in [u["user"] for u in listing(b[1])]


def test_password_sources(brokers: tuple[BrokerProcess, str], tmp_path: Path) -> None:
    b = ("--bootstrap-server", brokers[0].bootstrap)
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\nignored\n")
    ok("users", "add", "frank", "--password-file", str(secret), *b)
    fails("users", "add", "frank", *b, stdin="", message="no password for user 'frank'")
    fails("users", "add", "frank", "--password-file", str(tmp_path / "none"), *b, message="cannot read")
    both = mk("users", "add", "frank", "--password", "x", "--password-file", str(secret), *b)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    bad = mk("users", "add", "frank", "--mechanism", "SCRAM-SHA-1", "--password", "x", *b)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


# Runs in a new session (no controlling terminal yet): opening the pty makes it the session's
# terminal, the /dev/tty that getpass reads; then becomes `minikafka ARGS...`.
_ON_A_TERMINAL = (
    "import os, sys; os.close(os.open(os.ttyname(0), os.O_RDWR)); os.execv(sys.argv[1], sys.argv[1:])"
)


def _answer(master: int, line: bytes) -> None:
    """Type ``line`` once the prompt's reader has turned echo off and settled: the pty's line
    discipline handles input asynchronously, so typing the moment the prompt shows can race
    getpass's own terminal changes (which flush pending input)."""
    deadline = time.monotonic() + 5
    while termios.tcgetattr(master)[3] & termios.ECHO and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    os.write(master, line)


def test_prompts_for_the_password_on_a_terminal(brokers: tuple[BrokerProcess, str]) -> None:
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ON_A_TERMINAL, sys.executable, "-m", "broker.cli"]
        + ["users", "add", "gina", "--bootstrap-server", brokers[0].bootstrap],
        cwd=REPO,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    output = b""
    answers = [b"typed-pw\n", b"typed-pw\n"]
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(master, 1024)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
            if answers and output.rstrip().endswith(b":"):
                _answer(master, answers.pop(0))
                output += b"\n"
        code = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = output.decode(errors="replace")
    assert code == 0, text
    assert "Password for gina:" in text and "Retype it:" in text and "typed-pw" not in text
    assert "Set the SCRAM-SHA-512 credential of user gina" in text


def test_command_config_reaches_the_sasl_listener(brokers: tuple[BrokerProcess, str], tmp_path: Path) -> None:
    ok(
        "users",
        "add",
        "admin",
        "--mechanism",
        "SCRAM-SHA-256",
        "--bootstrap-server",
        brokers[0].bootstrap,
        stdin="adm1n\n",
    )
    good, wrong = tmp_path / "good.properties", tmp_path / "wrong.properties"
    props = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=admin\n"
    good.write_text(props + "sasl.password=adm1n\n")
    wrong.write_text(props + "sasl.password=nope\n")
    sasl = ("--bootstrap-server", brokers[1], "--command-config")
    ok("users", "add", "henry", "--password", "h", *sasl, str(good))
    names = [u["user"] for u in json.loads(ok("users", "list", "--json", *sasl, str(good)))]
    assert {"admin", "henry"} <= set(names)
    ok("users", "delete", "henry", *sasl, str(good))
    fails("users", "list", *sasl, str(wrong), message="invalid credentials with SASL mechanism SCRAM-SHA-256")
    fails("users", "list", *sasl, str(tmp_path / "absent"), message="cannot read --command-config")


def test_errors_are_one_line(brokers: tuple[BrokerProcess, str]) -> None:
    b = ("--bootstrap-server", brokers[0].bootstrap)
    fails(
        "users",
        "delete",
        "nobody",
        *b,
        message="user 'nobody': RESOURCE_NOT_FOUND (Attempt to delete a user credential that does not exist)",
    )
    fails("users", "delete", "nobody", "--mechanism", "SCRAM-SHA-256", *b, message="RESOURCE_NOT_FOUND")
    fails(
        "users",
        "add",
        "ivy",
        "--iterations",
        "100",
        "--password",
        "p",
        *b,
        message="UNACCEPTABLE_CREDENTIAL (Iterations 100 not in the range [4096, 16384]",
    )
    fails("users", "list", "--bootstrap-server", "127.0.0.1:1", message="cannot connect to 127.0.0.1:1")
    fails(
        "users",
        "add",
        "ivy",
        "--password",
        "p",
        "--bootstrap-server",
        "127.0.0.1:1",
        message="cannot connect",
    )
    top = mk("--help")
    assert top.returncode == 0 and "users" in top.stdout
    assert mk("users").returncode == 2
