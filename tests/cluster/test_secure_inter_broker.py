"""Brokers that reach each other over SASL_SSL (marker ``cluster``: `make test-cluster`).

Three brokers whose inter-broker listener is SASL_SSL with PLAIN: followers
fetch, and the transaction coordinator writes its markers, over TLS after a
SASL login (``sasl.mechanism.inter.broker.protocol``, the ``username`` and
``password`` of the listener's JAAS config). Clients use the PLAINTEXT
listener. acks=all writes to RF 3 topics succeed with the full ISR, and a
transaction across partitions led by different brokers commits; the
inter-broker port itself refuses a client that does not log in. With
``connections.max.reauth.ms`` set, the brokers' links log in again on their
connections before their sessions expire (KIP-368), so the other side never
has to close them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.broker_process import free_port
from tests.cluster.helpers import create_topic, partition_metadata, wait_for, wait_for_leaders
from tests.cluster_process import Cluster, ZooKeeperProcess
from tests.compat.test_transactions import read_all
from tests.support.certs import make_tls_files
from tests.wire import RawClient

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' username="broker" password="broker-secret" user_broker="broker-secret";'
)


@pytest.fixture
def secure_cluster(
    tmp_path: Path, zookeeper: ZooKeeperProcess, request: pytest.FixtureRequest
) -> Iterator[tuple[Cluster, dict[int, int]]]:
    extra = getattr(request, "param", "")
    tls = make_tls_files(tmp_path / "tls")
    cluster = Cluster(tmp_path, zookeeper, **{"transaction.state.log.num.partitions": "3"})
    internal = {}
    for node, broker in cluster.brokers.items():
        internal[node] = free_port()
        config = broker.data_dir.parent / "server.properties"
        config.write_text(
            f"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:{internal[node]}\n"
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL\n"
            "inter.broker.listener.name=INTERNAL\n"
            "sasl.mechanism.inter.broker.protocol=PLAIN\n"
            "listener.name.internal.sasl.enabled.mechanisms=PLAIN\n"
            f"listener.name.internal.plain.sasl.jaas.config={JAAS}\n"
            f"ssl.keystore.location={tls.keystore}\n"
            f"ssl.truststore.location={tls.truststore}\n"
            f"{extra}"
        )
        broker.extra = ["--config", str(config)]
    with cluster:
        yield cluster, internal


def test_replication_and_markers_over_sasl_ssl(secure_cluster: tuple[Cluster, dict[int, int]]) -> None:
    cluster, internal = secure_cluster
    create_topic(cluster.bootstrap, "secure-rf3", 3, 3, **{"min.insync.replicas": "2"})
    wait_for_leaders(cluster.bootstrap, "secure-rf3", 3, isr=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce("secure-rf3", f"r{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0

    def full_isr() -> bool:
        return all(
            len(isr) == 3 for _, _, isr in partition_metadata(cluster.bootstrap, "secure-rf3").values()
        )

    wait_for(full_isr, 30, "every follower in the ISR (fetching over SASL_SSL)")

    txn = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "secure-txn"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for p in range(3):
        txn.produce("secure-rf3", b"committed", partition=p)
    txn.commit_transaction(30)
    records = read_all(cluster.bootstrap, "read_committed", 303, ("secure-rf3",))
    assert sorted(records).count(b"committed") == 3 and len(records) == 303
    assert "SASL login" not in "".join(cluster.log(n) for n in cluster.brokers)

    with RawClient(internal[1]) as raw:  # plaintext on the SASL_SSL port: no TLS, no answer
        raw.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert raw.is_closed()


@pytest.mark.parametrize("secure_cluster", ["connections.max.reauth.ms=1500\n"], indirect=True)
def test_links_reauthenticate_before_their_sessions_expire(
    secure_cluster: tuple[Cluster, dict[int, int]],
) -> None:
    cluster, _ = secure_cluster
    create_topic(cluster.bootstrap, "reauth-rf3", 3, 3, **{"min.insync.replicas": "3"})
    wait_for_leaders(cluster.bootstrap, "reauth-rf3", 3, isr=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    deadline = time.monotonic() + 6  # four session lifetimes of fetching and producing
    sent = 0
    while time.monotonic() < deadline:
        producer.produce("reauth-rf3", f"r{sent}".encode(), partition=sent % 3)
        producer.poll(0.02)
        sent += 1
    assert producer.flush(30) == 0  # min.insync.replicas 3: every follower kept up throughout
    logs = "".join(cluster.log(n) for n in cluster.brokers)
    assert "SASL session expired" not in logs
    assert "SASL login" not in logs
    assert len(read_all(cluster.bootstrap, "read_uncommitted", sent, ("reauth-rf3",))) == sent
