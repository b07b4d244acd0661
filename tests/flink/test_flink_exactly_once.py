"""Flink's exactly-once Kafka sink on a 3-broker cluster, through SIGKILLs.

Each test writes 20,000 numbered records (value ``v<n>``) to an input topic (3 partitions, RF 3,
min.insync.replicas=2) and runs tests/flink/job.py: ``KafkaSource`` -> a Python map appending
``|flink`` -> ``KafkaSink`` into an output topic of the same shape, parallelism 2, a checkpoint
every 1.5 s. The map is slowed to 1 ms a record so a run lasts about 10 s and can be hit in the
middle. A read_committed consumer follows the output throughout; once it has seen every input
number the job is stopped with a draining savepoint (job.py says why the source is unbounded).

- ``test_flink_killed``: once a quarter of the input is committed, and (looked at with the job
  frozen) an open transaction holds records in the output log, the whole Flink process
  (JobManager and TaskManager: a local MiniCluster) is SIGKILLed; a second run resumes from the
  newest retained checkpoint. Its sink must commit what that checkpoint recorded as pending and
  abort the killed run's lingering transactions. Both of the connector's transactional-id
  strategies: INCREMENTING (ids probed and aborted) and POOLING (a pool of ids, lingering ones
  found with ListTransactions).
- the same kill with ``AT_LEAST_ONCE``, at a moment when records have been written since the
  newest checkpoint: the resumed run writes them again, so the check must report duplicates.
  This is the proof that the check sees them.
- ``test_broker_killed``: the transaction coordinator of one of the job's open transactions
  (found with ListTransactions while the job is frozen) is SIGKILLed, and started again 15 s
  later; the job (restarting itself from its checkpoint if a write fails) runs to the end.

The check reads the whole output with a read_committed consumer up to the end offsets: every
input number exactly once, nothing else, and no transaction left open (the last stable offset of
every partition is its high watermark). The figures of each run are printed at the end of the
session (tests/flink/conftest.py).
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.cluster.helpers import Sender, create_topic, partition_metadata, records_to_end, wait_for_leaders
from tests.cluster_process import QUIET, Cluster
from tests.flink.flink_run import RESULTS, FlinkInstall, FlinkRun, latest_checkpoint

pytestmark = [pytest.mark.flink, pytest.mark.timeout(360)]

RECORDS = 20_000
PARTITIONS = 3
RECORD_MS = 1.0
INTERVAL_MS = 1500
TAG = b"|flink"
JOB_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
BROKER_DOWN = 15.0


@dataclass
class Output:
    """What a consumer read from the output topic: how often each input number appeared, and
    values that are not ``v<n>|flink`` for an input number."""

    counts: Counter[int] = field(default_factory=Counter)
    foreign: list[bytes] = field(default_factory=list)

    def add(self, value: bytes) -> None:
        number = value.removeprefix(b"v").removesuffix(TAG)
        if value.startswith(b"v") and value.endswith(TAG) and number.isdigit() and int(number) < RECORDS:
            self.counts[int(number)] += 1
        else:
            self.foreign.append(value)

    @property
    def total(self) -> int:
        return sum(self.counts.values()) + len(self.foreign)

    @property
    def distinct(self) -> int:
        return len(self.counts)

    def missing(self) -> list[int]:
        return [n for n in range(RECORDS) if self.counts[n] == 0]

    def duplicated(self) -> list[int]:
        return sorted(n for n, c in self.counts.items() if c > 1)


class OutputFollower:
    """A consumer of the output topic from offset 0, kept open while a job runs; `output` is what
    it has read so far (read_committed unless told otherwise)."""

    def __init__(self, bootstrap: str, topic: str, committed: bool = True) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"flink-check-{time.time()}",
                "isolation.level": "read_committed" if committed else "read_uncommitted",
                "enable.partition.eof": True,
                "enable.auto.commit": False,
                "logger": QUIET,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        self.bootstrap = bootstrap
        self.output = Output()

    def poll(self, seconds: float) -> None:
        """Reads what arrives within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            for msg in self.consumer.consume(1000, min(left, 0.5)):
                if msg.error() is None:
                    self.output.add(msg.value() or b"")

    def read_to_end(self, timeout: float = 120) -> Output:
        """Reads until every partition is at its end (for read_committed: its last stable offset)."""
        for msg in records_to_end(self.consumer, PARTITIONS, timeout):
            self.output.add(msg.value() or b"")
        return self.output

    def close(self) -> None:
        self.consumer.close()


