"""Every real client against a three-broker cluster: each producer's records, read back by each consumer.

The topics are RF 3, so each client must find the partition's leader through
Metadata (its bootstrap list names all three brokers) and acks=all waits for
the followers; then one broker is killed and every client reads everything
again from the new leader.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.helpers import create_topic, partition_metadata, wait_for
from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_available
from tests.compat.clients import CONSUMERS, PRODUCERS
from tests.compat.test_clients import _check, _expected, _installed, _needs

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not zookeeper_available(), reason="ZooKeeper not installed"),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster holding one RF 3 topic per producer, written by that producer."""
    tmp: Path = tmp_path_factory.mktemp("clients-on-cluster")
    with ZooKeeperProcess(tmp / "zookeeper") as zk, Cluster(tmp, zk) as cluster:
        for producer in filter(_installed, PRODUCERS):
            topic = f"from-{producer}"
            create_topic(cluster.bootstrap, topic, 1, 3, **{"min.insync.replicas": "2"})
            PRODUCERS[producer](cluster.bootstrap, topic, 0, _expected(producer), None)
        yield cluster


@pytest.mark.parametrize("producer", list(PRODUCERS))
@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_each_consumer_reads_each_producer(written: Cluster, producer: str, consumer: str) -> None:
    _needs(producer)
    _needs(consumer)
    sent = _expected(producer)
    got = CONSUMERS[consumer](written.bootstrap, f"from-{producer}", 0, len(sent))
    _check(producer, sent, got)


def test_after_a_leader_dies_every_client_reads_from_the_new_one(written: Cluster) -> None:
    topic = "from-confluent-kafka"
    leader = partition_metadata(written.bootstrap, topic)[0][0]
    written.kill(leader)
    alive = ",".join(b.bootstrap for n, b in written.brokers.items() if n != leader)
    wait_for(lambda: partition_metadata(alive, topic)[0][0] not in (leader, -1), 30, "a new leader")
    sent = _expected("confluent-kafka")
    for consumer in filter(_installed, CONSUMERS):
        started = time.monotonic()
        got = CONSUMERS[consumer](alive, topic, 0, len(sent))
        _check("confluent-kafka", sent, got)
        assert time.monotonic() - started < 60, consumer
