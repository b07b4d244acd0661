"""Adapters that produce and consume with each real Kafka client, unmodified.

Every producer takes a list of `Message`s and writes them to one partition;
every consumer reads `count` records from the beginning of one partition in
assign mode and returns them as `Message`s with offsets, so tests can compare
what any client wrote with what any other client read.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

BASE_TS = 1_700_000_000_000


@dataclass(frozen=True)
class Message:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: int | None = None
    offset: int | None = field(default=None, compare=False)


def sample_messages(n: int = 20) -> list[Message]:
    """Keys, null keys, null values, empty values, headers, explicit timestamps."""
    out = []
    for i in range(n):
        key = None if i % 5 == 1 else f"key-{i}".encode()
        value = None if i % 7 == 3 else (b"" if i % 11 == 4 else f"value-{i}-".encode() * (20 + i % 4))
        headers = (("h", f"v{i}".encode()), ("trace", b"abc")) if i % 3 == 0 else ()
        out.append(Message(key, value, headers, BASE_TS + i))
    return out


def kcat_messages(n: int = 20) -> list[Message]:
    """What kcat -P can express: text keys (some null), text or null values, one header on every record."""
    out = []
    for i in range(n):
        key = None if i % 5 == 1 else f"key-{i}".encode()
        value = None if i % 7 == 3 else f"value-{i}-".encode() * 20
        out.append(Message(key, value, (("src", b"kcat"),)))
    return out


# -- producers ----------------------------------------------------------------


def produce_kafka_python(
    bootstrap: str, topic: str, partition: int, msgs: list[Message], codec: str | None
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5)
    try:
        futures = [
            producer.send(
                topic,
                key=m.key,
                value=m.value,
                headers=list(m.headers),
                partition=partition,
                timestamp_ms=m.timestamp,
            )
            for m in msgs
        ]
        producer.flush(30)
        for f in futures:
            f.get(30)
    finally:
        producer.close(10)


def produce_confluent(
    bootstrap: str, topic: str, partition: int, msgs: list[Message], codec: str | None
) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "compression.type": codec or "none",
            "linger.ms": 5,
        }
    )
    errors: list[object] = []
    for m in msgs:
        kwargs = {"timestamp": m.timestamp} if m.timestamp is not None else {}
        producer.produce(
            topic,
            value=m.value,
            key=m.key,
            partition=partition,
            headers=list(m.headers) or None,
            on_delivery=lambda err, _msg: err and errors.append(err),
            **kwargs,
        )
    left = producer.flush(30)
    assert left == 0 and not errors, (left, errors)


def produce_aiokafka(
    bootstrap: str, topic: str, partition: int, msgs: list[Message], codec: str | None
) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, compression_type=codec, linger_ms=5
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    value=m.value,
                    key=m.key,
                    partition=partition,
                    headers=list(m.headers),
                    timestamp_ms=m.timestamp,
                )
                for m in msgs
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def produce_kcat(bootstrap: str, topic: str, partition: int, msgs: list[Message], codec: str | None) -> None:
    lines = []
    for m in msgs:
        assert m.headers == (("src", b"kcat"),)
        key = "" if m.key is None else m.key.decode()
        value = "" if m.value is None else m.value.decode()
        # kcat -K: a line without the delimiter has no key; -Z turns empty values into null.
        lines.append(value if m.key is None else f"{key}\t{value}")
    args = [
        "kcat",
        "-P",
        "-b",
        bootstrap,
        "-t",
        topic,
        "-p",
        str(partition),
        "-K",
        "\t",
        "-Z",
        "-H",
        "src=kcat",
        "-X",
        "linger.ms=200",  # one batch for all the lines, even on a loaded machine
    ]
    if codec:
        args += ["-z", codec]
    subprocess.run(
        args, input="\n".join(lines) + "\n", text=True, check=True, timeout=60, capture_output=True
    )


# -- consumers ----------------------------------------------------------------


def consume_kafka_python(bootstrap: str, topic: str, partition: int, count: int) -> list[Message]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20000,
    )
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out = []
        for rec in consumer:
            out.append(Message(rec.key, rec.value, tuple(rec.headers), rec.timestamp, rec.offset))
            if len(out) >= count:
                break
        return out
    finally:
        consumer.close()


def consume_confluent(bootstrap: str, topic: str, partition: int, count: int) -> list[Message]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "compat-assign",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        out: list[Message] = []
        for _ in range(200):
            for msg in consumer.consume(num_messages=count, timeout=0.2):
                assert msg.error() is None, msg.error()
                _, ts = msg.timestamp()
                out.append(Message(msg.key(), msg.value(), tuple(msg.headers() or ()), ts, msg.offset()))
            if len(out) >= count:
                break
        return out
    finally:
        consumer.close()


def consume_aiokafka(bootstrap: str, topic: str, partition: int, count: int) -> list[Message]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[Message]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            out: list[Message] = []
            while len(out) < count:
                batch = await asyncio.wait_for(consumer.getmany(tp, timeout_ms=1000), 20)
                for rec in batch.get(tp, []):
                    out.append(Message(rec.key, rec.value, tuple(rec.headers), rec.timestamp, rec.offset))
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())


def consume_kcat(bootstrap: str, topic: str, partition: int, count: int) -> list[Message]:
    proc = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-p",
            str(partition),
            "-o",
            "beginning",
            "-c",
            str(count),
            "-e",
            "-J",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    out = []
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        hs = rec.get("headers") or []
        headers = tuple((hs[i], hs[i + 1].encode()) for i in range(0, len(hs), 2))
        key = None if rec["key"] is None else rec["key"].encode()
        value = None if rec["payload"] is None else rec["payload"].encode()
        out.append(Message(key, value, headers, rec["ts"], rec["offset"]))
    return out


Producer = Callable[[str, str, int, list[Message], "str | None"], None]
Consumer = Callable[[str, str, int, int], list[Message]]

PRODUCERS: dict[str, Producer] = {
    "kafka-python": produce_kafka_python,
    "confluent-kafka": produce_confluent,
    "aiokafka": produce_aiokafka,
    "kcat": produce_kcat,
}
CONSUMERS: dict[str, Consumer] = {
    "kafka-python": consume_kafka_python,
    "confluent-kafka": consume_confluent,
    "aiokafka": consume_aiokafka,
    "kcat": consume_kcat,
}
CODECS: dict[str, list[str]] = {
    "kafka-python": ["gzip", "snappy", "lz4", "zstd"],
    "confluent-kafka": ["gzip", "snappy", "lz4", "zstd"],
    "aiokafka": ["gzip", "snappy", "lz4", "zstd"],
    "kcat": ["gzip", "snappy", "lz4", "zstd"],
}
