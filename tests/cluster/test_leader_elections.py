"""Leader elections on a real cluster: the imbalance timer, ElectLeaders (PREFERRED and UNCLEAN) through
confluent-kafka's AdminClient and the bundled CLI, and unclean election by topic config.

Kafka's rules (broker/cluster/zk/elections.py): leadership goes back to a
partition's preferred replica only when asked (ElectLeaders) or when the
controller's leader-imbalance check, every
``leader.imbalance.check.interval.seconds`` (300 by default), finds a broker
above ``leader.imbalance.per.broker.percentage``; never the moment a replica
rejoins the ISR, which would move every leadership twice per fault.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tests.broker_process import REPO
from tests.cluster.helpers import controller_of, create_topic, partition_metadata, wait_for, wait_for_leaders
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = pytest.mark.cluster


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})


def _leader(cluster: Cluster, topic: str, partition: int) -> int:
    return partition_metadata(cluster.bootstrap, topic)[partition][0]


def _fail_over(cluster: Cluster, topic: str) -> tuple[int, int]:
    """Kill the preferred leader of a partition (not the controller's), restart it and wait until it is
    back in the ISR; returns (partition, that broker)."""
    controller = controller_of(cluster)
    md = partition_metadata(cluster.bootstrap, topic)
    partition, (leader, _, _) = next(
        (p, state) for p, state in sorted(md.items()) if state[0] == state[1][0] and state[0] != controller
    )
    cluster.kill(leader)
    wait_for(lambda: _leader(cluster, topic, partition) not in (leader, -1), 30, "a new leader")
    cluster.restart(leader)
    wait_for(
        lambda: leader in partition_metadata(cluster.bootstrap, topic)[partition][2], 30, "back in the ISR"
    )
    return partition, leader


def _elect_cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``minikafka partitions elect-leaders --election-type preferred ARGS`` against the cluster."""
    return subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "client.cli",
                "partitions",
                "elect-leaders",
                "--election-type",
                "preferred",
            ),
            *args,
            *("--bootstrap-server", cluster.bootstrap),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_leadership_stays_until_asked_then_preferred_election_moves_it_back(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    with Cluster(tmp_path, zookeeper) as cluster:
        create_topic(cluster.bootstrap, "t", 3, 3)
        partition, preferred = _fail_over(cluster, "t")
        time.sleep(6)  # past the first imbalance check of a new controller (5 s), were there one
        assert _leader(cluster, "t", partition) != preferred  # no move until asked

        tp = TopicPartition("t", partition)
        admin = _admin(cluster)  # kept: a dropped AdminClient fails its futures with _DESTROY
        result = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
        assert result == {tp: None}
        wait_for(
            lambda: _leader(cluster, "t", partition) == preferred, 5, "every broker to know the new leader"
        )
        again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
        assert "ELECTION_NOT_NEEDED" in str(again[tp]), again

        done = _elect_cli(cluster, "--all-topic-partitions")  # Kafka names only partitions it elected
        assert done.returncode == 0, done.stderr
        # The restarted broker's __consumer_offsets leaderships may move back too; partitions already
        # led by their preferred replica are not named at all.
        assert "Valid replica already elected" not in done.stdout and "t-" not in done.stdout, done.stdout
        missing = _elect_cli(cluster, "--topic", "t", "--partition", "9")
        assert missing.returncode == 1
        assert "Error completing leader election (PREFERRED) for partition t-9" in missing.stdout
        assert "Traceback" not in missing.stderr
        plan = tmp_path / "elect.json"
        plan.write_text('{"partitions": [{"topic": "t", "partition": 1}]}')
        done = _elect_cli(cluster, "--path-to-json-file", str(plan))
        assert done.returncode == 0 and "t-1" in done.stdout, done.stderr
        plan.write_text('{"partitions": [{"topic": "t"}]}')
        bad = _elect_cli(cluster, "--path-to-json-file", str(plan))
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "not a partitions file" in bad.stderr


def test_the_imbalance_check_moves_leadership_back_on_its_interval(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    with Cluster(tmp_path, zookeeper, leader_imbalance_check_interval_seconds="2") as cluster:
        create_topic(cluster.bootstrap, "t", 3, 3)
        partition, preferred = _fail_over(cluster, "t")
        wait_for(lambda: _leader(cluster, "t", partition) == preferred, 20, "the preferred leader back")


def test_unclean_election_by_request_and_by_topic_config(tmp_path: Path, zookeeper: ZooKeeperProcess) -> None:
    with Cluster(tmp_path, zookeeper) as cluster:
        controller = controller_of(cluster)
        a, b = [n for n in cluster.brokers if n != controller]
        admin = _admin(cluster)
        for topic in ("by-request", "by-config"):
            new = NewTopic(
                topic, num_partitions=1, replica_assignment=[[a, b]], config={"min.insync.replicas": "1"}
            )
            admin.create_topics([new])[topic].result(15)
            wait_for_leaders(cluster.bootstrap, topic, 1, 2)
        cluster.kill(b)
        for topic in ("by-request", "by-config"):
            wait_for(lambda t=topic: partition_metadata(cluster.bootstrap, t)[0][2] == [a], 30, "ISR of one")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "logger": QUIET})
        for n in range(10):
            producer.produce("by-request", str(n).encode())
        assert producer.flush(20) == 0
        cluster.kill(a)
        cluster.restart(b)  # alive, but not in sync: no clean leader exists
        wait_for(lambda: _leader(cluster, "by-request", 0) == -1, 30, "the partition offline")
        time.sleep(2)
        assert _leader(cluster, "by-config", 0) == -1  # unclean election is off by default

        tp = TopicPartition("by-request", 0)
        assert admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(30) == {tp: None}
        wait_for(
            lambda: partition_metadata(cluster.bootstrap, "by-request")[0] == (b, [a, b], [b]),
            5,
            "every broker to know the unclean leader",
        )

        resource = ConfigResource(
            "topic",
            "by-config",
            incremental_configs=[
                ConfigEntry(
                    "unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        admin.incremental_alter_configs([resource])[resource].result(15)
        wait_for(lambda: _leader(cluster, "by-config", 0) == b, 20, "an unclean leader by topic config")
        again = admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(30)
        assert again[tp] is not None and "ELECTION_NOT_NEEDED" in str(again[tp])
