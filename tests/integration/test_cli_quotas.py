"""`minikafka quotas list|set|delete` as real subprocesses against a broker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.broker_process import REPO, BrokerProcess, free_port

pytestmark = [pytest.mark.cli, pytest.mark.timeout(90)]


def mk(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `minikafka ARGS...` (the console script's entry point); never a traceback."""
    res = subprocess.run(
        [sys.executable, "-m", "broker.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in res.stderr, res.stderr
    return res


def ok(*args: str) -> str:
    res = mk(*args)
    assert res.returncode == 0 and not res.stderr, (args, res.stdout, res.stderr)
    return res.stdout


def fails(*args: str, message: str) -> None:
    """Exit code 1 and exactly one line on stderr containing ``message``."""
    res = mk(*args)
    assert res.returncode == 1, (args, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error: ") and message in lines[0], lines


def test_set_list_delete(broker: BrokerProcess) -> None:
    b = ("--bootstrap-server", broker.bootstrap)
    out = ok(
        "quotas",
        "set",
        "--user",
        "alice",
        "--producer-byte-rate",
        "1048576",
        "--consumer-byte-rate",
        "2e6",
        *b,
    )
    assert out == "Set producer_byte_rate=1048576, consumer_byte_rate=2000000 for user alice.\n"
    out = ok("quotas", "set", "--client-default", "--request-percentage", "12.5", *b)
    assert out == "Set request_percentage=12.5 for the default client-id.\n"
    got = json.loads(
        ok(
            "quotas",
            "set",
            "--user",
            "alice",
            "--client-id",
            "app",
            "--producer-byte-rate",
            "1024",
            "--json",
            *b,
        )
    )
    assert got == {"user": "alice", "client_id": "app", "set": {"producer_byte_rate": 1024}}
    ok("quotas", "set", "--user-default", "--controller-mutation-rate", "3", *b)

    assert ok("quotas", "list", *b).splitlines() == [
        "USER       CLIENT-ID  KEY                       VALUE",
        "-          <default>  request_percentage        12.5",
        "<default>  -          controller_mutation_rate  3",
        "alice      -          consumer_byte_rate        2000000",
        "alice      -          producer_byte_rate        1048576",
        "alice      app        producer_byte_rate        1024",
    ]
    listed = json.loads(ok("quotas", "list", "--user", "alice", "--json", *b))
    assert listed == [
        {
            "user": "alice",
            "client_id": None,
            "quotas": {"consumer_byte_rate": 2000000, "producer_byte_rate": 1048576},
        },
        {"user": "alice", "client_id": "app", "quotas": {"producer_byte_rate": 1024}},
    ]
    strict = json.loads(ok("quotas", "list", "--user", "alice", "--strict", "--json", *b))
    assert [e["client_id"] for e in strict] == [None]
    assert json.loads(ok("quotas", "list", "--client-default", "--json", *b))[0]["client_id"] == "<default>"

    out = ok("quotas", "delete", "--user", "alice", "--consumer-byte-rate", *b)
    assert out == "Deleted consumer_byte_rate of user alice.\n"
    out = ok("quotas", "delete", "--user", "alice", "--client-id", "app", "--all", *b)
    assert out == "Deleted producer_byte_rate of user alice and client-id app.\n"
    got = json.loads(ok("quotas", "delete", "--client-default", "--all", "--json", *b))
    assert got == {"user": None, "client_id": "<default>", "deleted": ["request_percentage"]}
    assert ok("quotas", "list", "--user", "alice", *b).splitlines() == [
        "USER   CLIENT-ID  KEY                   VALUE",
        "alice  -          producer_byte_rate  1048576",
    ]
    fails("quotas", "delete", "--client-id", "nobody", "--all", *b, message="client-id nobody has no quotas")


def test_refusals_are_one_line(broker: BrokerProcess) -> None:
    b = ("--bootstrap-server", broker.bootstrap)
    fails("quotas", "set", "--producer-byte-rate", "5", *b, message="name the entity: --user NAME")
    fails("quotas", "set", "--user", "bob", *b, message="nothing to set")
    fails(
        "quotas",
        "set",
        "--user",
        "bob",
        "--producer-byte-rate",
        "1.5",
        *b,
        message="producer_byte_rate cannot be a fractional value.",
    )
    fails(
        "quotas", "set", "--client-id", "c", "--consumer-byte-rate", "0", *b, message="must be greater than 0"
    )
    fails("quotas", "delete", "--user", "bob", *b, message="nothing to delete")
    fails("quotas", "delete", "--user", "bob", "--all", "--request-percentage", *b, message="not both")
    assert (
        mk("quotas", "set", "--user", "a", "--user-default", "--request-percentage", "1", *b).returncode == 2
    )
    fails(
        "quotas",
        "list",
        "--bootstrap-server",
        f"127.0.0.1:{free_port()}",
        "--timeout-ms",
        "2000",
        message="",
    )
    assert ok("quotas", "list", "--json", *b) == "[]\n"
