"""`minikafka acls add|list|remove` as real subprocesses against a broker with Kafka's ACL authorizer.

The broker's PLAINTEXT listener is a super user's (User:ANONYMOUS): the commands
manage ACLs through it. Its SASL_PLAINTEXT PLAIN listener is where alice logs
in with confluent-kafka to show that an ACL made here takes effect.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError as CKError
from confluent_kafka import Producer as CKProducer

from client import AdminClient, NewTopic
from tests.broker_process import REPO, BrokerProcess
from tests.client.test_admin_acls import plain_login, start_acl_broker
from tests.integration.test_cli_users import _ON_A_TERMINAL, fails, mk, ok

pytestmark = [pytest.mark.cli, pytest.mark.timeout(120)]

Row = tuple[str, str, str, str, str, str, str]


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_acl_broker(tmp_path_factory.mktemp("cli-acls"))
    try:
        yield proc, sasl
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


@pytest.fixture
def b(brokers: tuple[BrokerProcess, str]) -> tuple[str, str]:
    return ("--bootstrap-server", brokers[0].bootstrap)


def rows(output: str) -> set[Row]:
    """The ACLs of a --json listing as (type, name, pattern, principal, host, operation, permission)."""
    keys = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission_type")
    return {tuple(acl[k] for k in keys) for acl in json.loads(output)}  # type: ignore[misc]


def listed(b: tuple[str, str], *args: str) -> set[Row]:
    return rows(ok("acls", "list", "--json", *args, *b))


def usage_error(*args: str, message: str) -> None:
    """Exit 2 with argparse's usage and ``message`` on stderr."""
    res = mk(*args)
    assert res.returncode == 2, (args, res.stdout, res.stderr)
    assert res.stderr.startswith("usage: minikafka acls ") and message in res.stderr, res.stderr


