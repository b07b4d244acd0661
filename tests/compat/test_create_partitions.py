"""CreatePartitions through real admin clients (confluent-kafka, kafka-python) on one broker."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


def _error(future: object) -> int:
    with pytest.raises(KafkaException) as info:
        future.result(30)  # type: ignore[attr-defined]
    return info.value.args[0].code()


def _partitions(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def test_confluent_admin_adds_partitions_that_serve_and_survive_a_restart(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("grow", 2, 1)])["grow"].result(30)

    assert (
        _error(admin.create_partitions([NewPartitions("grow", 2)])["grow"]) == KafkaError.INVALID_PARTITIONS
    )
    assert (
        _error(admin.create_partitions([NewPartitions("grow", 1)])["grow"]) == KafkaError.INVALID_PARTITIONS
    )
    assert (
        _error(admin.create_partitions([NewPartitions("nope", 3)])["nope"])
        == KafkaError.UNKNOWN_TOPIC_OR_PART
    )
    wrong = admin.create_partitions([NewPartitions("grow", 3, replica_assignment=[[7]])])["grow"]
    assert _error(wrong) == KafkaError.INVALID_REPLICA_ASSIGNMENT
    admin.create_partitions([NewPartitions("grow", 5)], validate_only=True)["grow"].result(30)
    assert _partitions(admin, "grow") == 2

    admin.create_partitions([NewPartitions("grow", 4)])["grow"].result(30)
    assert _partitions(admin, "grow") == 4
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for p in range(4):
        producer.produce("grow", value=b"to %d" % p, partition=p)
    assert producer.flush(30) == 0

    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _partitions(admin, "grow") == 4
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition("grow", p, 0) for p in range(4)])
    got: dict[int, bytes] = {}
    ended: set[int] = set()
    while len(ended) < 4:
        msg = consumer.poll(10)
        assert msg is not None
        if msg.error():
            ended.add(msg.partition())
        else:
            got[msg.partition()] = msg.value()
    consumer.close()
    assert got == {p: b"to %d" % p for p in range(4)}


def test_kafka_python_admin_adds_partitions_and_refuses_internal_topics(broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewPartitions as KpNewPartitions
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import InvalidRequestError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([KpNewTopic("kp", 1, 1)])
        admin.create_partitions({"kp": KpNewPartitions(3)})
        assert len(admin.describe_topics(["kp"])[0]["partitions"]) == 3
        Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"}).close()  # makes __consumer_offsets
        wait = AdminClient({"bootstrap.servers": broker.bootstrap})
        wait.list_topics("__consumer_offsets", timeout=10)
        with pytest.raises(InvalidRequestError):
            admin.create_partitions({"__consumer_offsets": KpNewPartitions(100)})
    finally:
        admin.close()
