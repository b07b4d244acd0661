"""Flexible Produce and Fetch in a three-broker cluster: leader hints (KIP-951) and diverging epochs.

Raw requests (our encoder) against real broker processes on a real ZooKeeper;
leaderships move with SIGTERM, which hands them over at once.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.cluster.helpers import create_topic, partition_metadata, wait_for
from tests.cluster_process import Cluster
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def _produce(port: int, topic: str, count: int) -> Any:
    records = build_batch([Record(i, i, b"k", b"v%d" % i) for i in range(count)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    with RawClient(port) as c:
        return c.request(0, 11, body)


def _fetch(port: int, topic_id: uuid.UUID, offset: int, last_epoch: int = -1) -> Any:
    body = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition": 0,
                        "fetch_offset": offset,
                        "last_fetched_epoch": last_epoch,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
    }
    with RawClient(port) as c:
        return c.request(1, 16, body)


def _topic_id(cluster: Cluster, topic: str) -> uuid.UUID:
    with RawClient(cluster.brokers[1].port) as c:
        return c.request(3, 12, {"topics": [{"name": topic}]}).topics[0].topic_id


def test_a_follower_points_producers_and_consumers_at_the_leader(cluster: Cluster) -> None:
    """A follower refuses a produce with the leader's address; a fetch goes to the leader from a broker
    holding no replica (a follower serves consumers' Fetch v11+ itself, as Kafka's KIP-392 followers
    do)."""
    create_topic(cluster.bootstrap, "hinted", 1, 2)
    leader, replicas, _ = partition_metadata(cluster.bootstrap, "hinted")[0]
    follower = next(n for n in replicas if n != leader)
    outsider = next(n for n in cluster.brokers if n not in replicas)
    topic_id = _topic_id(cluster, "hinted")

    answer = _produce(cluster.brokers[follower].port, "hinted", 3)
    p = answer.responses[0].partition_responses[0]
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.error_message
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, 0)
    assert [(e.node_id, e.port) for e in answer.node_endpoints] == [(leader, cluster.brokers[leader].port)]

    served = _fetch(cluster.brokers[follower].port, topic_id, 0)
    assert served.responses[0].partitions[0].error_code == 0
    fetched = _fetch(cluster.brokers[outsider].port, topic_id, 0)
    p = fetched.responses[0].partitions[0]
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (leader, 0)
    assert [(e.node_id, e.port) for e in fetched.node_endpoints] == [(leader, cluster.brokers[leader].port)]

    ok = _produce(cluster.brokers[leader].port, "hinted", 3)
    assert ok.responses[0].partition_responses[0].error_code == 0 and ok.node_endpoints == []


def test_a_fetcher_from_an_older_epoch_is_told_where_it_diverged(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "epochs", 1, 3, **{"min.insync.replicas": "2"})
    first = partition_metadata(cluster.bootstrap, "epochs")[0][0]
    topic_id = _topic_id(cluster, "epochs")
    assert (
        _produce(cluster.brokers[first].port, "epochs", 100).responses[0].partition_responses[0].error_code
        == 0
    )
    cluster.brokers[first].stop()  # hands its leadership over: epoch 1 starts at offset 100

    def moved() -> bool:
        leader = partition_metadata(cluster.bootstrap, "epochs")[0][0]
        return leader not in (-1, first)

    wait_for(moved, 30, "a new leader")
    second = partition_metadata(cluster.bootstrap, "epochs")[0][0]
    assert (
        _produce(cluster.brokers[second].port, "epochs", 50).responses[0].partition_responses[0].error_code
        == 0
    )

    # A fetcher that read epoch 0 up to offset 120 (which epoch 0 never reached) has diverged at 100.
    p = _fetch(cluster.brokers[second].port, topic_id, 120, last_epoch=0).responses[0].partitions[0]
    assert p.error_code == 0 and bytes(p.records) == b""
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 100)
    # One that stopped inside epoch 0 has not: it gets records.
    p = _fetch(cluster.brokers[second].port, topic_id, 60, last_epoch=0).responses[0].partitions[0]
    assert p.error_code == 0 and p.diverging_epoch.epoch == -1 and len(p.records) > 0
    cluster.restart(first)