def make_topics(cluster: Cluster, name: str) -> tuple[str, str]:
    """Input and output topics of one test: 3 partitions, RF 3, min.insync.replicas=2."""
    names = (f"flink-{name}-in", f"flink-{name}-out")
    for topic in names:
        create_topic(cluster.bootstrap, topic, PARTITIONS, 3, **{"min.insync.replicas": "2"})
    return names


def produce_input(bootstrap: str, topic: str) -> None:
    """Values v0 .. v<RECORDS-1>, idempotent acks=all; every one acknowledged."""
    sender = Sender(bootstrap, topic)
    sender.send(range(RECORDS))
    sender.flush()
    assert (len(sender.acked), sender.errors) == (RECORDS, [])


def end_offsets(bootstrap: str, topic: str, committed: bool) -> dict[int, int]:
    """{partition: last stable offset} (``committed``) or {partition: high watermark}."""
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)},
        isolation_level=level,
        request_timeout=10,
    )
    return {tp.partition: f.result(15).offset for tp, f in futures.items()}


def job_args(cluster: Cluster, name: str, guarantee: str, naming: str | None, directory: Path) -> list[str]:
    """job.py's options for one test; checkpoints and savepoints under ``directory``."""
    args = [
        "--bootstrap",
        cluster.bootstrap,
        "--input",
        f"flink-{name}-in",
        "--output",
        f"flink-{name}-out",
        "--guarantee",
        guarantee,
        "--prefix",
        f"flink-{name}",
        "--checkpoints",
        str(directory / "checkpoints"),
        "--savepoints",
        str(directory / "savepoints"),
        "--interval-ms",
        str(INTERVAL_MS),
        "--record-ms",
        str(RECORD_MS),
    ]
    return args + (["--naming", naming] if naming else [])


def follow_while_running(
    run: FlinkRun, follower: OutputFollower, ready: Callable[[Output], bool], what: str, timeout: float
) -> None:
    """Reads the output until ``ready(output so far)``; AssertionError if the job exits first or
    ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while not ready(follower.output):
        assert run.running(), (
            f"the job ended (code {run.proc and run.proc.returncode}) before {what}\n{run.report()}"
        )
        assert time.monotonic() < deadline, (
            f"no {what} within {timeout:.0f} s ({follower.output.distinct} of {RECORDS} read)\n{run.report()}"
        )
        follower.poll(0.5)


@dataclass(frozen=True)
class KillPoint:
    """Where a run was killed: its newest complete checkpoint, the distinct input numbers read
    back committed, and the output's summed last stable offsets and high watermarks."""

    checkpoint: Path
    read: int
    stable: int
    high: int


