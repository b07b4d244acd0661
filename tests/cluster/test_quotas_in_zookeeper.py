"""Client quotas in ZooKeeper on a two-broker cluster (marker ``cluster``: `make test-cluster`).

AlterClientQuotas sent to one broker writes Kafka's ZK-mode layout (checked
with kazoo: ``/config/users/<user>`` keeping the user's SCRAM key,
``/config/clients/<default>``, ``/config/users/<user>/clients/<client-id>``,
and a ``config_change_`` notification per entity); the other broker describes
them at once; and a quota written straight into ZooKeeper, as Kafka's tools
write it, throttles clients of both brokers within seconds (the change
notification's watch, not the 5 s re-read).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from protocol.records import Record, build_batch
from tests.cluster.helpers import wait_for
from tests.cluster_process import Cluster, ZooKeeperProcess, zookeeper_available
from tests.wire import RawClient

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.timeout(180),
    pytest.mark.skipif(not zookeeper_available(), reason="ZooKeeper not installed"),
]

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, PRODUCE = 48, 49, 0
PROPAGATION_S = 4.0  # under the 5 s periodic re-read: the watch must have done it


@pytest.fixture
def zk_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, KazooClient]]:
    with (
        ZooKeeperProcess(tmp_path / "zookeeper") as zk,
        Cluster(tmp_path, zk, size=2, **{"quota.window.num": "2"}) as cluster,
    ):
        client = KazooClient(hosts=zk.connect_string)
        client.start(timeout=15)
        try:
            yield cluster, client
        finally:
            client.stop()
            client.close()


def _config(kazoo: KazooClient, path: str) -> dict[str, Any]:
    data, _ = kazoo.get(f"/config/{path}")
    return json.loads(data)


def _describe(port: int) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]:
    with RawClient(port) as c:
        r = c.request(DESCRIBE_CLIENT_QUOTAS, 1, {"components": [], "strict": False})
    assert r.error_code == 0, r
    return [
        (
            tuple((e.entity_type, e.entity_name) for e in entry.entity),
            {v.key: v.value for v in entry["values"]},
        )
        for entry in r.entries
    ]


def _throttle_ms(port: int, client_id: str) -> int:
    """The throttle time of a 20 KB produce from ``client_id`` (to a topic that need not exist:
    a request's record bytes count whatever its partitions answer)."""
    records = build_batch([Record(0, 0, None, b"x" * 20_000)])
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "nowhere", "partition_data": [{"index": 0, "records": records}]}],
    }
    with RawClient(port) as c:
        return c.recv(PRODUCE, 7, c.send(PRODUCE, 7, body, client_id=client_id)).throttle_time_ms


def test_quotas_live_in_zookeeper_and_reach_every_broker(zk_cluster: tuple[Cluster, KazooClient]) -> None:
    cluster, kazoo = zk_cluster
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    scram = {
        "version": 1,
        "config": {"SCRAM-SHA-512": "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"},
    }
    kazoo.create("/config/users/alice", json.dumps(scram).encode(), makepath=True)
    entries = [
        ([("user", "alice")], "producer_byte_rate", 1048576.0),
        ([("client-id", None)], "consumer_byte_rate", 2048.0),
        ([("user", "alice"), ("client-id", "app 1")], "request_percentage", 50.0),
    ]
    body = {
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": key, "value": value, "remove": False}],
            }
            for entity, key, value in entries
        ],
        "validate_only": False,
    }
    with RawClient(b1.port) as c:
        r = c.request(ALTER_CLIENT_QUOTAS, 1, body)
    assert [e.error_code for e in r.entries] == [0, 0, 0]

    alice = _config(kazoo, "users/alice")
    assert alice == {"version": 1, "config": {**scram["config"], "producer_byte_rate": "1048576"}}
    assert _config(kazoo, "clients/<default>") == {"version": 1, "config": {"consumer_byte_rate": "2048"}}
    assert _config(kazoo, "users/alice/clients/app%201") == {
        "version": 1,
        "config": {"request_percentage": "50.0"},
    }
    notes = [
        json.loads(kazoo.get(f"/config/changes/{n}")[0])
        for n in sorted(kazoo.get_children("/config/changes"))
    ]
    assert {n["entity_path"] for n in notes} >= {
        "users/alice",
        "clients/<default>",
        "users/alice/clients/app%201",
    }
    assert all(n["version"] == 2 for n in notes)

    expected = [
        ((("client-id", None),), {"consumer_byte_rate": 2048.0}),
        ((("user", "alice"),), {"producer_byte_rate": 1048576.0}),
        ((("user", "alice"), ("client-id", "app 1")), {"request_percentage": 50.0}),
    ]
    assert _describe(b2.port) == expected

    # as Kafka's kafka-configs writes a quota: the znode, then the notification
    assert _throttle_ms(b1.port, "slow") == 0 and _throttle_ms(b2.port, "slow") == 0
    kazoo.create(
        "/config/clients/slow", json.dumps({"version": 1, "config": {"producer_byte_rate": "1000"}}).encode()
    )
    kazoo.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": "clients/slow"}).encode(),
        sequence=True,
    )
    written = time.monotonic()
    wait_for(lambda: _throttle_ms(b1.port, "slow") > 0, PROPAGATION_S, "broker 1 to throttle client-id slow")
    wait_for(lambda: _throttle_ms(b2.port, "slow") > 0, PROPAGATION_S, "broker 2 to throttle client-id slow")
    assert time.monotonic() - written < PROPAGATION_S
    assert _throttle_ms(b2.port, "fast") == 0
