"""Racks: six brokers in three racks, rack-aware placement and KIP-392 follower fetching, with real clients.

Brokers 1-2 are in rack a, 3-4 in b, 5-6 in c. Brokers 1, 3 and 5 run Kafka's
RackAwareReplicaSelector (replica.selector.class); 2, 4 and 6 do not, and
as in Kafka only a partition's leader's setting counts. One cluster for the
whole module; the last test adds a seventh broker without a rack.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from broker.dev_cluster import INSTALL_HINT
from broker.replica.selector import RACK_AWARE
from client.admin import AdminClient as BundledAdmin
from protocol.errors import ErrorCode
from tests.broker_process import REPO, BrokerProcess
from tests.cluster.helpers import broker_racks, partition_metadata, scrape, wait_for, wait_for_leaders
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess, zookeeper_available
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
SELECTING = (1, 3, 5)
BYTES_SERVED = "minikafka_consumer_fetch_bytes_total"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not zookeeper_available():
        pytest.skip(INSTALL_HINT)
    root = tmp_path_factory.mktemp("racks")
    with (
        ZooKeeperProcess(root / "zookeeper") as zk,
        Cluster(
            root,
            zk,
            size=6,
            racks=RACKS,
            broker_config={n: {"replica.selector.class": RACK_AWARE} for n in SELECTING},
            metrics=True,
        ) as c,
    ):
        yield c


def _admin(cluster: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})


def _racks_of(replicas: list[int]) -> list[str]:
    return sorted(RACKS[b] for b in replicas)


def _served(cluster: Cluster, node: int, topic: str, served_as: str) -> float:
    samples = scrape(cluster.metrics_url(node), BYTES_SERVED)
    return samples.get((("served_as", served_as), ("topic", topic)), 0.0)


def _log_bytes(cluster: Cluster, node: int, topic: str) -> float:
    samples = scrape(cluster.metrics_url(node), "minikafka_log_size_bytes")
    return sum(v for labels, v in samples.items() if ("topic", topic) in labels)


# -- racks in the cluster metadata ------------------------------------------------------------------


def test_metadata_and_describe_cluster_answer_each_brokers_rack(cluster: Cluster) -> None:
    assert broker_racks(cluster.bootstrap) == RACKS  # DescribeCluster, librdkafka
    with BundledAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:

        async def metadata(core):  # type: ignore[no-untyped-def]
            await core.cluster.refresh([])
            return {n: b.rack for n, b in core.cluster.brokers.items()}

        assert admin.run(metadata) == RACKS  # Metadata
        described = admin.describe_cluster()
        assert {b.node_id: b.rack for b in described.brokers} == RACKS


# -- placement --------------------------------------------------------------------------------------


def test_topics_created_by_any_admin_put_each_replica_in_its_own_rack(cluster: Cluster) -> None:
    bs = cluster.bootstrap
    admin = _admin(cluster)  # kept: the futures fail once the client is collected
    admin.create_topics([NewTopic("spread", 12, 3)])["spread"].result(15)
    proc = subprocess.run(
        [sys.executable, "-m", "broker.cli", "topics", "create", "spread-cli", "--partitions", "6"]
        + ["--replication-factor", "3", "--bootstrap-server", bs],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    wait_for_leaders(bs, "spread", 12, 3)
    wait_for_leaders(bs, "spread-cli", 6, 3)
    for topic, partitions in (("spread", 12), ("spread-cli", 6)):
        md = partition_metadata(bs, topic)
        assert all(_racks_of(replicas) == ["a", "b", "c"] for _, replicas, _ in md.values()), md
        preferred = [replicas[0] for _, replicas, _ in md.values()]
        share = partitions // len(RACKS)
        assert sorted(preferred.count(b) for b in RACKS) == [share] * len(RACKS), md  # leaders spread

    admin.create_partitions([NewPartitions("spread", 18)])["spread"].result(15)
    wait_for_leaders(bs, "spread", 18, 3)
    md = partition_metadata(bs, "spread")
    assert all(_racks_of(md[p][1]) == ["a", "b", "c"] for p in range(12, 18)), md


# -- follower fetching ------------------------------------------------------------------------------


def _produce(cluster: Cluster, topic: str, partitions: int, count: int) -> dict[tuple[int, int], tuple]:
    """``count`` records with keys, values of many sizes and headers, acks=all; {(partition,
    offset): (key, value, headers)} of each as acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "logger": QUIET,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    acked: dict[tuple[int, int], tuple] = {}
    sent: dict[int, tuple] = {}

    def report(err: KafkaError | None, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = sent[int(msg.key().split(b"-")[1])]

    for n in range(count):
        key = b"k-%d" % n
        value = os.urandom(n % 700) + b"v%d" % n
        headers = [("n", b"%d" % n), ("empty", b"")]
        sent[n] = (key, value, headers)
        producer.produce(topic, value, key, partition=n % partitions, headers=headers, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert len(acked) == count
    return acked


def _consume(
    cluster: Cluster, topic: str, partitions: int, count: int, rack: str
) -> dict[tuple[int, int], tuple]:
    """Everything a librdkafka consumer with ``client.rack`` reads from the start of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"racks-{topic}-{time.time()}",
            "client.rack": rack,
            "enable.auto.commit": False,
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: dict[tuple[int, int], tuple] = {}
    deadline = time.monotonic() + 90
    try:
        while len(seen) < count:
            assert time.monotonic() < deadline, f"read {len(seen)} of {count} records"
            msg = consumer.poll(1)
            if msg is None or msg.error():
                continue
            seen[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), msg.headers())
    finally:
        consumer.close()
    return seen


def test_a_consumer_reads_everything_from_the_follower_in_its_rack(cluster: Cluster) -> None:
    bs = cluster.bootstrap
    # leaders 1 (rack a) and 3 (rack b) run the selector; broker 6 is the rack-c follower of both
    topic = NewTopic("near", 2, replica_assignment=[[1, 4, 6], [3, 2, 6]])
    admin = _admin(cluster)
    admin.create_topics([topic])["near"].result(15)
    wait_for_leaders(bs, "near", 2, 3)
    assert [leader for leader, _, _ in partition_metadata(bs, "near").values()] == [1, 3]
    acked = _produce(cluster, "near", 2, 3000)
    wait_for_leaders(bs, "near", 2, 3)  # every follower in sync again: candidates for reading

    assert _consume(cluster, "near", 2, len(acked), rack="c") == acked  # byte for byte, at its offset

    assert _served(cluster, 6, "near", "follower") >= _log_bytes(cluster, 6, "near") > 0
    for node in (1, 2, 3, 4, 5):
        assert _served(cluster, node, "near", "leader") == 0 == _served(cluster, node, "near", "follower")


def test_a_leader_without_a_replica_selector_serves_every_rack_itself(cluster: Cluster) -> None:
    bs = cluster.bootstrap
    # broker 2 (rack a) leads without a selector; broker 5 is in rack c
    admin = _admin(cluster)
    admin.create_topics([NewTopic("far", 1, replica_assignment=[[2, 3, 5]])])["far"].result(15)
    wait_for_leaders(bs, "far", 1, 3)
    acked = _produce(cluster, "far", 1, 500)
    wait_for_leaders(bs, "far", 1, 3)

    assert _consume(cluster, "far", 1, len(acked), rack="c") == acked

    assert _served(cluster, 2, "far", "leader") >= _log_bytes(cluster, 2, "far") > 0
    assert _served(cluster, 5, "far", "follower") == 0 == _served(cluster, 3, "far", "follower")


def test_a_follower_serves_consumer_fetches_only_from_v11(cluster: Cluster) -> None:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "far", "partitions": [_wire_partition(0)]}],
        "forgotten_topics_data": [],
        "rack_id": "c",
    }
    with RawClient(cluster.brokers[5].port) as raw:  # a follower of far-0 (500 records)

        def fetch(version: int, offset: int = 0) -> Any:
            topics = [{"topic": "far", "partitions": [_wire_partition(offset)]}]
            return raw.request(1, version, {**body, "topics": topics}).responses[0].partitions[0]

        # a follower learns the leader's high watermark one fetch later (up to its 500 ms wait)
        wait_for(lambda: fetch(11).high_watermark == 500, 10, "the follower's high watermark at 500")
        v11 = fetch(11)
        assert (v11.error_code, v11.preferred_read_replica, v11.log_start_offset) == (0, -1, 0)
        assert len(v11.records) > 0
        assert fetch(10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert fetch(11, 501).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def _wire_partition(offset: int) -> dict[str, int]:
    return {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": offset,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }


# -- a broker without a rack ------------------------------------------------------------------------


def test_a_broker_without_a_rack_makes_placement_fail_as_kafka_does(cluster: Cluster, tmp_path: Path) -> None:
    extra = BrokerProcess(tmp_path / "broker-7" / "data", env={**cluster.config, "MINIKAFKA_NODE_ID": "7"})
    extra.data_dir.parent.mkdir(parents=True)
    extra.start()
    try:
        wait_for(lambda: all(7 in cluster.registered(n) for n in cluster.brokers), 30, "broker 7 registered")
        assert broker_racks(cluster.bootstrap)[7] is None
        admin = _admin(cluster)
        with pytest.raises(KafkaException) as created:
            admin.create_topics([NewTopic("mixed", 3, 3)])["mixed"].result(15)
        assert created.value.args[0].code() == KafkaError.UNKNOWN  # UNKNOWN_SERVER_ERROR
        with pytest.raises(KafkaException) as added:
            admin.create_partitions([NewPartitions("spread", 24)])["spread"].result(15)
        assert added.value.args[0].code() == KafkaError.UNKNOWN
        # a replica assignment needs no placement: created as asked
        admin.create_topics([NewTopic("mixed", 1, replica_assignment=[[7, 1, 3]])])["mixed"].result(15)
        wait_for_leaders(cluster.bootstrap, "mixed", 1, 3)
    finally:
        extra.stop()