def kill_mid_run(
    run: FlinkRun, follower: OutputFollower, checkpoints: Path, output: str, exactly_once: bool
) -> KillPoint:
    """Once a quarter of the input is read back, freezes the run (SIGSTOP: no checkpoint can
    complete meanwhile) and looks at the output: if this is a moment the kill must be survived
    from, SIGKILLs the run and returns it; else lets the run go on and looks again.

    Exactly-once: an open transaction has records in the log (high watermark above the last
    stable offset). At-least-once: records have been written since the newest checkpoint was
    first seen complete, so the resumed run writes them again."""
    bootstrap = follower.bootstrap
    seen: tuple[Path, int] | None = None  # a complete checkpoint, and the high watermarks after it
    while True:
        follow_while_running(
            run, follower, lambda out: out.distinct >= RECORDS // 4, "a quarter of the output", JOB_TIMEOUT
        )
        assert follower.output.distinct < RECORDS * 3 // 4, f"no moment to kill the run at\n{run.report()}"
        if latest_checkpoint(checkpoints) is None:
            follower.poll(0.2)
            continue
        run.send_signal(signal.SIGSTOP)
        checkpoint = latest_checkpoint(checkpoints)
        assert checkpoint is not None
        stable, high = (sum(end_offsets(bootstrap, output, c).values()) for c in (True, False))
        if high > stable if exactly_once else seen is not None and seen[0] == checkpoint and high > seen[1]:
            run.kill()
            return KillPoint(checkpoint, follower.output.distinct, stable, high)
        if seen is None or seen[0] != checkpoint:
            seen = (checkpoint, high)
        run.send_signal(signal.SIGCONT)
        follower.poll(0.2)


def finish(run: FlinkRun, follower: OutputFollower) -> None:
    """Once every input number is committed, stops the job with a draining savepoint (exit 0)."""
    try:
        follow_while_running(
            run, follower, lambda out: out.distinct == RECORDS, "every input record committed", JOB_TIMEOUT
        )
        code = run.stop(STOP_TIMEOUT)
    finally:
        run.kill()
    assert code == 0, f"the job did not stop cleanly\n{run.report()}"


def check_output(bootstrap: str, topic: str, exactly_once: bool) -> tuple[Output, Output]:
    """The read_committed and read_uncommitted views of the whole output after the job, with
    the exactly-once (or at-least-once) assertions on the first: every input number there, once
    (at least once), nothing else, and no transaction left open."""
    stable, high = end_offsets(bootstrap, topic, True), end_offsets(bootstrap, topic, False)
    assert stable == high, f"transactions left open on {topic}: last stable {stable}, high watermarks {high}"
    views = []
    for committed in (True, False):
        follower = OutputFollower(bootstrap, topic, committed)
        try:
            views.append(follower.read_to_end())
        finally:
            follower.close()
    committed_view, everything = views
    assert committed_view.foreign[:5] == []
    assert committed_view.missing()[:10] == [], f"{len(committed_view.missing())} input records lost"
    if exactly_once:
        duplicated = committed_view.duplicated()
        assert duplicated[:10] == [], f"{len(duplicated)} input records duplicated"
    return committed_view, everything


def summary(label: str, started: float, committed: Output, everything: Output, event: str) -> str:
    return (
        f"{label}: {RECORDS} in, {committed.total} read_committed ({len(committed.duplicated())} "
        f"duplicated, {len(committed.missing())} lost), {everything.total - committed.total} "
        f"records of aborted transactions in the log; {event}; {time.monotonic() - started:.0f} s"
    )


@pytest.mark.parametrize(
    ("guarantee", "naming"),
    [("EXACTLY_ONCE", "INCREMENTING"), ("EXACTLY_ONCE", "POOLING"), ("AT_LEAST_ONCE", None)],
    ids=["exactly-once-incrementing", "exactly-once-pooling", "at-least-once"],
)
def test_flink_killed(
    flink_install: FlinkInstall,
    flink_cluster: Cluster,
    tmp_path: Path,
    guarantee: str,
    naming: str | None,
) -> None:
    started = time.monotonic()
    name = f"kill-{guarantee.lower().replace('_', '-')}-{(naming or 'none').lower()}"
    bootstrap = flink_cluster.bootstrap
    source, output = make_topics(flink_cluster, name)
    produce_input(bootstrap, source)
    exactly_once = guarantee == "EXACTLY_ONCE"
    checkpoints = tmp_path / "checkpoints"
    args = job_args(flink_cluster, name, guarantee, naming, tmp_path)
    follower = OutputFollower(bootstrap, output)
    try:
        first = FlinkRun(flink_install, tmp_path / "run-1", args).start()
        try:
            at_kill = kill_mid_run(first, follower, checkpoints, output, exactly_once)
        finally:
            first.kill()
        restore = latest_checkpoint(checkpoints)
        assert restore == at_kill.checkpoint, f"{restore} completed after the kill"
        event = (
            f"Flink SIGKILLed with {at_kill.read} records committed, output offsets {at_kill.stable} "
            f"stable / {at_kill.high} written; resumed from {restore.name}"
        )
        second = FlinkRun(flink_install, tmp_path / "run-2", [*args, "--restore", str(restore)]).start()
        finish(second, follower)
    finally:
        follower.close()

    committed, everything = check_output(bootstrap, output, exactly_once)
    RESULTS.append(summary(f"{guarantee} {naming or ''}".strip(), started, committed, everything, event))
    if not exactly_once:
        # Without transactions the replay after the kill is visible: the check must see it.
        assert committed.duplicated(), "AT_LEAST_ONCE through a kill gave no duplicates: the kill missed"


