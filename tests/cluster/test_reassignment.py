"""Partition reassignment on a real cluster: AlterPartitionReassignments / ListPartitionReassignments
through the bundled CLI and admin client, Kafka's ``/admin/reassign_partitions`` znode, cancelling, and
emptying a broker (``--decommission``).

Kafka's rules (broker/cluster/zk/reassignment.py): the new replicas copy the
partition from its leader, join the ISR, then one write makes the target
the replica set (moving leadership if the leader leaves) and the replicas
that left delete their copy. Every check reads the data back with a real
client and compares the replicas' batches on disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewPartitions, NewTopic
from kazoo.client import KazooClient

from client.admin import AdminClient
from client.errors import KafkaResponseError
from client.types import TopicPartition
from protocol.errors import ErrorCode
from tests.broker_process import REPO
from tests.cluster.helpers import (
    Sender,
    check_exactly_once,
    create_topic,
    partition_metadata,
    read_all,
    replica_batches,
    wait_for,
)
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = pytest.mark.cluster

TOPIC = "moving"


def _cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "client.cli",
            "partitions",
            "reassign",
            *args,
            "--bootstrap-server",
            cluster.bootstrap,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def _fill(cluster: Cluster, topic: str, partitions: int, rf: int, count: int) -> dict[int, tuple[int, int]]:
    create_topic(cluster.bootstrap, topic, partitions, rf)
    sender = Sender(cluster.bootstrap, topic, **{"enable.idempotence": True, "acks": "all"})
    sender.send(range(count))
    sender.flush()
    assert not sender.errors, sender.errors
    return sender.acked


def _replica_dirs(cluster: Cluster, topic: str, partition: int) -> set[int]:
    return {node for node, b in cluster.brokers.items() if (b.data_dir / f"{topic}-{partition}").exists()}


def _settled(cluster: Cluster, topic: str, partition: int, target: list[int]) -> bool:
    leader, replicas, isr = partition_metadata(cluster.bootstrap, topic)[partition]
    return replicas == target and sorted(isr) == sorted(target) and leader in target


def _identical(cluster: Cluster, topic: str, partition: int, nodes: set[int]) -> bool:
    logs = [replica_batches(cluster.brokers[n].data_dir, topic, partition) for n in sorted(nodes)]
    return bool(logs[0]) and all(batches == logs[0] for batches in logs)


def test_move_onto_a_new_broker_with_the_cli_then_read_everything(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    with Cluster(tmp_path, zookeeper) as cluster:
        acked = _fill(cluster, TOPIC, 3, 2, 3000)
        cluster.add_broker(4)
        before = partition_metadata(cluster.bootstrap, TOPIC)
        # every partition: replace its first replica (its preferred leader, today's leader) by broker 4
        plan = {p: [4, *replicas[1:]] for p, (_, replicas, _) in before.items()}
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [{"topic": TOPIC, "partition": p, "replicas": r} for p, r in plan.items()],
                }
            )
        )
        done = _cli(cluster, "--execute", "--reassignment-json-file", str(plan_file))
        assert done.returncode == 0, done.stderr
        assert "Save this to use as the --reassignment-json-file option during rollback" in done.stdout
        assert "Successfully started partition reassignments for" in done.stdout
        wait_for(lambda: all(_settled(cluster, TOPIC, p, r) for p, r in plan.items()), 60, "the moves")
        verified = _cli(cluster, "--verify", "--reassignment-json-file", str(plan_file))
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert verified.stdout.count("is completed.") == 3
        assert "No partition reassignments found." in _cli(cluster, "--list").stdout
        for p, target in plan.items():
            # the preferred leader moved away: broker 4 leads now (the old leader left the replica set)
            assert partition_metadata(cluster.bootstrap, TOPIC)[p][0] in target
            wait_for(
                lambda p=p, t=target: _replica_dirs(cluster, TOPIC, p) == set(t), 30, "old replica deleted"
            )
            wait_for(lambda p=p, t=target: _identical(cluster, TOPIC, p, set(t)), 30, "identical replicas")
        seen = read_all(cluster.bootstrap, TOPIC, 3)
        check_exactly_once(acked, seen)
        # and the moved partitions take writes with acks=all on their new replicas
        sender = Sender(cluster.bootstrap, TOPIC, **{"enable.idempotence": True, "acks": "all"})
        sender.send(range(3000, 3300))
        sender.flush()
        assert not sender.errors, sender.errors


def test_errors_cancel_and_the_zookeeper_znode(tmp_path: Path, zookeeper: ZooKeeperProcess) -> None:
    with Cluster(tmp_path, zookeeper) as cluster:
        acked = _fill(cluster, TOPIC, 2, 2, 500)
        admin = AdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            current = {p: r for p, (_, r, _) in partition_metadata(cluster.bootstrap, TOPIC).items()}
            errors = admin.alter_partition_reassignments(
                {
                    TopicPartition(TOPIC, 7): [1, 2],
                    TopicPartition(TOPIC, 0): [1, 1],
                    TopicPartition(TOPIC, 1): [1, 9],
                    TopicPartition("no-such-topic", 0): None,
                }
            )
            codes = {tp: (e.code if isinstance(e, KafkaResponseError) else e) for tp, e in errors.items()}
            assert codes == {
                TopicPartition(TOPIC, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                TopicPartition(TOPIC, 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                TopicPartition(TOPIC, 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                TopicPartition("no-such-topic", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            }
            nothing = admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): None})
            assert nothing[TopicPartition(TOPIC, 0)].code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS

            # A new broker that stops answering at once: a move onto it starts (it is still registered)
            # and cannot complete; ListPartitionReassignments shows it; cancelling restores the replicas.
            cluster.add_broker(4)
            cluster.pause(4)
            try:
                target = [4, *current[0][1:]]
                started = admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): target})
                assert started == {TopicPartition(TOPIC, 0): None}
                ongoing = admin.list_partition_reassignments()
                moving = ongoing[TopicPartition(TOPIC, 0)]
                assert moving.target == tuple(target) and moving.adding == (4,)
                assert set(moving.removing) == set(current[0]) - set(target)
                assert partition_metadata(cluster.bootstrap, TOPIC)[0][1] == list(moving.replicas)
                # Kafka refuses to add partitions to a topic being reassigned
                confluent = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
                refused = confluent.create_partitions([NewPartitions(TOPIC, 3)])[TOPIC]
                with pytest.raises(Exception, match="REASSIGNMENT_IN_PROGRESS|reassignment is in progress"):
                    refused.result(15)
                cancelled = admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): None})
                assert cancelled == {TopicPartition(TOPIC, 0): None}
                assert admin.list_partition_reassignments() == {}
                # the original replicas, maybe in another order: Kafka cannot restore it either (the
                # target comes first in the replica list while moving)
                wait_for(
                    lambda: sorted(partition_metadata(cluster.bootstrap, TOPIC)[0][1]) == sorted(current[0]),
                    20,
                    "original replicas",
                )
            finally:
                cluster.resume(4)
            wait_for(
                lambda: _replica_dirs(cluster, TOPIC, 0) == set(current[0]), 30, "no replica on broker 4"
            )

            # kafka-reassign-partitions --zookeeper's way: the /admin/reassign_partitions znode
            target = [4, *current[1][1:]]
            zk = KazooClient(hosts=cluster.zookeeper.connect_string)
            zk.start()
            try:
                zk.create(
                    "/admin/reassign_partitions",
                    json.dumps(
                        {"version": 1, "partitions": [{"topic": TOPIC, "partition": 1, "replicas": target}]}
                    ).encode(),
                    makepath=True,
                )
                wait_for(lambda: _settled(cluster, TOPIC, 1, target), 60, "the znode's move")
                wait_for(lambda: zk.exists("/admin/reassign_partitions") is None, 20, "the znode removed")
                # a tool's malformed write to the topic znode deletes nothing (it used to delete every replica)
                good, _ = zk.get(f"/brokers/topics/{TOPIC}")
                bad = json.loads(good)
                bad["adding_replicas"] = {"0": None}
                holders = _replica_dirs(cluster, TOPIC, 0) | _replica_dirs(cluster, TOPIC, 1)
                zk.set(f"/brokers/topics/{TOPIC}", json.dumps(bad).encode())
                time.sleep(5)  # past a watch and a periodic refresh on every broker
                assert _replica_dirs(cluster, TOPIC, 0) | _replica_dirs(cluster, TOPIC, 1) == holders
                assert "adding_replicas of 0: expected a list of broker ids" in cluster.log(1)
                zk.set(f"/brokers/topics/{TOPIC}", good)
            finally:
                zk.stop()
                zk.close()
            wait_for(lambda: _identical(cluster, TOPIC, 1, set(target)), 30, "identical replicas")
            seen = read_all(cluster.bootstrap, TOPIC, 2)
            check_exactly_once(acked, seen)
        finally:
            admin.close()


def test_decommission_empties_a_broker(tmp_path: Path, zookeeper: ZooKeeperProcess) -> None:
    with Cluster(tmp_path, zookeeper, size=4) as cluster:
        acked = _fill(cluster, TOPIC, 4, 3, 2000)
        done = _cli(cluster, "--decommission", "1", "--wait")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Broker 1 holds no replica any more." in done.stdout
        md = {t: partition_metadata(cluster.bootstrap, t) for t in (TOPIC, "__consumer_offsets")}
        for topic, parts in md.items():
            for p, (leader, replicas, _) in parts.items():
                assert 1 not in replicas and leader != 1, (topic, p, replicas)
                assert len(replicas) == (3 if topic == TOPIC else len(replicas))
        wait_for(lambda: not any((cluster.brokers[1].data_dir).glob(f"{TOPIC}-*")), 30, "broker 1 empty")
        time.sleep(1)
        seen = read_all(cluster.bootstrap, TOPIC, 4)
        check_exactly_once(acked, seen)
        assert "Broker 1 holds no replica." in _cli(cluster, "--decommission", "1").stdout


def test_a_throttled_move_copies_at_the_rate_and_cancelling_keeps_the_old_replicas(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    """Kafka's replication throttle, set as kafka-reassign-partitions --throttle sets it: the new
    replica grows at the throttle's rate, and a cancelled move leaves the partition on its original
    replicas with nothing left on the new broker."""
    from confluent_kafka import Producer

    rate = 1024 * 1024
    with Cluster(tmp_path, zookeeper) as cluster:
        confluent = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
        confluent.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2]])])[TOPIC].result(15)
        wait_for(lambda: _settled(cluster, TOPIC, 0, [1, 2]), 30, "the topic")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "logger": QUIET, "linger.ms": 20})
        for i in range(40 * 1024):
            producer.produce(TOPIC, key=str(i).encode(), value=b"x" * 1000)
            if i % 1000 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
        size = sum(f.stat().st_size for f in (cluster.brokers[1].data_dir / f"{TOPIC}-0").glob("*.log"))
        plan = tmp_path / "throttled.json"
        plan.write_text(
            json.dumps({"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [1, 3]}]})
        )
        started = _cli(cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", str(rate))
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"The inter-broker throttle limit was set to {rate} B/s" in started.stdout
        topic_configs = _topic_configs(confluent)
        assert topic_configs["leader.replication.throttled.replicas"] == "0:1,0:2"
        assert topic_configs["follower.replication.throttled.replicas"] == "0:3"

        def copied() -> int:
            return sum(f.stat().st_size for f in (cluster.brokers[3].data_dir / f"{TOPIC}-0").glob("*.log"))

        time.sleep(4)
        first, t0 = copied(), time.monotonic()
        time.sleep(6)
        grown = (copied() - first) / (time.monotonic() - t0)
        assert 0.5 * rate < grown < 1.5 * rate, f"{grown:.0f} B/s against a throttle of {rate} B/s"
        assert copied() < size
        cancelled = _cli(cluster, "--cancel", "--reassignment-json-file", str(plan))
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert f"Successfully cancelled partition reassignments for: {TOPIC}-0" in cancelled.stdout
        assert "Clearing broker-level throttles on brokers 1,2,3" in cancelled.stdout
        topic_configs = _topic_configs(confluent)
        assert not topic_configs["leader.replication.throttled.replicas"]
        wait_for(lambda: _settled(cluster, TOPIC, 0, [1, 2]), 30, "the original replicas")
        wait_for(lambda: _replica_dirs(cluster, TOPIC, 0) == {1, 2}, 30, "the new replica deleted")
        assert _identical(cluster, TOPIC, 0, {1, 2})


def _topic_configs(admin: ConfluentAdmin) -> dict[str, str | None]:
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    return {k: e.value for k, e in admin.describe_configs([resource])[resource].result(15).items()}
