"""The `minikafka` client commands, run as real subprocesses against a broker: output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.broker_process import REPO, BrokerProcess

pytestmark = [pytest.mark.cli, pytest.mark.timeout(180)]


def mk(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `minikafka ARGS...` (the console script's entry point) and capture its output."""
    res = subprocess.run(
        [sys.executable, "-m", "broker.cli", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback" not in res.stderr, res.stderr
    return res


def ok(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    res = mk(*args, stdin=stdin)
    assert res.returncode == 0, (args, res.stdout, res.stderr)
    return res


def fails(*args: str, message: str, stdin: str | None = None) -> None:
    """Exit code 1 and exactly one line on stderr containing ``message``."""
    res = mk(*args, stdin=stdin)
    assert res.returncode == 1, (args, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minikafka: error: ") and message in lines[0], lines


def test_topics_lifecycle(kafka: BrokerProcess) -> None:
    b = ("--bootstrap-server", kafka.bootstrap)
    assert ok(
        "topics", "create", "cli-t", "--partitions", "3", "--config", "retention.ms=86400000", *b
    ).stdout == ("Created topic cli-t.\n")
    fails("topics", "create", "cli-t", *b, message="topic 'cli-t' already exists")
    ok("topics", "create", "cli-t", "--if-not-exists", *b)
    fails("topics", "create", "bad-config", "--config", "retention.ms", *b, message="is not key=value")
    fails("topics", "create", "bad-value", "--config", "retention.ms=soon", *b, message="INVALID_CONFIG")
    listing = ok("topics", "list", *b).stdout.splitlines()
    assert listing[0].split() == ["TOPIC", "PARTITIONS", "REPLICATION"]
    assert ["cli-t", "3", "1"] in [line.split() for line in listing[1:]]
    assert {"name": "cli-t", "partitions": 3, "internal": False} in json.loads(
        ok("topics", "list", "--json", *b).stdout
    )
    text = ok("topics", "describe", "cli-t", *b).stdout
    assert "Topic: cli-t\tPartitionCount: 3\tConfigs: retention.ms=86400000" in text
    assert text.splitlines()[1].split() == ["PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"]
    ok(
        "topics",
        "alter",
        "cli-t",
        "--config",
        "retention.bytes=1048576",
        "--delete-config",
        "retention.ms",
        *b,
    )
    (described,) = json.loads(ok("topics", "describe", "cli-t", "--json", *b).stdout)
    assert described["configs"] == {"retention.bytes": "1048576"}
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert ok("topics", "alter", "cli-t", "--partitions", "5", *b).stdout == (
        "Topic cli-t now has 5 partitions.\n"
    )
    fails("topics", "alter", "cli-t", "--partitions", "4", *b, message="INVALID_PARTITIONS")
    fails("topics", "alter", "cli-t", *b, message="nothing to alter")
    (described,) = json.loads(ok("topics", "describe", "cli-t", "--json", *b).stdout)
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2, 3, 4]
    fails("topics", "alter", "nope", "--config", "a=b", *b, message="topic 'nope' does not exist")
    fails("topics", "describe", "nope", *b, message="topic 'nope' does not exist")
    assert ok("topics", "delete", "cli-t", *b).stdout == "Deleted topic cli-t.\n"
    fails("topics", "delete", "cli-t", *b, message="topic 'cli-t' does not exist")
    ok("topics", "delete", "cli-t", "--if-exists", *b)


def test_produce_from_a_file(kafka: BrokerProcess, tmp_path: Path) -> None:
    b = ("--bootstrap-server", kafka.bootstrap)
    lines = tmp_path / "lines.txt"
    lines.write_text("a\tone\nb\ttwo\n", encoding="utf-8")
    res = ok("produce", "cli-file", "--file", str(lines), "--key-separator", "\t", "--json", *b)
    assert json.loads(res.stdout)["produced"] == 2
    got = ok(
        "consume", "cli-file", "--from-beginning", "--max-messages", "2", "--format", "{key}={value}", *b
    )
    assert sorted(got.stdout.splitlines()) == ["a=one", "b=two"]
    fails("produce", "cli-file", "--file", str(tmp_path / "missing.txt"), *b, message="No such file")


def test_produce_and_consume_formats(kafka: BrokerProcess) -> None:
    b = ("--bootstrap-server", kafka.bootstrap)
    ok("topics", "create", "cli-pc", "--partitions", "1", *b)
    res = ok(
        "produce",
        "cli-pc",
        "--key-separator",
        ":",
        "--header",
        "src=cli",
        "--header",
        "n=1",
        *b,
        stdin="k1:hello\nk2:wörld:with:colons\nno key here\n\n",
    )
    assert res.stderr == "Produced 4 record(s) to cli-pc.\n"
    out = ok(
        "consume",
        "cli-pc",
        "--from-beginning",
        "--max-messages",
        "4",
        "--print-key",
        "--print-offset",
        "--print-partition",
        "--print-headers",
        *b,
    )
    assert out.stdout.splitlines() == [
        "Partition:0\tOffset:0\tsrc:cli,n:1\tk1\thello",
        "Partition:0\tOffset:1\tsrc:cli,n:1\tk2\twörld:with:colons",
        "Partition:0\tOffset:2\tsrc:cli,n:1\tnull\tno key here",
        "Partition:0\tOffset:3\tsrc:cli,n:1\tnull\t",
    ]
    assert out.stderr == "Processed a total of 4 messages\n"
    lines = ok(
        "consume", "cli-pc", "--from-beginning", "--max-messages", "2", "--json", *b
    ).stdout.splitlines()
    first = json.loads(lines[0])
    assert (first["offset"], first["key"], first["value"], first["headers"]) == (
        0,
        "k1",
        "hello",
        [["src", "cli"], ["n", "1"]],
    )
    assert first["timestamp_type"] == "CreateTime" and first["timestamp"] > 0
    fmt = ok(
        "consume",
        "cli-pc",
        "--partition",
        "0",
        "--offset",
        "1",
        "--max-messages",
        "1",
        "--format",
        "{offset}|{key}|{value}",
        *b,
    )
    assert fmt.stdout == "1|k2|wörld:with:colons\n"
    since = ok(
        "consume",
        "cli-pc",
        "--from-time",
        str(first["timestamp"]),
        "--max-messages",
        "1",
        "--format",
        "{offset}",
        *b,
    )
    assert since.stdout == "0\n"
    idle = ok("consume", "cli-pc", "--idle-timeout-ms", "500", *b)  # default start: latest, so nothing
    assert idle.stdout == "" and idle.stderr == "Processed a total of 0 messages\n"
    fails("consume", "nope", "--from-beginning", *b, message="topic 'nope' does not exist")
    fails("consume", "cli-pc", "--offset", "3", *b, message="--offset N needs --partition")
    fails("consume", "cli-pc", "--partition", "5", *b, message="has no partition 5")
    fails("produce", "cli-pc", "--partition", "5", *b, stdin="x\n", message="has no partition 5")
    fails("produce", "cli-pc", "--header", "nokv", *b, stdin="x\n", message="is not key=value")


def test_groups_describe_lag_and_reset(kafka: BrokerProcess) -> None:
    b = ("--bootstrap-server", kafka.bootstrap)
    ok("topics", "create", "cli-g", "--partitions", "2", *b)
    ok("produce", "cli-g", "--partition", "0", *b, stdin="a\nb\nc\n")
    ok("produce", "cli-g", "--partition", "1", *b, stdin="d\n")
    got = ok("consume", "cli-g", "--group", "cli-grp", "--from-beginning", "--max-messages", "4", *b).stdout
    assert sorted(got.split()) == ["a", "b", "c", "d"]
    ok("produce", "cli-g", "--partition", "0", *b, stdin="e\nf\n")  # 2 records of lag
    listing = ok("groups", "list", *b).stdout.splitlines()
    assert ["cli-grp", "Empty", "consumer", "0"] in [line.split() for line in listing[1:]]
    described = ok("groups", "describe", "cli-grp", *b).stdout.splitlines()
    assert described[0] == "Group cli-grp: state Empty, 0 member(s), total lag 2"
    assert described[1].split()[:6] == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
    ]
    assert described[2].split()[:6] == ["cli-grp", "cli-g", "0", "3", "5", "2"]
    lag = json.loads(ok("groups", "lag", "cli-grp", "--json", *b).stdout)
    assert lag["total_lag"] == 2 and [p["lag"] for p in lag["partitions"]] == [2, 0]
    plan = ok("groups", "reset-offsets", "cli-grp", "--all-topics", "--to-earliest", *b)
    assert [line.split() for line in plan.stdout.splitlines()[1:]] == [
        ["cli-grp", "cli-g", "0", "3", "0"],
        ["cli-grp", "cli-g", "1", "1", "0"],
    ]
    assert "Dry run" in plan.stderr
    assert json.loads(ok("groups", "lag", "cli-grp", "--json", *b).stdout)["total_lag"] == 2  # unchanged
    ok("groups", "reset-offsets", "cli-grp", "--topic", "cli-g:0", "--to-offset", "1", "--execute", *b)
    ok(
        "groups", "reset-offsets", "cli-grp", "--topic", "cli-g:1", "--shift-by", "-5", "--execute", *b
    )  # clamped at 0
    lag = json.loads(ok("groups", "lag", "cli-grp", "--json", *b).stdout)
    assert [(p["current_offset"], p["lag"]) for p in lag["partitions"]] == [(1, 4), (0, 1)]
    far = ok(
        "groups",
        "reset-offsets",
        "cli-grp",
        "--topic",
        "cli-g",
        "--to-datetime",
        "2999-01-01T00:00:00",
        "--json",
        *b,
    )
    assert [p["new_offset"] for p in json.loads(far.stdout)["partitions"]] == [
        5,
        1,
    ]  # no record that late: the end
    fails("groups", "describe", "no-such-group", *b, message="consumer group 'no-such-group' does not exist")
    fails(
        "groups",
        "reset-offsets",
        "cli-grp",
        "--topic",
        "nope",
        "--to-latest",
        *b,
        message="topic 'nope' does not exist",
    )
    assert ok("groups", "delete", "cli-grp", *b).stdout == "Deleted group cli-grp.\n"
    assert (
        mk("groups", "reset-offsets", "g", "--to-latest", *b).returncode == 2
    )  # --topic/--all-topics required


def test_reset_refuses_an_active_group(kafka: BrokerProcess) -> None:
    from client import Consumer

    b = ("--bootstrap-server", kafka.bootstrap)
    ok("produce", "cli-active", *b, stdin="x\n")
    # No auto-commit: the group is Stable but has committed nothing, so the refusal must come
    # from its state, not from whatever offsets happened to be committed by then.
    with Consumer(
        "cli-active",
        bootstrap_servers=kafka.bootstrap,
        group_id="cli-active-g",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    ) as c:
        assert c.poll(5)
        fails(
            "groups",
            "reset-offsets",
            "cli-active-g",
            "--all-topics",
            "--to-earliest",
            "--execute",
            *b,
            message="can only be reset if the group 'cli-active-g' is inactive, but its state is Stable",
        )
        described = ok("groups", "describe", "cli-active-g", *b).stdout.splitlines()
        assert "state Stable, 1 member(s)" in described[0]
        row = described[2].split()
        assert (
            row[1] == "cli-active"
            and row[6].startswith("consumer-cli-active-g-")
            and row[8].startswith("consumer-")
        )
        fails("groups", "delete", "cli-active-g", *b, message="still has members")


def test_perf_commands(kafka: BrokerProcess) -> None:
    b = ("--bootstrap-server", kafka.bootstrap)
    produced = json.loads(
        ok("perf", "produce", "cli-perf", "--num-records", "5000", "--record-size", "50", "--json", *b).stdout
    )
    assert (
        produced["records"] == 5000
        and produced["records_per_sec"] > 0
        and produced["avg_latency_ms"] is not None
    )
    text = ok("perf", "consume", "cli-perf", "--messages", "5000", "--progress", *b)
    assert text.stdout.startswith("5000 records consumed (0.2 MB)") and "records/sec" in text.stdout
    assert "100.0% 5,000/5,000" in text.stderr  # the progress bar's last frame
    summary = ok("perf", "produce", "cli-perf", "--num-records", "2000", *b).stdout
    assert summary.startswith("2000 records sent, ") and "ms avg latency" in summary
    fails("perf", "consume", "nope", "--messages", "1", *b, message="topic 'nope' does not exist")


def test_errors_are_one_line_with_trustworthy_exit_codes() -> None:
    fails("topics", "list", "--bootstrap-server", "127.0.0.1:1", message="cannot connect to 127.0.0.1:1")
    fails("consume", "t", "--bootstrap-server", "127.0.0.1:1", message="cannot connect to 127.0.0.1:1")
    fails("produce", "t", "--bootstrap-server", "127.0.0.1:1", stdin="x\n", message="cannot connect")
    fails("groups", "list", "--bootstrap-server", "localhost:99999", message="port 99999 out of range")
    usage = mk("topics", "frobnicate")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    assert mk("consume").returncode == 2
    top = mk("--help")
    assert top.returncode == 0 and "topics" in top.stdout and "perf" in top.stdout
