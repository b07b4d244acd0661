"""CreateAcls, DescribeAcls and DeleteAcls on a single broker: kafka-python 3.0's KafkaAdminClient
(which sends v3) and raw requests for the cases clients do not send (v0, UNKNOWN codes).

The broker runs with ``authorizer.class.name`` set; ``super.users=User:ANONYMOUS`` makes the
PLAINTEXT clients (principal User:ANONYMOUS) allowed everything, except in the authorization test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import InvalidRequestError, NoError, SecurityDisabledError

from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
LITERAL, PREFIXED = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED
EVERYTHING = ACLFilter(
    None,
    None,
    ACLOperation.ANY,
    ACLPermissionType.ANY,
    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
)


def secured(data_dir: Path, super_users: str = "User:ANONYMOUS") -> BrokerProcess:
    return BrokerProcess(
        data_dir,
        env={"MINIKAFKA_AUTHORIZER_CLASS_NAME": AUTHORIZER, "MINIKAFKA_SUPER_USERS": super_users},
    )


@pytest.fixture
def abroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with the authorizer on, User:ANONYMOUS a super user."""
    proc = secured(tmp_path / "data").start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


def acl(
    name: str,
    principal: str = "User:alice",
    op: ACLOperation = ACLOperation.READ,
    perm: ACLPermissionType = ACLPermissionType.ALLOW,
    kind: ACLResourcePatternType = LITERAL,
    rtype: ResourceType = ResourceType.TOPIC,
    host: str = "*",
) -> ACL:
    return ACL(principal, host, op, perm, ResourcePattern(rtype, name, kind))


def key(a: ACL) -> tuple[Any, ...]:
    p = a.resource_pattern
    return (
        p.resource_type,
        p.resource_name,
        p.pattern_type,
        a.principal,
        a.host,
        a.operation,
        a.permission_type,
    )


def keys(acls: list[ACL]) -> set[tuple[Any, ...]]:
    return {key(a) for a in acls}


def test_kafka_python_create_describe_delete_and_restart(abroker: BrokerProcess) -> None:
    orders = acl("orders")
    orders_bob = acl("orders", "User:bob", ACLOperation.WRITE, host="10.0.0.9")
    app_groups = acl(
        "app-", op=ACLOperation.ALL, perm=ACLPermissionType.DENY, kind=PREFIXED, rtype=ResourceType.GROUP
    )
    cluster = acl("kafka-cluster", "User:ops", ACLOperation.ALTER, rtype=ResourceType.CLUSTER)
    wildcard = acl("*", "User:*", ACLOperation.DESCRIBE)
    good = [orders, orders_bob, app_groups, cluster, wildcard]

    admin = KafkaAdminClient(bootstrap_servers=abroker.bootstrap)
    try:
        result = admin.create_acls([*good, acl("other", rtype=ResourceType.CLUSTER), acl("")])
        assert keys(result["succeeded"]) == keys(good)
        assert result["failed"] == [InvalidRequestError, InvalidRequestError]

        found, error = admin.describe_acls(EVERYTHING)
        assert error is NoError and keys(found) == keys(good)
        by_name = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, "orders", LITERAL),
        )
        assert keys(admin.describe_acls(by_name)[0]) == keys([orders, orders_bob])
        # MATCH: what applies to a topic "orders": its literal ACLs and the wildcard's
        match = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH),
        )
        assert keys(admin.describe_acls(match)[0]) == keys([orders, orders_bob, wildcard])
        applies_to_group = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.GROUP, "app-eu", ACLResourcePatternType.MATCH),
        )
        assert keys(admin.describe_acls(applies_to_group)[0]) == keys([app_groups])

        deleted = admin.delete_acls(
            [
                ACLFilter(
                    "User:bob",
                    None,
                    ACLOperation.ANY,
                    ACLPermissionType.ANY,
                    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                ),
                ACLFilter(
                    None,
                    None,
                    ACLOperation.ANY,
                    ACLPermissionType.DENY,
                    ResourcePatternFilter(ResourceType.GROUP, "app-", PREFIXED),
                ),
                ACLFilter(
                    "User:nobody",
                    None,
                    ACLOperation.ANY,
                    ACLPermissionType.ANY,
                    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                ),
            ]
        )
        assert [(keys(matched), err) for _, matched, err in deleted] == [
            (keys([orders_bob]), NoError),
            (keys([app_groups]), NoError),
            (set(), NoError),
        ]
        assert keys(admin.describe_acls(EVERYTHING)[0]) == keys([orders, cluster, wildcard])
    finally:
        admin.close()

    assert abroker.stop() == 0, abroker.log()
    stored = json.loads((abroker.data_dir / "__minikafka_acls.json").read_text())["acls"]
    assert {(r["resourceType"], r["name"], r["principal"]) for r in stored} == {
        ("Topic", "orders", "User:alice"),
        ("Cluster", "kafka-cluster", "User:ops"),
        ("Topic", "*", "User:*"),
    }
    abroker.start()  # same data dir and port: the ACLs are read back
    admin = KafkaAdminClient(bootstrap_servers=abroker.bootstrap)
    try:
        assert keys(admin.describe_acls(EVERYTHING)[0]) == keys([orders, cluster, wildcard])
    finally:
        admin.close()


