"""SASL/OAUTHBEARER with unsecured JWTs, from confluent-kafka (librdkafka makes the token).

The token's subject is the principal: with the authorizer on, ``User:alice``
(a super user) may produce and ``User:bob`` may not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker_process import BrokerProcess, free_port


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    root: Path = tmp_path_factory.mktemp("oauth")
    port = free_port()
    config = root / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n"
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER\n"
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
        "super.users=User:ANONYMOUS;User:alice\n"
    )
    proc = BrokerProcess(root / "data", extra=["--config", str(config)]).start()
    try:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        admin.create_topics([NewTopic("oauth", 1, 1)])["oauth"].result(30)
        yield proc, port
    finally:
        assert proc.stop() == 0, proc.log()


def _produce(port: int, principal: str) -> KafkaError | None:
    results: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal={principal}",
            "message.timeout.ms": 10000,
        }
    )
    producer.produce("oauth", b"x", on_delivery=lambda err, _msg: results.append(err))
    deadline = time.monotonic() + 15
    while not results and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.flush(5)
    return results[0] if results else KafkaError(KafkaError._TIMED_OUT)


def test_the_tokens_subject_is_the_principal(broker: tuple[BrokerProcess, int]) -> None:
    _, port = broker
    assert _produce(port, "alice") is None
    err = _produce(port, "bob")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
