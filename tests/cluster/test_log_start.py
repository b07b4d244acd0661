"""A follower that comes back below its leader's log start offset starts over there and rejoins the ISR.

While broker B is down, its leader A takes more records and DeleteRecords
moves A's log start past everything B holds. B's fetch then answers
OFFSET_OUT_OF_RANGE with A's log start: B drops its log, starts at the batch
holding that offset, catches up and is back in the ISR, holding the batches A
holds from there on.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.helpers import partition_metadata, replica_batches, wait_for
from tests.cluster_process import QUIET, Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def _produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5, "logger": QUIET})
    for n in range(first, first + count):
        producer.produce("ls", key=str(n).encode(), value=b"v" * 100, partition=0)
    assert producer.flush(30) == 0


def _state(cluster: Cluster) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, ISR) of ls-0; (-1, [], []) until the cluster knows the topic."""
    try:
        return partition_metadata(cluster.bootstrap, "ls").get(0, (-1, [], []))
    except Exception:
        return -1, [], []


def _last_offset(cluster: Cluster, node: int) -> int:
    batches = replica_batches(cluster.brokers[node].data_dir, "ls", 0)
    return batches[-1][1] if batches else -1


def test_follower_below_the_leaders_log_start_starts_over_there(cluster: Cluster) -> None:
    a, b = 1, 2
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
    topic = NewTopic("ls", 1, replica_assignment=[[a, b]], config={"min.insync.replicas": "1"})
    admin.create_topics([topic])["ls"].result(15)
    wait_for(lambda: _state(cluster)[::2] == (a, [a, b]), 30, "A leading, B in sync")
    _produce(cluster.bootstrap, 0, 500)
    wait_for(lambda: _last_offset(cluster, b) == 499, 30, "B caught up")

    cluster.kill(b)
    wait_for(lambda: _state(cluster)[2] == [a], 30, "B out of the ISR")
    _produce(cluster.bootstrap, 500, 2000)
    start = 2100
    done = admin.delete_records([TopicPartition("ls", 0, start)])
    assert next(iter(done.values())).result(15).low_watermark == start  # A's log start offset now

    cluster.restart(b)
    wait_for(lambda: _state(cluster)[2] == [a, b], 60, "B back in the ISR")
    ours = replica_batches(cluster.brokers[b].data_dir, "ls", 0)
    theirs = replica_batches(cluster.brokers[a].data_dir, "ls", 0)
    assert ours[0][0] <= start <= ours[0][1]  # B starts at the batch holding A's log start
    assert ours == [batch for batch in theirs if batch[0] >= ours[0][0]]
    assert ours[-1][1] == 2499
