"""Kafka's Java client on three brokers on a real ZooKeeper: the leader of a partition is
SIGKILLed while an idempotent acks=all producer writes 50,000 records to an RF 3 topic with
min.insync.replicas=2, then everything is read back (tests/java/ClusterChecks.java).

The JVM announces when 10,000 records are acknowledged (an ``{"event": "kill"}`` line); this
side then kills the leader of partition 0 and tells the JVM which one on its stdin. The
producer holds at the halfway mark until told, so half the records go out after the kill. A
consumer in the same JVM reads the topic throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.dev_cluster import INSTALL_HINT
from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_available
from tests.java.jvm import JvmRun, run_checks

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

TOPIC = "java-leader-kill"
PARTITIONS = 3
RECORDS = 50_000
CHECKS = [
    "cluster.produce_through_leader_kill",
    "cluster.consumer_during_leader_kill",
    "cluster.read_back_after_leader_kill",
]


class LeaderKill:
    """Kills the leader of partition 0 when the JVM asks, and remembers which broker it was."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.killed: int | None = None

    def __call__(self, event: dict[str, Any]) -> str | None:
        from tests.cluster.helpers import partition_metadata

        if event.get("event") != "kill" or self.killed is not None:
            return None
        leader = partition_metadata(self.cluster.bootstrap, TOPIC)[0][0]
        self.cluster.kill(leader)
        self.killed = leader
        return f"killed broker {leader}, the leader of partition 0, at {event.get('acked')} acks"


@pytest.fixture(scope="module")
def leader_kill_run(
    tmp_path_factory: pytest.TempPathFactory, java_classes: Path
) -> Iterator[tuple[JvmRun, Cluster, LeaderKill]]:
    from tests.cluster.helpers import create_topic

    if not zookeeper_available():
        pytest.fail(f"ZooKeeper is needed: {INSTALL_HINT}", pytrace=False)
    root = tmp_path_factory.mktemp("java-cluster")
    with ZooKeeperProcess(root / "zookeeper") as zk, Cluster(root, zk) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
        kill = LeaderKill(cluster)
        run = run_checks(
            "cluster",
            {"bootstrap": cluster.bootstrap, "topic": TOPIC, "records": str(RECORDS), "kill.after": "10000"},
            workdir=root,
            on_event=kill,
            check_timeout_ms=150_000,
        )
        yield run, cluster, kill


@pytest.mark.parametrize("name", CHECKS)
def test_leader_killed_under_the_producer(
    leader_kill_run: tuple[JvmRun, Cluster, LeaderKill], name: str
) -> None:
    run, _, kill = leader_kill_run
    assert kill.killed is not None, f"the JVM never asked for the kill: events {run.events}"
    run.assert_ok(name)


def test_a_new_leader_took_over(leader_kill_run: tuple[JvmRun, Cluster, LeaderKill]) -> None:
    from tests.cluster.helpers import partition_metadata

    run, cluster, kill = leader_kill_run
    run.assert_clean_exit()
    assert set(run.checks) == set(CHECKS)
    alive = ",".join(b.bootstrap for node, b in cluster.brokers.items() if node != kill.killed)
    leader, _, isr = partition_metadata(alive, TOPIC)[0]
    assert leader not in (kill.killed, -1), (leader, kill.killed)
    assert kill.killed not in isr, isr
