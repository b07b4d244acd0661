"""ACLs in ZooKeeper on a two-broker cluster (marker ``cluster``: `make test-cluster`).

ACLs created with confluent-kafka are written to ZooKeeper in Kafka's ZK-mode
layout (checked byte for byte with kazoo) and reach every broker through the
change notifications; a delete sent to the second broker reaches the first
(raw requests where the broker matters: librdkafka sends admin requests to
any broker it knows); ACLs written straight into ZooKeeper, as Kafka's own brokers and tools
write them, reach both; and two brokers adding ACLs to the same resource at
once both keep theirs (conditional writes, merged on a lost race).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kazoo.client import KazooClient

from tests.cluster.helpers import wait_for
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess, zookeeper_available
from tests.wire import RawClient

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.timeout(180),
    pytest.mark.skipif(not zookeeper_available(), reason="ZooKeeper not installed"),
]

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
PROPAGATION_S = 4.0  # under the 5 s periodic re-read: the watches must have done it

EVERYTHING = AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
)


@pytest.fixture
def zk_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, ZooKeeperProcess]]:
    with (
        ZooKeeperProcess(tmp_path / "zookeeper") as zk,
        Cluster(
            tmp_path,
            zk,
            size=2,
            **{
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                "super.users": "User:ANONYMOUS",  # the PLAINTEXT clients
            },
        ) as c,
    ):
        yield c, zk


@pytest.fixture
def kazoo(zk_cluster: tuple[Cluster, ZooKeeperProcess]) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_cluster[1].connect_string)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def seen(port: int) -> set[tuple[Any, ...]]:
    """Every ACL the broker on ``port`` answers DescribeAcls with: (type, name, pattern, principal, op, perm)."""
    with RawClient(port) as c:
        r = c.request(
            DESCRIBE_ACLS,
            3,
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": None,
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            },
        )
    assert r.error_code == 0, r
    return {
        (res.resource_type, res.resource_name, res.pattern_type, a.principal, a.operation, a.permission_type)
        for res in r.resources
        for a in res.acls
    }


def row(b: AclBinding) -> tuple[Any, ...]:
    return (
        b.restype.value,
        b.name,
        b.resource_pattern_type.value,
        b.principal,
        b.operation.value,
        b.permission_type.value,
    )


def test_acls_propagate_through_zookeeper(
    zk_cluster: tuple[Cluster, ZooKeeperProcess], kazoo: KazooClient
) -> None:
    cluster, _ = zk_cluster
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    orders = AclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    groups = AclBinding(
        ResourceType.GROUP,
        "app-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    deny = AclBinding(
        ResourceType.TOPIC,
        "orders",
        ResourcePatternType.LITERAL,
        "User:mallory",
        "10.0.0.66",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    admin1 = AdminClient({"bootstrap.servers": b1.bootstrap, "logger": QUIET})
    futures = admin1.create_acls([orders, groups, deny])
    for future in futures.values():
        assert future.result(30) is None
    expected = {row(orders), row(groups), row(deny)}
    for node in (1, 2):
        wait_for(lambda n=node: seen(cluster.brokers[n].port) == expected, PROPAGATION_S, f"broker {node}")
    admin2 = AdminClient({"bootstrap.servers": b2.bootstrap, "logger": QUIET})
    assert {row(b) for b in admin2.describe_acls(EVERYTHING).result(30)} == expected

    # Kafka's ZooKeeper layout and JSON, exactly
    data, _ = kazoo.get("/kafka-acl/Topic/orders")
    doc = json.loads(data)
    assert doc["version"] == 1 and sorted(doc["acls"], key=lambda a: a["principal"]) == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:mallory", "permissionType": "Deny", "operation": "All", "host": "10.0.0.66"},
    ]
    assert data.startswith(b'{"version":1,"acls":[{"principal":')  # compact, as Kafka writes it
    data, _ = kazoo.get("/kafka-acl-extended/prefixed/Group/app-")
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}'
    )
    literal_changes = sorted(kazoo.get_children("/kafka-acl-changes"))
    assert literal_changes and all(n.startswith("acl_changes_") and len(n) == 22 for n in literal_changes)
    assert {kazoo.get(f"/kafka-acl-changes/{n}")[0] for n in literal_changes} == {b"TOPIC:orders"}
    [prefixed_change] = kazoo.get_children("/kafka-acl-extended-changes")
    assert json.loads(kazoo.get(f"/kafka-acl-extended-changes/{prefixed_change}")[0]) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "app-",
        "patternType": "PREFIXED",
    }
    # the per-type znodes Kafka creates at start-up
    assert {"Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"} <= set(
        kazoo.get_children("/kafka-acl")
    )

    # deleted through broker 2 (a raw request: librdkafka sends admin requests to any broker):
    # gone on broker 1, and the znode is removed
    with RawClient(b2.port) as c:
        r = c.request(
            DELETE_ACLS,
            3,
            {
                "filters": [
                    {
                        "resource_type_filter": 2,
                        "resource_name_filter": "orders",
                        "pattern_type_filter": 1,
                        "principal_filter": None,
                        "host_filter": None,
                        "operation": 1,
                        "permission_type": 1,
                    }
                ]
            },
        )
    [result] = r.filter_results
    assert result.error_code == 0
    assert {(m.principal, m.operation) for m in result.matching_acls} == {
        ("User:alice", 3),
        ("User:mallory", 2),
    }
    assert seen(b2.port) == {row(groups)}
    wait_for(
        lambda: seen(b1.port) == {row(groups)}, PROPAGATION_S, "broker 1 to drop the ACLs deleted on broker 2"
    )
    assert kazoo.exists("/kafka-acl/Topic/orders") is None

    # and through confluent-kafka's DeleteAcls
    deleted = admin2.delete_acls([EVERYTHING])
    assert [{row(b) for b in f.result(30)} for f in deleted.values()] == [{row(groups)}]
    for node in (1, 2):
        wait_for(lambda n=node: seen(cluster.brokers[n].port) == set(), PROPAGATION_S, f"broker {node} empty")
    assert kazoo.exists("/kafka-acl-extended/prefixed/Group/app-") is None


def test_acls_written_by_kafka_into_zookeeper_reach_both_brokers(
    zk_cluster: tuple[Cluster, ZooKeeperProcess], kazoo: KazooClient
) -> None:
    cluster, _ = zk_cluster
    acls = b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Allow","operation":"Write","host":"*"}]}'
    kazoo.create("/kafka-acl/Topic/from-kafka", acls, makepath=True)
    kazoo.create("/kafka-acl-changes/acl_changes_", b"TOPIC:from-kafka", sequence=True, makepath=True)
    want = {(2, "from-kafka", 3, "User:bob", 4, 3)}
    for node in (1, 2):
        wait_for(lambda n=node: seen(cluster.brokers[n].port) == want, PROPAGATION_S, f"broker {node}")


def test_concurrent_creates_on_one_resource_are_merged(zk_cluster: tuple[Cluster, ZooKeeperProcess]) -> None:
    cluster, _ = zk_cluster
    users = [f"User:u{i}" for i in range(20)]
    errors: list[Any] = []

    def create(node: int, mine: list[str]) -> None:
        with RawClient(cluster.brokers[node].port) as c:
            for principal in mine:  # one request per ACL: many conditional writes racing the other broker
                r = c.request(
                    CREATE_ACLS,
                    3,
                    {
                        "creations": [
                            {
                                "resource_type": 2,
                                "resource_name": "shared",
                                "resource_pattern_type": 3,
                                "principal": principal,
                                "host": "*",
                                "operation": 3,
                                "permission_type": 3,
                            }
                        ]
                    },
                )
                errors.extend(x.error_code for x in r.results if x.error_code)

    threads = [threading.Thread(target=create, args=(n, users[n - 1 :: 2])) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    want = {(2, "shared", 3, u, 3, 3) for u in users}
    for node in (1, 2):
        wait_for(lambda n=node: seen(cluster.brokers[n].port) == want, PROPAGATION_S, f"broker {node}")

    # a restarted broker reads them all back from ZooKeeper
    assert cluster.brokers[2].stop() == 0
    cluster.restart(2)
    wait_for(lambda: seen(cluster.brokers[2].port) == want, PROPAGATION_S, "the restarted broker 2")
