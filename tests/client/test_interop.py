"""Our client and real Kafka clients on one broker, both ways: records, headers, codecs, timestamps, key partitions."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from client import Consumer, Producer, TopicPartition
from client.partitioner import partition_for_key
from tests.broker_process import BrokerProcess
from tests.compat.clients import CONSUMERS, PRODUCERS, Message, kcat_messages, sample_messages

pytestmark = pytest.mark.timeout(180)


def produce_ours(bootstrap: str, topic: str, partition: int, msgs: list[Message], codec: str | None) -> None:
    with Producer(bootstrap_servers=bootstrap, compression_type=codec or "none", linger_ms=5) as p:
        futures = [
            p.send(
                topic, m.value, m.key, partition=partition, headers=list(m.headers), timestamp_ms=m.timestamp
            )
            for m in msgs
        ]
        p.flush()
        for f in futures:
            f.get(10)


def consume_ours(bootstrap: str, topic: str, partition: int, count: int) -> list[Message]:
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, partition)])
        out: list[Message] = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for r in c.poll(0.5):
                out.append(Message(r.key, r.value, r.headers, r.timestamp, r.offset))  # type: ignore[arg-type]
        return out


def _needs(client: str) -> None:
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.skip("kcat not installed")


def _check(sent: list[Message], got: list[Message], stamped_by_client: bool = False) -> None:
    assert [m.offset for m in got] == list(range(len(sent)))
    for s, g in zip(sent, got, strict=True):
        assert (g.key, g.value, g.headers) == (s.key, s.value, s.headers)
        if s.timestamp is not None:
            assert g.timestamp == s.timestamp
        elif stamped_by_client:
            assert abs(g.timestamp - time.time() * 1000) < 600_000


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_ours_to_theirs(kafka: BrokerProcess, topic: str, consumer: str) -> None:
    """kafka-python, confluent-kafka, aiokafka and kcat read what we wrote: keys, nulls, headers, timestamps."""
    _needs(consumer)
    sent = sample_messages(25)
    produce_ours(kafka.bootstrap, topic, 0, sent, None)
    _check(sent, CONSUMERS[consumer](kafka.bootstrap, topic, 0, len(sent)))


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_theirs_to_ours(kafka: BrokerProcess, topic: str, producer: str) -> None:
    """We read what kafka-python, confluent-kafka, aiokafka and kcat wrote."""
    _needs(producer)
    sent = kcat_messages(25) if producer == "kcat" else sample_messages(25)
    PRODUCERS[producer](kafka.bootstrap, topic, 0, sent, None)
    _check(sent, consume_ours(kafka.bootstrap, topic, 0, len(sent)), stamped_by_client=True)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_codecs_both_ways(kafka: BrokerProcess, topic: str, codec: str) -> None:
    """Our compressed batches decode in kafka-python and librdkafka; theirs (and kcat's) decode in ours."""
    sent = sample_messages(25)
    produce_ours(kafka.bootstrap, f"{topic}-ours", 0, sent, codec)
    _check(sent, CONSUMERS["kafka-python"](kafka.bootstrap, f"{topic}-ours", 0, len(sent)))
    _check(sent, CONSUMERS["confluent-kafka"](kafka.bootstrap, f"{topic}-ours", 0, len(sent)))
    for producer in ("kafka-python", "confluent-kafka"):
        name = f"{topic}-{producer}"
        PRODUCERS[producer](kafka.bootstrap, name, 0, sent, codec)
        _check(sent, consume_ours(kafka.bootstrap, name, 0, len(sent)))
    if shutil.which("kcat"):
        name = f"{topic}-kcat"
        msgs = kcat_messages(25)
        PRODUCERS["kcat"](kafka.bootstrap, name, 0, msgs, codec)
        _check(msgs, consume_ours(kafka.bootstrap, name, 0, len(msgs)), stamped_by_client=True)


def test_same_keys_land_in_the_same_partitions(kafka: BrokerProcess, topic: str) -> None:
    """Keyed records without a partition: ours, kafka-python, librdkafka (murmur2_random) and kcat agree."""
    from confluent_kafka import Producer as CProducer
    from kafka import KafkaProducer

    from client import AdminClient, NewTopic

    partitions = 6
    keys = [f"key-{i}".encode() for i in range(40)] + ["été".encode(), b"", b"a", b"hello world"]
    with AdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        for who in ("ours", "kp", "ck", "kcat"):
            assert admin.create_topics([NewTopic(f"{topic}-{who}", partitions)]) == {f"{topic}-{who}": None}

    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        ours = {k: p.send(f"{topic}-ours", b"v", k).get(10).partition for k in keys}
    kp = KafkaProducer(bootstrap_servers=kafka.bootstrap)
    theirs_kp = {k: kp.send(f"{topic}-kp", b"v", key=k).get(10).partition for k in keys}
    kp.close()
    ck = CProducer({"bootstrap.servers": kafka.bootstrap, "partitioner": "murmur2_random"})
    theirs_ck: dict[bytes, int] = {}
    for k in keys:
        ck.produce(
            f"{topic}-ck",
            b"v",
            key=k,
            on_delivery=lambda err, msg: theirs_ck.__setitem__(msg.key(), msg.partition()),
        )
    assert ck.flush(30) == 0
    expected = {k: partition_for_key(k, partitions) for k in keys}
    assert ours == expected
    assert theirs_kp == expected
    assert {k: theirs_ck[k] for k in keys if k} == {k: v for k, v in expected.items() if k}
    if shutil.which("kcat"):
        lines = "".join(f"{k.decode()}\tv\n" for k in keys if k)
        subprocess.run(
            [
                "kcat",
                "-P",
                "-b",
                kafka.bootstrap,
                "-t",
                f"{topic}-kcat",
                "-K",
                "\t",
                "-X",
                "partitioner=murmur2_random",
            ],
            input=lines,
            text=True,
            check=True,
            timeout=60,
        )
        with Consumer(bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest") as c:
            c.assign([TopicPartition(f"{topic}-kcat", p) for p in range(partitions)])
            seen: dict[bytes, int] = {}
            deadline = time.monotonic() + 30
            while len(seen) < len(lines.splitlines()) and time.monotonic() < deadline:
                for r in c.poll(0.5):
                    seen[r.key] = r.partition  # type: ignore[index]
        assert seen == {k: v for k, v in expected.items() if k}
