"""The Jepsen-style run: workloads on a three-broker cluster while the nemesis injects every fault kind.

Workloads, all on the client host: four idempotent acks=all producers writing ``events`` (6
partitions, RF 3, min.insync.replicas 2); a classic group and a KIP-848 group of two members
each, reading ``events`` and committing by hand; a transactional consume-transform-produce
pipeline copying ``events`` to ``pipeline-out``. The nemesis (`tests.faults.nemesis`) injects
each fault kind once in the seed's order. After the last one everything is healed, the
producers run on for a while, every workload finishes, and the history checker
(`tests.faults.history`) compares what was acknowledged and read with what the cluster holds.

Seeds from ``FAULT_SEEDS`` (default ``1``): ``make test-faults`` runs 1 and 2, ``make soak-faults
SEEDS="1 2 ..."`` more (marker ``nemesis``). Records librdkafka re-sent under a new producer epoch
are counted apart (`history.Report.resent_after_epoch_bump`), not as the broker's duplicates. Each
seed's report (counts, problems, the longest window without an acknowledged produce per fault
kind, the faults) is written to ``FAULT_REPORT_DIR`` when set, and `tests.faults.summary` prints
a table of them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from protocol.records import scan_valid_prefix
from tests.cluster.helpers import replica_batches, wait_for
from tests.faults import history
from tests.faults.nemesis import BROKERS, HOSTS, SESSION_TIMEOUT_MS, FaultCluster, Nemesis
from tests.faults.netns import Network

SEEDS = [int(s) for s in os.environ.get("FAULT_SEEDS", "1").split()]
PRODUCERS = 4
RATE = 100  # records/s per producer
GROUPS = {"classic": "classic", "kip848": "consumer"}  # group id -> group.protocol
TOPICS = {"events": 6, "pipeline-out": 6, "__consumer_offsets": 3, "__transaction_state": 3}

pytestmark = [pytest.mark.faults, pytest.mark.nemesis, pytest.mark.timeout(900)]


def _log(dumped: dict[str, list[list[Any]]]) -> dict[int, list[tuple[int, str]]]:
    return {int(p): [(int(o), str(k)) for o, k in records] for p, records in dumped.items()}


def _replicas(cluster: FaultCluster) -> dict[str, dict[str, dict[int, list[history.Batch]]]]:
    """{topic: {broker: {partition: batches}}} of every replica on disk."""
    return {
        topic: {b: {p: replica_batches(cluster.data(b), topic, p) for p in range(n)} for b in BROKERS}
        for topic, n in TOPICS.items()
    }


def _writers(cluster: FaultCluster, topic: str) -> dict[tuple[int, int], tuple[int, int]]:
    """{(partition, offset): (producer id, producer epoch)} from the batch headers on disk."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for b in BROKERS:
        for p in range(TOPICS[topic]):
            for path in sorted((cluster.data(b) / f"{topic}-{p}").glob("*.log")):
                for h in scan_valid_prefix(path.read_bytes())[0]:
                    for offset in range(h.base_offset, h.base_offset + h.last_offset_delta + 1):
                        out.setdefault((p, offset), (h.producer_id, h.producer_epoch))
    return out


def _broker_logs(cluster: FaultCluster) -> list[str]:
    """Every broker's log (restarts append to it)."""
    paths = [cluster.data(b).parent / f"{b}.log" for b in BROKERS]
    return [path.read_text(errors="replace") for path in paths if path.exists()]


def _identical(cluster: FaultCluster) -> bool:
    for by_broker in _replicas(cluster).values():
        logs = list(by_broker.values())
        if any(log != logs[0] for log in logs):
            return False
    return True


