"""The newer admin and offset APIs through real admin clients: kafka-python 3.0 (which negotiates the
newest versions it knows: OffsetFetch v8+ for several groups, LeaveGroup v5, ListOffsets v10,
DescribeLogDirs, DescribeProducers, OffsetDelete, DescribeCluster, ApiVersions features) and
confluent-kafka (librdkafka's ListOffsets with max timestamp, DescribeCluster, DeleteRecords)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ElectionType, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, MemberToRemove
from kafka.admin import OffsetSpec as KOffsetSpec
from kafka.structs import OffsetAndMetadata

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(180)
NOW = int(time.time() * 1000)


def _produce(bootstrap: str, topic: str, timestamps: list[int], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i, ts in enumerate(timestamps):
        producer.produce(topic, value=b"v%d" % i, partition=partition, timestamp=ts)
        producer.flush(30)  # one batch per record: offsets and timestamps as listed
    assert producer.flush(30) == 0


def test_confluent_list_offsets_cluster_and_delete_records(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("cf", 2, 1)])["cf"].result(30)
    _produce(broker.bootstrap, "cf", [NOW + 1, NOW + 7, NOW + 3, NOW + 7])
    specs = {
        "latest": OffsetSpec.latest(),
        "earliest": OffsetSpec.earliest(),
        "max": OffsetSpec.max_timestamp(),
        "at": OffsetSpec.for_timestamp(NOW + 2),
    }
    got = {}
    for name, spec in specs.items():
        result = admin.list_offsets({CTopicPartition("cf", 0): spec})[CTopicPartition("cf", 0)].result(30)
        got[name] = (result.offset, result.timestamp)
    assert got == {
        "latest": (4, -1),
        "earliest": (0, -1),
        "max": (1, NOW + 7),  # the first record carrying the largest timestamp
        "at": (1, NOW + 7),
    }
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", broker.port)]
    assert cluster.controller.id == 0 and cluster.cluster_id
    assert cluster.authorized_operations  # every cluster operation: there is no authorizer
    deleted = admin.delete_records([CTopicPartition("cf", 0, 2)])
    assert [f.result(30).low_watermark for f in deleted.values()] == [2]


def test_kafka_python_admin_newest_apis(broker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        from kafka.admin import NewTopic as KNewTopic

        admin.create_topics([KNewTopic("kp", 2, 1), KNewTopic("other", 1, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
        for i, ts in enumerate((NOW + 5, NOW + 9, NOW + 2)):
            producer.send("kp", b"v%d" % i, partition=0, timestamp_ms=ts).get(30)
        producer.send("other", b"x", partition=0).get(30)
        producer.close()

        tp = TopicPartition("kp", 0)
        offsets = admin.list_partition_offsets({tp: KOffsetSpec.MAX_TIMESTAMP})
        assert (offsets[tp].offset, offsets[tp].timestamp) == (1, NOW + 9)
        offsets = admin.list_partition_offsets({tp: KOffsetSpec.EARLIEST_LOCAL})
        assert offsets[tp].offset == 0

        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 0 and [b["broker_id"] for b in cluster["brokers"]] == [0]

        features = admin.describe_features()
        assert features["metadata.version"] == {
            "supported": (7, 27),
            "finalized": (27, 27),
            "finalized_epoch": 0,
        }
        assert features["transaction.version"]["finalized"] == (2, 2)  # transactions v2, as Kafka 4.1

        dirs = admin.describe_log_dirs({"kp": [0, 1]})
        sizes = {
            (t["name"], p["partition_index"]): p["partition_size"]
            for node in dirs
            for d in node["log_dirs"]
            for t in d["topics"]
            for p in t["partitions"]
        }
        on_disk = sum(f.stat().st_size for f in (broker.data_dir / "kp-0").glob("*.log"))
        assert sizes == {("kp", 0): on_disk, ("kp", 1): 0} and on_disk > 0

        producers = admin.describe_producers([tp])
        states = producers[tp].active_producers
        assert len(states) == 1 and states[0].last_sequence == 2 and states[0].producer_epoch == 0

        # Offsets of two groups in one OffsetFetch (v8+), then OffsetDelete on an Empty group.
        admin.alter_group_offsets("g1", {tp: OffsetAndMetadata(2, "", -1)})
        admin.alter_group_offsets("g2", {TopicPartition("other", 0): OffsetAndMetadata(1, "", -1)})
        both = admin.list_group_offsets({"g1": None, "g2": None})
        assert {g: {t: o.offset for t, o in parts.items()} for g, parts in both.items()} == {
            "g1": {tp: 2},
            "g2": {TopicPartition("other", 0): 1},
        }
        result = admin.delete_group_offsets("g1", [tp])
        assert all(err is None or err.errno == 0 for err in result.values()), result
        assert admin.list_group_offsets({"g1": None})["g1"] == {}
    finally:
        admin.close()


def test_kafka_python_removes_a_static_member_and_offset_delete_spares_consumed_topics(
    broker: BrokerProcess,
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    consumer = KafkaConsumer(
        "kp",
        bootstrap_servers=broker.bootstrap,
        group_id="static",
        group_instance_id="instance-1",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=30_000,
    )
    try:
        from kafka.admin import NewTopic as KNewTopic

        admin.create_topics([KNewTopic("kp", 1, 1), KNewTopic("other", 1, 1)])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(200)
        assert consumer.assignment() == {TopicPartition("kp", 0)}
        consumer.commit({TopicPartition("kp", 0): OffsetAndMetadata(0, "", -1)})
        admin.alter_group_offsets("static", {TopicPartition("other", 0): OffsetAndMetadata(0, "", -1)})
        # While the member is there, the offsets of the topic it reads are kept.
        result = admin.delete_group_offsets("static", [TopicPartition("kp", 0), TopicPartition("other", 0)])
        codes = {t: (e.errno if e is not None else 0) for t, e in result.items()}
        assert codes == {
            TopicPartition("kp", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            TopicPartition("other", 0): 0,
        }
        # LeaveGroup v5 by group instance id, as an operator removes a static member.
        admin.remove_group_members("static", [MemberToRemove(group_instance_id="instance-1", reason="ops")])
        group = admin.describe_groups(["static"])["static"]
        assert group["group_state"] == "Empty" and group["members"] == []
    finally:
        consumer.close(autocommit=False)
        admin.close()
    assert "ops" in broker.log()


def test_confluent_elect_leaders_on_a_single_broker(broker: BrokerProcess) -> None:
    """One replica per partition is always its preferred leader: nothing to elect, unknown ones named."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("el", 2, 1)])["el"].result(15)
    # All partitions: as KafkaApis, the answer leaves out those that needed no election (here: all).
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(15) == {}
    asked = [CTopicPartition("el", 1), CTopicPartition("el", 7)]
    out = {
        tp.partition: str(e) for tp, e in admin.elect_leaders(ElectionType.UNCLEAN, asked).result(15).items()
    }
    assert "ELECTION_NOT_NEEDED" in out[1] and "UNKNOWN_TOPIC_OR_PART" in out[7], out


