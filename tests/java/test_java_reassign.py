"""Kafka's Java AdminClient moves partitions on a real four-broker cluster (librdkafka has no
reassignment API): tests/java/ReassignChecks.java, then this side compares the replicas on disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.dev_cluster import INSTALL_HINT
from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_available
from tests.java.jvm import JvmRun, run_checks

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

CHECKS = ["reassign.move_and_read", "reassign.refusals"]


@pytest.fixture(scope="module")
def reassign_run(
    tmp_path_factory: pytest.TempPathFactory, java_classes: Path
) -> Iterator[tuple[JvmRun, Cluster]]:
    if not zookeeper_available():
        pytest.fail(f"ZooKeeper is needed: {INSTALL_HINT}", pytrace=False)
    root = tmp_path_factory.mktemp("java-reassign")
    with ZooKeeperProcess(root / "zookeeper") as zk, Cluster(root, zk, size=4) as cluster:
        yield run_checks("reassign", {"bootstrap": cluster.bootstrap}, workdir=root), cluster


@pytest.mark.parametrize("name", CHECKS)
def test_java_admin_reassigns(reassign_run: tuple[JvmRun, Cluster], name: str) -> None:
    run, _ = reassign_run
    run.assert_ok(name)


def test_the_moved_replicas_hold_the_same_batches(reassign_run: tuple[JvmRun, Cluster]) -> None:
    from tests.cluster.helpers import partition_metadata, replica_batches, wait_for

    run, cluster = reassign_run
    run.assert_clean_exit()
    topic = next(t for t in _topics(cluster) if t.startswith("java-reassign-"))

    def identical() -> bool:
        for p, (_, replicas, _) in partition_metadata(cluster.bootstrap, topic).items():
            logs = [replica_batches(cluster.brokers[r].data_dir, topic, p) for r in replicas]
            if not logs[0] or any(batches != logs[0] for batches in logs):
                return False
            holders = {n for n, b in cluster.brokers.items() if (b.data_dir / f"{topic}-{p}").exists()}
            if holders != set(replicas):
                return False
        return True

    wait_for(identical, 30, "identical replicas, and none left on the brokers they left")


def _topics(cluster: Cluster) -> list[str]:
    from confluent_kafka.admin import AdminClient

    from tests.cluster_process import QUIET

    return sorted(
        AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET}).list_topics(timeout=10).topics
    )
