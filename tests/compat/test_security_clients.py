"""Real clients over SASL_SSL (SCRAM-SHA-512, SCRAM-SHA-256), SASL_PLAINTEXT (PLAIN) and SSL (mTLS).

Each of confluent-kafka, kafka-python, aiokafka, kcat and the bundled client
produces to a topic of its own and reads it back through a consumer group on
each listener kind; the broker is a subprocess with all four listeners
(tests/compat/security_broker.py).
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.security_broker import SecureBroker, secure_broker

KINDS = ("scram512", "scram256", "plain", "mtls")
N = 30


@pytest.fixture(scope="module")
def sb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    with secure_broker(tmp_path_factory.mktemp("security")) as broker:
        yield broker


def _topic(client: str, kind: str) -> str:
    return f"sec-{client}-{kind}-{uuid.uuid4().hex[:6]}"


def _values() -> list[bytes]:
    return [f"record-{i}".encode() for i in range(N)]


def _create_topic(sb: SecureBroker, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": sb.proc.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)


@pytest.mark.parametrize("kind", KINDS)
def test_confluent_kafka(sb: SecureBroker, kind: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    conf = sb.confluent(kind)
    topic = _topic("ck", kind)
    admin = AdminClient(conf)  # admin over the secured listener too
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    producer = Producer({**conf, "enable.idempotence": True})
    for v in _values():
        producer.produce(topic, v)
    assert producer.flush(20) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < N and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(got) == sorted(_values())


def _kafka_python_conf(sb: SecureBroker, kind: str) -> dict[str, object]:
    conf = sb.confluent(kind)
    out: dict[str, object] = {
        "bootstrap_servers": conf["bootstrap.servers"],
        "security_protocol": conf["security.protocol"],
    }
    if "sasl.mechanism" in conf:
        out |= {
            "sasl_mechanism": conf["sasl.mechanism"],
            "sasl_plain_username": conf["sasl.username"],
            "sasl_plain_password": conf["sasl.password"],
        }
    if "ssl.ca.location" in conf:
        out["ssl_cafile"] = conf["ssl.ca.location"]
    if kind == "mtls":
        out |= {"ssl_certfile": str(sb.client_cert.cert), "ssl_keyfile": str(sb.client_cert.key)}
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_kafka_python(sb: SecureBroker, kind: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    conf = _kafka_python_conf(sb, kind)
    topic = _topic("kp", kind)
    _create_topic(sb, topic)
    producer = KafkaProducer(**conf)
    for v in _values():
        producer.send(topic, v)
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", consumer_timeout_ms=15000, **conf
    )
    got = []
    for m in consumer:
        got.append(m.value)
        if len(got) == N:
            break
    consumer.commit()
    consumer.close()
    assert sorted(got) == sorted(_values())


@pytest.mark.parametrize("kind", KINDS)
def test_aiokafka(sb: SecureBroker, kind: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    conf = sb.confluent(kind)
    topic = _topic("aio", kind)
    _create_topic(sb, topic)
    opts: dict[str, object] = {
        "bootstrap_servers": conf["bootstrap.servers"],
        "security_protocol": conf["security.protocol"],
    }
    if "sasl.mechanism" in conf:
        opts |= {
            "sasl_mechanism": conf["sasl.mechanism"],
            "sasl_plain_username": conf["sasl.username"],
            "sasl_plain_password": conf["sasl.password"],
        }
    if conf["security.protocol"] in ("SSL", "SASL_SSL"):
        opts["ssl_context"] = sb.client_context(sb.client_cert if kind == "mtls" else None)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**opts)
        await producer.start()
        try:
            for v in _values():
                await producer.send(topic, v)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **opts)
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                async for m in consumer:
                    got.append(m.value)
                    if len(got) == N:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(_values())


@pytest.mark.parametrize("kind", KINDS)
def test_kcat(sb: SecureBroker, kind: str, kcat: str) -> None:
    conf = sb.confluent(kind)
    flags = [x for k, v in conf.items() if k != "bootstrap.servers" for x in ("-X", f"{k}={v}")]
    if "sasl.mechanism" in conf:  # kcat's librdkafka spells it sasl.mechanisms
        flags = [f.replace("sasl.mechanism=", "sasl.mechanisms=") for f in flags]
    topic = _topic("kcat", kind)
    _create_topic(sb, topic)
    lines = "\n".join(v.decode() for v in _values()) + "\n"
    subprocess.run(
        [kcat, "-b", conf["bootstrap.servers"], *flags, "-P", "-t", topic],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [kcat, "-b", conf["bootstrap.servers"], *flags, "-G", f"g-{topic}", "-o", "beginning", "-e", topic],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert sorted(out.stdout.split()) == sorted(_values())


@pytest.mark.parametrize("kind", KINDS)
def test_bundled_client(sb: SecureBroker, kind: str) -> None:
    from client import Consumer, Producer

    conf = sb.confluent(kind)
    topic = _topic("mk", kind)
    _create_topic(sb, topic)
    with Producer(conf) as producer:
        for v in _values():
            producer.send(topic, v)
        producer.flush()
    with Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < N and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(500)]
        consumer.commit()
    assert sorted(got) == sorted(_values())


def test_principal_of_a_client_certificate(sb: SecureBroker) -> None:
    """The mTLS client's certificate, not a password, names it (Kafka's DEFAULT mapping)."""
    from tests.wire import RawClient

    with RawClient(sb.ssl, tls=sb.client_context(sb.client_cert)) as c:
        peer = c.sock.getpeercert()  # type: ignore[attr-defined]
        assert ("commonName", "broker") in [rdn[0] for rdn in peer["subject"]]
        assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0


def test_tls_versions_and_hostname(sb: SecureBroker) -> None:
    """The broker's certificate names 127.0.0.1, so a hostname-checking client accepts it."""
    ctx = sb.client_context()
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    from tests.wire import RawClient

    with RawClient(sb.sasl_ssl, tls=ctx) as c:
        assert c.sock.version() in ("TLSv1.2", "TLSv1.3")  # type: ignore[attr-defined]


def test_scram_credentials_survive_a_restart(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    with secure_broker(tmp_path) as broker:
        broker.proc.stop()
        broker.proc.start()
        producer = Producer(broker.confluent("scram512"))
        producer.produce("after-restart", b"x")
        assert producer.flush(20) == 0
        file = broker.proc.data_dir / "__minikafka_scram_credentials.json"
        text = file.read_text()
        assert "bob-secret" not in text and "salt=" in text and "stored_key=" in text


@pytest.mark.parametrize("kind", ("scram512", "mtls"))
def test_fetch_answers_larger_than_a_tls_write_arrive_whole(sb: SecureBroker, kind: str) -> None:
    """The broker hands a TLS transport at most 64 KB at a time (broker/connection.py
    TLS_WRITE_CHUNK): confluent-kafka reads 3 MB of distinct 1 KB records over TLS, in fetch
    answers of up to 1 MB, and gets every byte back in order."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = sb.confluent(kind)
    topic = _topic("ck-big", kind)
    _create_topic(sb, topic)
    values = [bytes([i % 251]) * 7 + i.to_bytes(4, "big") * 254 + b"\n" for i in range(3000)]  # 1 KB each
    producer = Producer({**conf, "linger.ms": 20})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            **conf,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 4 << 20,
            "max.partition.fetch.bytes": 1 << 20,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                got.append(m.value())
    consumer.close()
    assert got == values