def test_security_disabled_without_an_authorizer(broker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(EVERYTHING)
        assert admin.create_acls([acl("orders"), acl("x")])["failed"] == [SecurityDisabledError] * 2
        [(_, matched, error)] = admin.delete_acls([EVERYTHING])
        assert (matched, error) == ([], SecurityDisabledError)
    finally:
        admin.close()
    with RawClient(broker.port) as c:
        r = c.request(DESCRIBE_ACLS, 1, describe_filter())
        assert (r.error_code, r.error_message, r.resources) == (
            ErrorCode.SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
            [],
        )
        r = c.request(CREATE_ACLS, 1, {"creations": [creation("orders")]})
        assert [(x.error_code, x.error_message) for x in r.results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        ]
        r = c.request(DELETE_ACLS, 1, {"filters": [describe_filter(), describe_filter()]})
        assert [(x.error_code, x.error_message) for x in r.filter_results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        ] * 2


def describe_filter(**fields: Any) -> dict[str, Any]:
    """A DescribeAcls request (or DeleteAcls filter) selecting everything, with ``fields`` changed."""
    return {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
        **fields,
    }


def creation(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "resource_type": 2,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
        **fields,
    }


def described(r: Any) -> set[tuple[Any, ...]]:
    return {
        (res.resource_type, res.resource_name, res.get("pattern_type", 3), a.principal, a.operation)
        for res in r.resources
        for a in res.acls
    }


def test_unknown_elements_and_version_0(abroker: BrokerProcess) -> None:
    with RawClient(abroker.port) as c:
        # UNKNOWN (0) or out-of-range codes: the whole request is refused
        r = c.request(CREATE_ACLS, 2, {"creations": [creation("a"), creation("b", operation=0)]})
        assert [x.error_code for x in r.results] == [ErrorCode.INVALID_REQUEST] * 2
        r = c.request(CREATE_ACLS, 3, {"creations": [creation("a", resource_type=99)]})
        assert [x.error_code for x in r.results] == [ErrorCode.INVALID_REQUEST]
        for fields in (
            {"resource_type_filter": 0},
            {"pattern_type_filter": 0},
            {"operation": 0},
            {"permission_type": 42},
        ):
            r = c.request(DESCRIBE_ACLS, 3, describe_filter(**fields))
            assert r.error_code == ErrorCode.INVALID_REQUEST, fields
            r = c.request(DELETE_ACLS, 3, {"filters": [describe_filter(), describe_filter(**fields)]})
            assert [x.error_code for x in r.filter_results] == [ErrorCode.INVALID_REQUEST] * 2, fields
        r = c.request(DESCRIBE_ACLS, 3, describe_filter())
        assert (r.error_code, r.resources) == (0, [])  # nothing was created by the refused requests

        # per creation: Kafka's checks, each with its message
        r = c.request(
            CREATE_ACLS,
            3,
            {
                "creations": [
                    creation("ok"),
                    creation("x", resource_pattern_type=1),  # ANY is not a pattern
                    creation("x", principal="alice"),
                    creation("x", operation=1),
                    creation("x", resource_type=4),  # CLUSTER must be kafka-cluster
                ]
            },
        )
        assert [(x.error_code, x.error_message) for x in r.results] == [
            (0, None),
            (ErrorCode.INVALID_REQUEST, "Invalid patternType ANY"),
            (
                ErrorCode.INVALID_REQUEST,
                "expected a string in format principalType:principalName but got alice",
            ),
            (ErrorCode.INVALID_REQUEST, "Invalid operation ANY"),
            (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        ]

        # v0 has no pattern type: LITERAL both ways
        r = c.request(CREATE_ACLS, 0, {"creations": [creation("v0", resource_pattern_type=4)]})
        assert [x.error_code for x in r.results] == [0]
        r = c.request(CREATE_ACLS, 1, {"creations": [creation("pre", resource_pattern_type=4)]})
        assert [x.error_code for x in r.results] == [0]
        r = c.request(DESCRIBE_ACLS, 0, describe_filter())
        assert described(r) == {(2, "ok", 3, "User:alice", 3), (2, "v0", 3, "User:alice", 3)}
        r = c.request(DESCRIBE_ACLS, 1, describe_filter())
        assert (2, "pre", 4, "User:alice", 3) in described(r)
        r = c.request(DELETE_ACLS, 0, {"filters": [describe_filter()]})
        assert {m.resource_name for m in r.filter_results[0].matching_acls} == {"ok", "v0"}
        r = c.request(DESCRIBE_ACLS, 2, describe_filter())
        assert described(r) == {(2, "pre", 4, "User:alice", 3)}  # the PREFIXED one is not a v0 ACL

        # one entry per resource pattern, each listing its ACLs
        c.request(
            CREATE_ACLS,
            3,
            {"creations": [creation("pre", resource_pattern_type=4, principal=f"User:{u}") for u in "xyz"]},
        )
        r = c.request(DESCRIBE_ACLS, 3, describe_filter())
        assert [(res.resource_name, len(res.acls)) for res in r.resources] == [("pre", 4)]


def test_cluster_authorization(tmp_path: Path) -> None:
    """Without super users the ACLs decide: DESCRIBE on the cluster lets DescribeAcls through, not the others."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "__minikafka_acls.json").write_text(
        json.dumps(
            {
                "version": 1,
                "acls": [
                    {
                        "resourceType": "Cluster",
                        "name": "kafka-cluster",
                        "patternType": "Literal",
                        "principal": "User:ANONYMOUS",
                        "host": "*",
                        "operation": "Describe",
                        "permissionType": "Allow",
                    }
                ],
            }
        )
    )
    proc = secured(data, super_users="").start()
    try:
        with RawClient(proc.port) as c:
            r = c.request(DESCRIBE_ACLS, 3, describe_filter())
            assert r.error_code == 0 and described(r) == {(4, "kafka-cluster", 3, "User:ANONYMOUS", 8)}
            r = c.request(CREATE_ACLS, 3, {"creations": [creation("a"), creation("b")]})
            assert [x.error_code for x in r.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
            assert "is not authorized" in r.results[0].error_message
            r = c.request(DELETE_ACLS, 3, {"filters": [describe_filter()]})
            assert [x.error_code for x in r.filter_results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
            r = c.request(DESCRIBE_ACLS, 3, describe_filter())
            assert len(described(r)) == 1  # the refused delete removed nothing
    finally:
        assert proc.stop() == 0, proc.log()


def test_corrupt_acl_file_stops_the_broker_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "__minikafka_acls.json").write_text("{not json")
    proc = secured(data)
    with pytest.raises(RuntimeError, match="corrupt ACL file"):
        proc.start()
    proc._log.close()
