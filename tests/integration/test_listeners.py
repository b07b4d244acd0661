"""Several listeners on one broker: each answers Metadata and FindCoordinator with its own advertised address."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from tests.broker_process import BrokerProcess, free_port


def test_each_listener_advertises_its_own_address(tmp_path: Path) -> None:
    inside, outside = free_port(), free_port()
    env = {
        "MINIKAFKA_LISTENERS": f"INSIDE://127.0.0.1:{inside},OUTSIDE://127.0.0.1:{outside}",
        "MINIKAFKA_ADVERTISED_LISTENERS": f"OUTSIDE://localhost:{outside}",
        "MINIKAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "INSIDE:PLAINTEXT,OUTSIDE:PLAINTEXT",
    }
    broker = BrokerProcess(tmp_path / "data", port=inside, env=env).start()
    try:
        via_inside = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
        assert [(b.host, b.port) for b in via_inside.brokers.values()] == [("127.0.0.1", inside)]
        outside_bootstrap = f"127.0.0.1:{outside}"
        via_outside = AdminClient({"bootstrap.servers": outside_bootstrap}).list_topics(timeout=10)
        assert [(b.host, b.port) for b in via_outside.brokers.values()] == [("localhost", outside)]

        # a group through the second listener: FindCoordinator names that listener's address too
        producer = Producer({"bootstrap.servers": outside_bootstrap})
        for n in range(10):
            producer.produce("two-listeners", value=b"%d" % n)
        assert producer.flush(15) == 0
        consumer = Consumer(
            {"bootstrap.servers": outside_bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["two-listeners"])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(int(msg.value()))
        consumer.commit(asynchronous=False)
        consumer.close()
        assert got == list(range(10))
    finally:
        broker.stop()
    assert f"listener OUTSIDE (PLAINTEXT) on 127.0.0.1:{outside}" in broker.log()