def open_transaction(bootstrap: str, prefix: str) -> tuple[str, int] | None:
    """An Ongoing transaction of the job's ``prefix`` and the broker coordinating it, as the
    brokers answer ListTransactions (minikafka's admin client: confluent-kafka has no call for
    it); None if none is open."""
    from client.admin import AdminClient as TransactionAdmin

    with TransactionAdmin({"bootstrap.servers": bootstrap}) as admin:
        for listing in admin.list_transactions(states=["Ongoing"]):
            if listing.transactional_id.startswith(prefix + "-"):
                return listing.transactional_id, listing.coordinator
    return None


def test_broker_killed(flink_install: FlinkInstall, flink_cluster: Cluster, tmp_path: Path) -> None:
    started = time.monotonic()
    name = "broker-kill"
    bootstrap = flink_cluster.bootstrap
    source, output = make_topics(flink_cluster, name)
    produce_input(bootstrap, source)
    follower = OutputFollower(bootstrap, output)
    run = FlinkRun(
        flink_install, tmp_path / "run-1", job_args(flink_cluster, name, "EXACTLY_ONCE", None, tmp_path)
    ).start()
    try:
        # With the job frozen, find the coordinator of one of its open transactions and kill it:
        # the producer must find the new coordinator (whose __transaction_state replica has to
        # hold the transaction) and commit there. That broker also leads output partitions.
        victim: tuple[str, int] | None = None
        led: list[int] = []
        while victim is None:
            follow_while_running(
                run, follower, lambda out: out.distinct >= RECORDS // 5, "a fifth of the output", JOB_TIMEOUT
            )
            assert follower.output.distinct < RECORDS * 3 // 4, f"no open transaction found\n{run.report()}"
            run.send_signal(signal.SIGSTOP)
            victim = open_transaction(bootstrap, f"flink-{name}")
            if victim is not None:
                led = sorted(
                    p
                    for p, (leader, _, _) in partition_metadata(bootstrap, output).items()
                    if leader == victim[1]
                )
                flink_cluster.kill(victim[1])
            run.send_signal(signal.SIGCONT)
            follower.poll(0.2)
        transactional_id, coordinator = victim
        before = follower.output.distinct
        # While it is down the job goes on (its producers find the new leaders and coordinators).
        deadline = time.monotonic() + BROKER_DOWN
        while time.monotonic() < deadline and run.running():
            follower.poll(0.5)
        during = follower.output.distinct - before
        flink_cluster.restart(coordinator)
        finish(run, follower)
    finally:
        run.kill()
        follower.close()
    survivors = ",".join(b.bootstrap for n, b in flink_cluster.brokers.items() if n != coordinator)
    wait_for_leaders(survivors, output, PARTITIONS, 3, timeout=60)

    committed, everything = check_output(bootstrap, output, True)
    event = (
        f"broker {coordinator} (coordinator of open transaction {transactional_id}, leader of "
        f"{output} partitions {led}) SIGKILLed for {BROKER_DOWN:.0f} s, {during} records committed meanwhile"
    )
    RESULTS.append(summary("EXACTLY_ONCE broker kill", started, committed, everything, event))
