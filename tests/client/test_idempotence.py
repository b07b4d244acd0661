"""The idempotent producer under injected connection drops: every record once, in order, per partition."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from client import Consumer, Producer, TopicPartition
from tests.broker_process import BrokerProcess
from tests.client.proxy import ChaosProxy

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 3


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[BrokerProcess, ChaosProxy]]:
    """A broker that advertises the proxy's port, so every client connection goes through the proxy."""
    proxy = ChaosProxy()
    broker = BrokerProcess(
        tmp_path / "data",
        env={"MINIKAFKA_ADVERTISED_PORT": str(proxy.port), "MINIKAFKA_NUM_PARTITIONS": str(PARTITIONS)},
    ).start()
    proxy.start(broker.port)
    try:
        yield broker, proxy
    finally:
        proxy.close()
        assert broker.stop() == 0, broker.log()


def read_back(bootstrap: str, topic: str, total: int) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            records = c.poll(1.0)
            for r in records:
                assert r.offset == len(out[r.partition]), "offsets must be dense"
                out[r.partition].append(r.value)  # type: ignore[arg-type]
            got += len(records)
            if not records and got >= total:
                break
    return out


@pytest.mark.parametrize("max_in_flight", [5, 1])
def test_no_duplicates_and_order_kept_through_connection_drops(
    proxied: tuple[BrokerProcess, ChaosProxy], max_in_flight: int
) -> None:
    broker, proxy = proxied
    bootstrap = f"127.0.0.1:{proxy.port}"
    topic = f"idem-{max_in_flight}"
    total = 12_000
    rng = random.Random(max_in_flight)
    producer = Producer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=2,
        batch_size=3000,
        max_in_flight_requests_per_connection=max_in_flight,
        request_timeout_ms=3000,
        delivery_timeout_ms=120_000,
        retry_backoff_ms=20,
        reconnect_backoff_ms=10,
        reconnect_backoff_max_ms=100,
    )
    assert producer.config["enable.idempotence"] is True
    futures = []
    try:
        producer.partitions_for(topic)
        for i in range(total):
            p = i % PARTITIONS
            futures.append(producer.send(topic, f"{p}-{i // PARTITIONS}".encode(), partition=p))
            if i % 300 == 299:
                # Cut while this chunk's requests are in flight; half the time the next connection
                # delivers a request to the broker but loses the answer.
                time.sleep(rng.uniform(0.0, 0.015))
                if rng.random() < 0.5:
                    proxy.swallow_responses(1)
                proxy.cut()
        producer.flush(120)
    finally:
        producer.close(30)
    # Enough disruption happened: connections cut mid-request, and requests applied but unanswered.
    assert proxy.cuts + proxy.swallowed >= 12 and proxy.swallowed >= 3, (proxy.cuts, proxy.swallowed)
    offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    for f in futures:
        md = f.get(0)
        offsets[md.partition].append(md.offset)
    for p, offs in offsets.items():
        known = [o for o in offs if o >= 0]  # a duplicate answered as such may not carry its offset
        assert known == sorted(known) and len(set(known)) == len(known), (
            f"partition {p}: offsets out of order"
        )
    stored = read_back(bootstrap, topic, total)
    for p in range(PARTITIONS):
        expected = [f"{p}-{n}".encode() for n in range(total // PARTITIONS)]
        assert stored[p] == expected, f"partition {p}: {len(stored[p])} stored, duplicates or reordering"