def test_reassignments_on_a_single_broker(broker: BrokerProcess) -> None:
    """A partition's only possible home is the one broker: moving it there is done at once, another
    broker is not alive, nothing is ever in progress (the bundled client's calls, on the wire)."""
    from client.admin import AdminClient as BundledAdmin
    from client.types import TopicPartition as TP

    creator = AdminClient({"bootstrap.servers": broker.bootstrap})
    creator.create_topics([NewTopic("ra", 1, 1)])["ra"].result(15)
    admin = BundledAdmin(bootstrap_servers=broker.bootstrap)
    try:
        me = admin.describe_cluster().brokers[0].node_id
        answers = admin.alter_partition_reassignments({TP("ra", 0): [me], TP("ra", 3): [me]})
        assert answers[TP("ra", 0)] is None
        assert "UNKNOWN_TOPIC_OR_PARTITION" in repr(answers[TP("ra", 3)])
        refused = admin.alter_partition_reassignments({TP("ra", 0): [me, me + 1]})[TP("ra", 0)]
        assert refused is not None and refused.code == 39  # INVALID_REPLICA_ASSIGNMENT: not alive
        cancel = admin.alter_partition_reassignments({TP("ra", 0): None})[TP("ra", 0)]
        assert cancel is not None and cancel.code == 85  # NO_REASSIGNMENT_IN_PROGRESS
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()