def test_add_list_remove(b: tuple[str, str]) -> None:
    out = ok(
        "acls",
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "read",
        "--operation",
        "Write",
        "--allow-host",
        "10.0.0.1",
        "--topic",
        "cli-t",
        *b,
    )
    assert [line.split() for line in out.splitlines()] == [
        ["Added", "2", "ACLs:"],
        ["RESOURCE_TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"],
        ["TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "READ", "ALLOW"],
        ["TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "WRITE", "ALLOW"],
    ]
    prefixed = ("TOPIC", "cli-", "PREFIXED", "User:bob", "*", "DESCRIBE", "DENY")
    added = ok(
        "acls",
        "add",
        "--deny-principal",
        "User:bob",
        "--operation",
        "DESCRIBE",
        "--topic",
        "cli-",
        "--resource-pattern-type",
        "PREFIXED",
        "--json",
        *b,
    )
    assert rows(added) == {prefixed}
    ok("acls", "add", "--allow-principal", "User:carol", "--group", "cli-t", "--cluster", *b)  # All

    alice = {
        ("TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "READ", "ALLOW"),
        ("TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "WRITE", "ALLOW"),
    }
    carol = {
        ("GROUP", "cli-t", "LITERAL", "User:carol", "*", "ALL", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:carol", "*", "ALL", "ALLOW"),
    }
    assert listed(b, "--topic", "cli-t") == alice  # the default pattern type: literal
    assert listed(b, "--topic", "cli-t", "--resource-pattern-type", "match") == alice | {prefixed}
    assert listed(b, "--topic", "cli-t", "--group", "cli-t", "--resource-pattern-type", "any") == alice | {
        ("GROUP", "cli-t", "LITERAL", "User:carol", "*", "ALL", "ALLOW")
    }
    assert listed(b, "--principal", "User:bob") == {prefixed}
    assert listed(b, "--cluster") == {
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:carol", "*", "ALL", "ALLOW")
    }
    assert alice | carol | {prefixed} <= listed(b)
    table = ok("acls", "list", "--topic", "cli-t", *b).splitlines()
    assert table[0].split() == [
        "RESOURCE_TYPE",
        "NAME",
        "PATTERN",
        "PRINCIPAL",
        "HOST",
        "OPERATION",
        "PERMISSION",
    ]
    assert len(table) == 3

    # Principal, operation and host select exactly one ACL; without a principal every ACL goes.
    one = ok(
        "acls",
        "remove",
        "--topic",
        "cli-t",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--allow-host",
        "10.0.0.1",
        "--force",
        *b,
    )
    assert one.splitlines()[0] == "Removed 1 ACL:"
    assert listed(b, "--topic", "cli-t") == {
        ("TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "WRITE", "ALLOW")
    }
    removed = ok(
        "acls", "remove", "--topic", "cli-", "--resource-pattern-type", "prefixed", "--force", "--json", *b
    )
    assert rows(removed) == {prefixed}
    gone = ok("acls", "remove", "--topic", "cli-t", "--group", "cli-t", "--cluster", "--force", "--json", *b)
    assert rows(gone) == carol | {("TOPIC", "cli-t", "LITERAL", "User:alice", "10.0.0.1", "WRITE", "ALLOW")}
    assert ok("acls", "remove", "--topic", "cli-t", "--force", *b) == "No ACL matched.\n"
    assert listed(b, "--topic", "cli-t", "--resource-pattern-type", "match") == set()


def test_producer_and_consumer_shortcuts(b: tuple[str, str]) -> None:
    def topic(name: str, who: str, *ops: str) -> set[Row]:
        return {("TOPIC", name, "LITERAL", who, "*", op, "ALLOW") for op in ops}

    producer = ok("acls", "add", "--allow-principal", "User:p", "--producer", "--topic", "sc-t", "--json", *b)
    assert rows(producer) == topic("sc-t", "User:p", "WRITE", "DESCRIBE", "CREATE")
    assert listed(b, "--principal", "User:p") == rows(producer)

    extra = ok(
        "acls",
        "add",
        "--allow-principal",
        "User:pi",
        "--producer",
        "--idempotent",
        "--topic",
        "sc-t",
        "--transactional-id",
        "sc-tx",
        "--group",
        "sc-ignored",  # --producer has nothing for groups
        "--json",
        *b,
    )
    assert rows(extra) == topic("sc-t", "User:pi", "WRITE", "DESCRIBE", "CREATE") | {
        ("TRANSACTIONAL_ID", "sc-tx", "LITERAL", "User:pi", "*", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", "sc-tx", "LITERAL", "User:pi", "*", "DESCRIBE", "ALLOW"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:pi", "*", "IDEMPOTENT_WRITE", "ALLOW"),
    }
    assert listed(b, "--principal", "User:pi") == rows(extra)

    consumer_args = ("--allow-principal", "User:c", "--consumer", "--topic", "sc-t", "--group", "sc-g")
    consumer = ok("acls", "add", *consumer_args, "--json", *b)
    expected = topic("sc-t", "User:c", "READ", "DESCRIBE") | {
        ("GROUP", "sc-g", "LITERAL", "User:c", "*", "READ", "ALLOW")
    }
    assert rows(consumer) == expected
    assert listed(b, "--principal", "User:c") == expected

    both = ok(
        "acls",
        "add",
        "--allow-principal",
        "User:pc",
        "--allow-host",
        "10.1.1.1",
        "--producer",
        "--consumer",
        "--topic",
        "sc-",
        "--group",
        "sc-",
        "--resource-pattern-type",
        "prefixed",
        "--json",
        *b,
    )
    assert rows(both) == {
        ("TOPIC", "sc-", "PREFIXED", "User:pc", "10.1.1.1", op, "ALLOW")
        for op in ("WRITE", "DESCRIBE", "CREATE", "READ")
    } | {("GROUP", "sc-", "PREFIXED", "User:pc", "10.1.1.1", "READ", "ALLOW")}

    # The same shortcut removes exactly what it added.
    assert rows(ok("acls", "remove", *consumer_args, "--force", "--json", *b)) == expected
    assert listed(b, "--principal", "User:c") == set()
    assert listed(b, "--principal", "User:p") == rows(producer)


def test_usage_errors(b: tuple[str, str]) -> None:
    add = ("acls", "add", "--allow-principal", "User:a", *b)
    usage_error(*add, "--producer", message="with --producer you must specify a --topic")
    usage_error(*add, "--idempotent", "--topic", "t", message="only available if --producer is set")
    usage_error(
        *add, "--consumer", "--topic", "t", message="with --consumer you must specify a --topic and a --group"
    )
    usage_error(
        *add,
        "--consumer",
        "--topic",
        "t",
        "--group",
        "g",
        "--cluster",
        message="no --cluster or --transactional-id",
    )
    usage_error(
        *add, "--producer", "--topic", "t", "--operation", "Read", message="cannot be used with --operation"
    )
    usage_error(*add, message="at least one resource")
    usage_error("acls", "add", "--topic", "t", *b, message="--allow-principal, --deny-principal")
    usage_error(
        "acls", "add", "--deny-host", "h", "--topic", "t", *b, message="--deny-host needs --deny-principal"
    )
    usage_error(*add, "--topic", "t", "--resource-pattern-type", "any", message="invalid choice: 'any'")
    usage_error(*add, "--topic", "t", "--operation", "Fly", message="unknown operation 'Fly'")
    usage_error(
        "acls", "add", "--allow-principal", "alice", "--topic", "t", *b, message="principalType:principalName"
    )
    usage_error(
        *add,
        "--group",
        "g",
        "--operation",
        "Write",
        message="ResourceType GROUP only supports operations All, Read, Delete, Describe",
    )
    usage_error("acls", "remove", "--topic", "t", "--operation", "Read", *b, message="--operation needs")
    usage_error("acls", "list", "--principal", "bob", *b, message="principalType:principalName")


def _remove_on_a_terminal(bootstrap: str, topic: str, answer: bytes) -> tuple[int, str]:
    """Run `acls remove --topic TOPIC` on a pseudo-terminal, typing ``answer`` at the prompt."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ON_A_TERMINAL, sys.executable, "-m", "broker.cli"]
        + ["acls", "remove", "--topic", topic, "--bootstrap-server", bootstrap],
        cwd=REPO,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    output = b""
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
            if answer and output.rstrip().endswith(b"(y/n)"):
                os.write(master, answer)
                answer = b""
        code = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, output.decode(errors="replace")


def test_remove_asks_first(b: tuple[str, str]) -> None:
    ok("acls", "add", "--allow-principal", "User:dora", "--topic", "ask-t", *b)
    fails("acls", "remove", "--topic", "ask-t", *b, message="stdin is not a terminal (use --force)")
    code, text = _remove_on_a_terminal(b[1], "ask-t", b"n\n")
    assert code == 1 and "TOPIC ask-t (LITERAL): every ACL" in text and "not confirmed" in text, text
    assert len(listed(b, "--topic", "ask-t")) == 1
    code, text = _remove_on_a_terminal(b[1], "ask-t", b"y\n")
    assert code == 0 and "Removed 1 ACL:" in text, text
    assert listed(b, "--topic", "ask-t") == set()


def test_security_disabled_is_one_line(broker: BrokerProcess) -> None:
    b = ("--bootstrap-server", broker.bootstrap)
    fails("acls", "list", *b, message="SECURITY_DISABLED (No Authorizer is configured on the broker)")
    fails(
        "acls",
        "add",
        "--allow-principal",
        "User:a",
        "--topic",
        "t",
        "--topic",
        "u",
        *b,
        message="SECURITY_DISABLED (No Authorizer is configured.)",
    )
    fails(
        "acls",
        "remove",
        "--topic",
        "t",
        "--force",
        *b,
        message="SECURITY_DISABLED (No Authorizer is configured.)",
    )


def _produce_as_alice(sasl: str, topic: str) -> str | None:
    """Produce one record with confluent-kafka as alice; None when delivered, else the error's name."""
    errors: list[str] = []
    delivered: list[bool] = []

    def on_delivery(err: CKError | None, _msg: object) -> None:
        if err is None:
            delivered.append(True)
        else:
            errors.append(err.name())

    config = {**plain_login(sasl, "alice"), "enable.idempotence": False, "message.timeout.ms": 10000}
    p = CKProducer({**config, "error_cb": lambda err: errors.append(err.name())})
    p.produce(topic, b"as alice", on_delivery=on_delivery)
    deadline = time.monotonic() + 15
    while not delivered and not errors and time.monotonic() < deadline:
        p.poll(0.1)
    p.purge()
    p.flush(1)
    return None if delivered else (errors[0] if errors else "timed out")


def test_an_acl_added_with_the_cli_takes_effect(
    brokers: tuple[BrokerProcess, str], b: tuple[str, str], tmp_path: Path
) -> None:
    proc, sasl = brokers
    with AdminClient(bootstrap_servers=proc.bootstrap) as admin:
        assert admin.create_topics([NewTopic("e2e-acl", 1, 1)]) == {"e2e-acl": None}
    assert _produce_as_alice(sasl, "e2e-acl") == "TOPIC_AUTHORIZATION_FAILED"
    ok("acls", "add", "--allow-principal", "User:alice", "--producer", "--topic", "e2e-acl", *b)
    assert _produce_as_alice(sasl, "e2e-acl") is None
    # alice may produce, not manage ACLs: through her listener the command fails in one line.
    props = tmp_path / "alice.properties"
    props.write_text(
        "".join(f"{k}={v}\n" for k, v in plain_login(sasl, "alice").items() if k != "bootstrap.servers")
    )
    fails(
        "acls",
        "list",
        "--bootstrap-server",
        sasl,
        "--command-config",
        str(props),
        message="CLUSTER_AUTHORIZATION_FAILED",
    )
    ok("acls", "remove", "--allow-principal", "User:alice", "--producer", "--topic", "e2e-acl", "--force", *b)
    assert _produce_as_alice(sasl, "e2e-acl") == "TOPIC_AUTHORIZATION_FAILED"
