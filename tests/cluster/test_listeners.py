"""Brokers with a client listener and an inter-broker listener: followers fetch on the one named
by ``inter.broker.listener.name``, clients are told the addresses of the one they came in on."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.broker_process import free_port
from tests.cluster.helpers import Sender, create_topic, replicas_agree, wait_for
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

INTERNAL_HOST = "127.0.0.2"  # all of 127/8 is loopback: the two listeners differ by address too


def _connected_to(host: str, port: int) -> bool:
    """Whether some process on this machine holds an established TCP connection to host:port."""
    want = f"{_hex_ip(host)}:{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[2] == want and fields[3] == "01":  # remote address, state ESTABLISHED
            return True
    return False


def _hex_ip(host: str) -> str:
    return "".join(f"{int(octet):02X}" for octet in reversed(host.split(".")))


def test_followers_fetch_on_the_inter_broker_listener(tmp_path: Path, zookeeper: ZooKeeperProcess) -> None:
    cluster = Cluster(tmp_path, zookeeper, inter_broker_listener_name="REPLICATION")
    internal = {}
    for node, b in cluster.brokers.items():
        internal[node] = free_port()
        b.env["MINIKAFKA_LISTENERS"] = (
            f"CLIENTS://127.0.0.1:{b.port},REPLICATION://{INTERNAL_HOST}:{internal[node]}"
        )
        b.env["MINIKAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "CLIENTS:PLAINTEXT,REPLICATION:PLAINTEXT"
    with cluster:
        clients = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET}).list_topics(
            timeout=10
        )
        assert {n: (b.host, b.port) for n, b in clients.brokers.items()} == {
            n: ("127.0.0.1", b.port) for n, b in cluster.brokers.items()
        }
        replication = AdminClient(
            {"bootstrap.servers": f"{INTERNAL_HOST}:{internal[1]}", "logger": QUIET}
        ).list_topics(timeout=10)
        assert {n: (b.host, b.port) for n, b in replication.brokers.items()} == {
            n: (INTERNAL_HOST, port) for n, port in internal.items()
        }

        create_topic(cluster.bootstrap, "two-listeners", 3, 3, **{"min.insync.replicas": "3"})
        sender = Sender(cluster.bootstrap, "two-listeners")
        sender.send(range(3000))
        sender.flush()
        assert len(sender.acked) == 3000 and not sender.errors  # acks=all with all three in sync
        wait_for(lambda: replicas_agree(cluster, "two-listeners", 3), 30, "the replicas to agree")
        assert all(_connected_to(INTERNAL_HOST, port) for port in internal.values())
