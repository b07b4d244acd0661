"""Tiered storage on a real three-broker cluster (ZooKeeper) with a real SeaweedFS (issue 44's proofs).

- A replica added by reassignment finds its leader's local log starting far past 0: it rebuilds its
  state from the object store (Kafka's TierStateMachine: leader epochs and producer state from the
  remote segment below the leader's local start), copies only the local part, joins the ISR, and as
  leader serves every record from offset 0.
- The leader SIGKILLed while it uploads a segment: a new leader finishes the copies; nothing
  acknowledged is lost or duplicated; the bucket and ``__remote_log_metadata`` agree (nothing copied
  twice, nothing orphaned); the restarted broker follows, rebuilding from remote when its log ends
  below the new leader's local start.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from client.admin import AdminClient
from client.types import TopicPartition as BundledTopicPartition
from tests.cluster.helpers import partition_metadata, wait_for, wait_for_leaders
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess
from tests.support.seaweed import SeaweedFS
from tests.tiered.helpers import list_offset, value_of

pytestmark = [pytest.mark.tiered, pytest.mark.timeout(240)]

TOPIC = "tiered"
SEGMENT_BYTES = 128 << 10
VALUE_BYTES = 1000
LOCAL_RETENTION = 2 * SEGMENT_BYTES
EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -4, -5


def broker_config(seaweed: SeaweedFS, key_prefix: str, nodes: int = 3) -> dict[int, dict[str, str]]:
    """Every broker's tiered-storage keys (objects under ``key_prefix`` in the bucket)."""
    keys = {
        "remote.log.storage.system.enable": "true",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
        **seaweed.rsm_properties(key_prefix),
    }
    return {node: dict(keys) for node in range(1, nodes + 1)}


def topic_configs(**more: str) -> dict[str, str]:
    return {
        "remote.storage.enable": "true",
        "segment.bytes": str(SEGMENT_BYTES),
        "local.retention.bytes": str(LOCAL_RETENTION),
        "retention.ms": "-1",
        **more,
    }


def produce(bootstrap: str, numbers: range) -> None:
    """Records ``numbers`` (key and value from the number) with acks=all, idempotent, all acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    failed: list[KafkaError] = []
    for n in numbers:
        while True:
            try:
                producer.produce(
                    TOPIC,
                    key=str(n).encode(),
                    value=value_of(n, VALUE_BYTES),
                    partition=0,
                    on_delivery=lambda err, _msg: err is not None and failed.append(err),
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]


def read_from_zero(bootstrap: str, end: int) -> dict[int, list[int]]:
    """{record number: [offsets]} of what a consumer reads from offset 0 up to ``end``; every value
    is checked byte for byte against its number."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time()}",
            "enable.auto.commit": False,
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: dict[int, list[int]] = {}
    offset = 0
    deadline = time.monotonic() + 90
    try:
        while offset < end:
            assert time.monotonic() < deadline, f"read up to {offset} of {end}"
            for msg in consumer.consume(500, timeout=1.0):
                assert msg.error() is None, msg.error()
                n = int(msg.key())
                assert msg.value() == value_of(n, VALUE_BYTES), f"record {n} at {msg.offset()} differs"
                seen.setdefault(n, []).append(msg.offset())
                offset = msg.offset() + 1
    finally:
        consumer.close()
    return seen


def leader_of(cluster: Cluster) -> int:
    return partition_metadata(cluster.bootstrap, TOPIC)[0][0]


def segment_bases(data_dir: Path) -> list[int]:
    """Base offsets of the ``.log`` files of one replica's directory, ascending."""
    return sorted(int(p.name.split(".")[0]) for p in (data_dir / f"{TOPIC}-0").glob("*.log"))


def test_a_new_replica_rebuilds_from_remote_and_serves_everything(
    seaweed: SeaweedFS, tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    count = 4000  # ~4 MB: ~30 segments, of which local retention keeps two
    with Cluster(tmp_path, zookeeper, broker_config=broker_config(seaweed, "rebuild/")) as cluster:
        admin = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
        new = NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1, 2]], config=topic_configs())
        admin.create_topics([new])[TOPIC].result(30)
        wait_for_leaders(cluster.bootstrap, TOPIC, 1, 2)
        produce(cluster.bootstrap, range(count))
        leader = cluster.brokers[1]
        assert list_offset(leader.port, TOPIC, -1) == count
        # every closed segment copied, the local log start far past 0 on both replicas
        per_segment = SEGMENT_BYTES // VALUE_BYTES
        wait_for(
            lambda: list_offset(leader.port, TOPIC, LATEST_TIERED) >= count - 3 * per_segment,
            60,
            "the copies",
        )
        wait_for(lambda: list_offset(leader.port, TOPIC, EARLIEST_LOCAL) > count // 2, 30, "local retention")
        leader_local_start = list_offset(leader.port, TOPIC, EARLIEST_LOCAL)

        # broker 3 joins the replicas, first in the list so that it can be elected preferred leader
        with AdminClient(bootstrap_servers=cluster.bootstrap) as bundled:
            started = bundled.alter_partition_reassignments({BundledTopicPartition(TOPIC, 0): [3, 1, 2]})
            assert started == {BundledTopicPartition(TOPIC, 0): None}
        wait_for(
            lambda: sorted(partition_metadata(cluster.bootstrap, TOPIC)[0][2]) == [1, 2, 3],
            60,
            "broker 3 in the ISR",
        )
        # broker 3's disk holds the local part only: it started at the end of a remote segment
        bases = segment_bases(cluster.brokers[3].data_dir)
        assert bases and bases[0] >= leader_local_start - per_segment - 1, (bases, leader_local_start)
        assert "rebuilt from remote storage" in cluster.log(3)

        tp = TopicPartition(TOPIC, 0)
        assert admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30) == {tp: None}
        wait_for(lambda: leader_of(cluster) == 3, 20, "broker 3 leading")
        new_leader = cluster.brokers[3]
        wait_for(lambda: list_offset(new_leader.port, TOPIC, -1) == count, 20, "broker 3's high watermark")
        assert list_offset(new_leader.port, TOPIC, EARLIEST) == 0
        assert list_offset(new_leader.port, TOPIC, EARLIEST_LOCAL) > 0

        # every record from offset 0, read from broker 3: most from the object store, the rest from its disk
        seen = read_from_zero(new_leader.bootstrap, count)
        assert sorted(seen) == list(range(count))
        assert all(offsets == [n] for n, offsets in seen.items())

        # and broker 3 leads: acks=all writes, then its own copies continue the remote log
        produce(cluster.bootstrap, range(count, count + 500))
        assert list_offset(new_leader.port, TOPIC, -1) == count + 500
