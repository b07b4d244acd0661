"""Topic IDs in a three-broker cluster on a real ZooKeeper.

The ID lives in ``/brokers/topics/<t>`` (Kafka's znode format); every replica
keeps it in ``partition.metadata``; a replica left over from a deleted topic
of the same name is recognised by its ID and deleted.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kazoo.client import KazooClient

from storage import topic_ids
from storage.fs import FileSystem
from tests.cluster.helpers import (
    Sender,
    check_exactly_once,
    create_topic,
    read_all,
    wait_for,
    wait_for_leaders,
)
from tests.cluster_process import QUIET, Cluster
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def _ids(cluster: Cluster, node: int, topic: str) -> list[tuple[str, int, uuid.UUID]]:
    with RawClient(cluster.brokers[node].port) as c:
        m = c.request(3, 12, {"topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}]})
    return [(t.name, t.error_code, t.topic_id) for t in m.topics]


def _id_on_disk(partition_dir: Path) -> uuid.UUID | None:
    return topic_ids.read_partition_metadata(FileSystem(), str(partition_dir))


def _znode(cluster: Cluster, path: str) -> dict:
    zk = KazooClient(hosts=cluster.zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        return json.loads(zk.get(path)[0])
    finally:
        zk.stop()
        zk.close()


def _exists(cluster: Cluster, path: str) -> bool:
    zk = KazooClient(hosts=cluster.zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        return zk.exists(path) is not None
    finally:
        zk.stop()
        zk.close()


def test_every_broker_and_replica_agrees_on_the_id(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "ided", 3, 3)
    znode = _znode(cluster, "/brokers/topics/ided")
    topic_id = topic_ids.from_text(znode["topic_id"])
    assert znode["version"] == 3 and sorted(znode["partitions"]) == ["0", "1", "2"]
    for node in cluster.brokers:
        wait_for(
            lambda node=node: _ids(cluster, node, "ided") == [("ided", 0, topic_id)], 15, f"broker {node}"
        )
        for p in range(3):
            directory = cluster.brokers[node].data_dir / f"ided-{p}"
            assert _id_on_disk(directory) == topic_id
        with RawClient(cluster.brokers[node].port) as c:
            m = c.request(3, 12, {"topics": [{"topic_id": topic_id, "name": None}]})
            assert [(t.name, t.error_code) for t in m.topics] == [("ided", 0)]


def test_a_topic_recreated_while_a_broker_was_down_does_not_inherit_its_replica(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "phoenix", 2, 3)
    sender = Sender(cluster.bootstrap, "phoenix")
    sender.send(range(500))
    sender.flush()
    old_id = topic_ids.from_text(_znode(cluster, "/brokers/topics/phoenix")["topic_id"])
    stale = cluster.brokers[3].data_dir / "phoenix-0"
    assert stale.exists()
    cluster.kill(3)
    # Once its registration expires, the new topic is placed on brokers 1 and 2 only.
    wait_for(lambda: cluster.registered(1) == {1, 2}, 30, "broker 3's registration to expire")

    live = cluster.brokers[1].bootstrap + "," + cluster.brokers[2].bootstrap
    admin = AdminClient({"bootstrap.servers": live, "logger": QUIET})
    admin.delete_topics(["phoenix"])["phoenix"].result(15)
    # The controller (a survivor, after a failover if broker 3 held it) removes the topic's znodes.
    wait_for(lambda: not _exists(cluster, "/brokers/topics/phoenix"), 45, "the deletion")
    deadline = time.monotonic() + 15
    while True:  # until the broker answering has seen the deletion too
        try:
            admin.create_topics([NewTopic("phoenix", 1, 2)])["phoenix"].result(15)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    wait_for_leaders(live, "phoenix", 1, 2)
    new_id = topic_ids.from_text(_znode(cluster, "/brokers/topics/phoenix")["topic_id"])
    assert new_id != old_id

    cluster.restart(3)
    wait_for(lambda: not stale.exists(), 30, "broker 3 to drop the deleted topic's replica")
    assert "belong to a deleted topic" in cluster.log(3)
    # The controller must have seen broker 3 come back before it accepts a replica there.
    wait_for(
        lambda: all(cluster.registered(n) == {1, 2, 3} for n in cluster.brokers),
        30,
        "every broker to see broker 3 again",
    )
    # The new topic grows a partition on broker 3: a fresh replica with the new ID, no old records.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
    admin.create_partitions([NewPartitions("phoenix", 2, replica_assignment=[[3, 1]])])["phoenix"].result(15)
    wait_for_leaders(cluster.bootstrap, "phoenix", 2, 2)
    assert _id_on_disk(cluster.brokers[3].data_dir / "phoenix-1") == new_id
    assert read_all(cluster.bootstrap, "phoenix", 2) == {}
    fresh = Sender(cluster.bootstrap, "phoenix")
    fresh.send(range(200))
    fresh.flush()
    check_exactly_once(fresh.acked, read_all(cluster.bootstrap, "phoenix", 2))


def test_a_topic_written_without_an_id_gets_one_from_the_controller(cluster: Cluster) -> None:
    """What Kafka before 2.8 wrote: no "topic_id". The controller adds one; the brokers host it."""
    zk = KazooClient(hosts=cluster.zookeeper.connect_string)
    zk.start(timeout=10)
    try:
        zk.create("/config/topics/legacy", b'{"version":1,"config":{}}')
        zk.create("/brokers/topics/legacy", b'{"version":1,"partitions":{"0":[1,2],"1":[2,3]}}')
    finally:
        zk.stop()
        zk.close()
    wait_for_leaders(cluster.bootstrap, "legacy", 2, 2)
    topic_id = topic_ids.from_text(_znode(cluster, "/brokers/topics/legacy")["topic_id"])
    for node in cluster.brokers:
        wait_for(
            lambda node=node: _ids(cluster, node, "legacy") == [("legacy", 0, topic_id)], 15, f"broker {node}"
        )
    assert _id_on_disk(cluster.brokers[2].data_dir / "legacy-1") == topic_id
    sender = Sender(cluster.bootstrap, "legacy")
    sender.send(range(300))
    sender.flush()
    check_exactly_once(sender.acked, read_all(cluster.bootstrap, "legacy", 2))


def test_delete_answers_once_the_topic_is_gone_so_it_can_be_created_again(cluster: Cluster) -> None:
    """DeleteTopics waits for the controller to remove the topic (Kafka's DelayedDeleteTopics):
    creating the same name right after the answer works, with no TOPIC_ALREADY_EXISTS."""
    create_topic(cluster.bootstrap, "again", 3, 2)
    one = cluster.brokers[1].bootstrap
    admin = AdminClient({"bootstrap.servers": one, "logger": QUIET})
    for _ in range(3):
        admin.delete_topics(["again"], operation_timeout=30)["again"].result(40)
        admin.create_topics([NewTopic("again", 3, 2)], operation_timeout=30)["again"].result(40)
        wait_for_leaders(one, "again", 3, 2)