def _stop(procs: list[subprocess.Popen[str]], timeout: float) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("seed", SEEDS)
def test_nemesis_run_keeps_every_promise(seed: int, tmp_path: Path) -> None:
    with Network(HOSTS) as net:
        cluster = FaultCluster(net, tmp_path).start()
        bootstrap = cluster.bootstrap
        for topic in ("events", "pipeline-out"):
            net.python("client", "create", bootstrap, topic, str(TOPICS[topic]), "3", "2")
        files = tmp_path / "history"
        files.mkdir()
        producers = [
            cluster.workload("produce", bootstrap, "events", f"p{i}", str(RATE), str(files / f"p{i}.jsonl"))
            for i in range(PRODUCERS)
        ]
        consumers = [
            cluster.workload(
                "consume", bootstrap, "events", group, protocol, name, str(files / f"{name}.jsonl")
            )
            for group, protocol in GROUPS.items()
            for name in (f"{group}-a", f"{group}-b")
        ]
        pipeline = cluster.workload(
            "pipeline",
            bootstrap,
            "events",
            "pipeline-out",
            "pipeline",
            "pipeline-1",
            str(files / "pipeline.jsonl"),
        )
        time.sleep(5)

        nemesis = Nemesis(cluster, seed, "events", "classic")
        for kind in nemesis.schedule():
            nemesis.inject(kind)
        cluster.heal_all()
        healed = time.time()

        def settled() -> bool:
            try:
                who = cluster.query("whois", bootstrap, "events", "classic")
            except RuntimeError:
                return False
            return all(leader > 0 and len(isr) == 3 for leader, isr in who["leaders"].values())

        wait_for(settled, 90, "every partition led, with all three replicas in sync")
        time.sleep(5)
        _stop(producers, 150)
        _stop(consumers, 60)
        wait_for(
            lambda: cluster.query("lag", bootstrap, "pipeline", "events") == 0, 300, "the pipeline caught up"
        )
        _stop([pipeline], 60)

        log = _log(cluster.query("dump", bootstrap, "events", "read_uncommitted"))
        output = _log(cluster.query("dump", bootstrap, "pipeline-out", "read_committed"))
        committed = {
            group: {int(p): o for p, o in cluster.query("committed", bootstrap, group, "events").items()}
            for group in GROUPS
        }
        with contextlib.suppress(AssertionError):  # check_replicas below says where they differ
            wait_for(lambda: _identical(cluster), 60, "every replica identical")
        replicas = _replicas(cluster)
        writers = _writers(cluster, "events")

    events = history.load(sorted(files.glob("*.jsonl")))
    report = history.Report()
    history.check_produced(report, events, log, writers)
    history.check_reads(report, events, {"events": log})
    history.check_commits(report, events, committed)
    for by_broker in replicas.values():
        history.check_replicas(report, by_broker)
    history.check_pipeline(report, log, output)
    last_ack = {f"p{i}": 0.0 for i in range(PRODUCERS)}
    for e in events:
        if e["k"] == "ack":
            last_ack[e["w"]] = max(last_ack[e["w"]], e["t"])
    blocked = sorted(w for w, t in last_ack.items() if t < healed)
    summary = {
        "seed": seed,
        "counts": report.counts(),
        "problems": report.problems(),
        "blocked_after_healing": blocked,
        "pipeline_restarts": sum(1 for e in events if e["k"] == "restart"),
        "pipeline_stuck": sum(1 for e in events if e["k"] == "stuck"),
        "availability_s": history.availability(events, nemesis.record(), grace=0.0),
        "failover_s": history.failover(
            history.leader_writes(_broker_logs(cluster), "events"), nemesis.record()
        ),
        "session_timeout_s": SESSION_TIMEOUT_MS / 1000,
        "faults": nemesis.record(),
    }
    out_dir = Path(os.environ.get("FAULT_REPORT_DIR", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"seed-{seed}.json").write_text(json.dumps(summary, indent=1))
    assert report.acked > 0 and report.read > 0 and report.commits > 0, summary["counts"]
    assert (report.problems(), blocked) == ({}, []), json.dumps(summary, indent=1)
