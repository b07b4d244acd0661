"""The admin client's ACL calls against a real broker with Kafka's ACL authorizer.

One broker for the module: a PLAINTEXT listener (User:ANONYMOUS, a super user,
manages ACLs) and a SASL_PLAINTEXT PLAIN listener where alice and bob log in
(no rights but those the tests grant). A broker without an authorizer answers
SECURITY_DISABLED.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from client import AdminClient, AIOAdminClient, KafkaResponseError
from client.admin_acls import (
    ANY_ACL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.timeout(60)

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
RT, PT, Op = ResourceType, PatternType, AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def start_acl_broker(directory: Path) -> tuple[BrokerProcess, str]:
    """A started broker with the ACL authorizer: PLAINTEXT (``.bootstrap``, a super user) and a
    SASL_PLAINTEXT PLAIN listener for `USERS`; the latter's address."""
    plain, sasl = free_port(), free_port()
    jaas = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    config = directory / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};\n"
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
        "super.users=User:ANONYMOUS\n"
    )
    proc = BrokerProcess(directory / "data", port=plain, extra=["--config", str(config)]).start()
    return proc, f"127.0.0.1:{sasl}"


def plain_login(sasl: str, user: str) -> dict[str, str]:
    """Client config logging in as ``user`` on the SASL_PLAINTEXT PLAIN listener ``sasl``."""
    return {
        "bootstrap.servers": sasl,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_acl_broker(tmp_path_factory.mktemp("acls"))
    try:
        yield proc, sasl
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


@pytest.fixture
def admin(brokers: tuple[BrokerProcess, str]) -> Iterator[AdminClient]:
    with AdminClient(bootstrap_servers=brokers[0].bootstrap) as a:
        yield a


def acl(
    rtype: ResourceType,
    name: str,
    who: str,
    op: AclOperation,
    permission: AclPermissionType = ALLOW,
    pattern: PatternType = PT.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(who, host, op, permission))


def code(error: object) -> ErrorCode | int | None:
    return error.code if isinstance(error, KafkaResponseError) else None


def test_model_mirrors_kafka() -> None:
    assert AclOperation.from_name("IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert AclOperation.from_name("idempotent_write") is Op.IDEMPOTENT_WRITE
    assert AclOperation.from_name("READ") is Op.READ and Op.DESCRIBE_CONFIGS.kafka_name == "DescribeConfigs"
    assert RT.TRANSACTIONAL_ID.kafka_name == "TransactionalId" and int(RT.TRANSACTIONAL_ID) == 5
    with pytest.raises(ValueError, match="unknown AclOperation"):
        AclOperation.from_name("Unknown")
    assert AclOperation(99) is Op.UNKNOWN  # an unknown wire code
    # Ints are taken as the enums; ANY (and MATCH) never make a binding, as in Kafka.
    assert ResourcePattern(2, "t", 4) == ResourcePattern(RT.TOPIC, "t", PT.PREFIXED)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="resourceType must not be ANY"):
        ResourcePattern(RT.ANY, "t")
    with pytest.raises(ValueError, match="patternType must not be MATCH"):
        ResourcePattern(RT.TOPIC, "t", PT.MATCH)
    with pytest.raises(ValueError, match="operation must not be ANY"):
        AccessControlEntry("User:a", "*", Op.ANY, ALLOW)
    with pytest.raises(ValueError, match="permissionType must not be ANY"):
        AccessControlEntry("User:a", "*", Op.READ, AclPermissionType.ANY)
    b = acl(RT.GROUP, "g", "User:a", Op.READ, DENY, host="h")
    assert b.to_filter() == AclBindingFilter(RT.GROUP, "g", PT.LITERAL, "User:a", "h", Op.READ, DENY)
    assert AclBindingFilter(RT.ANY, None, PT.ANY, None, None, Op.ANY, AclPermissionType.ANY) == ANY_ACL


def test_create_and_describe_with_filters(admin: AdminClient) -> None:
    alice_read = acl(RT.TOPIC, "orders", "User:alice", Op.READ)
    bob_denied = acl(RT.TOPIC, "orders", "User:bob", Op.WRITE, DENY, host="10.0.0.1")
    prefixed = acl(RT.TOPIC, "ord", "User:alice", Op.DESCRIBE, pattern=PT.PREFIXED)
    wildcard = acl(RT.TOPIC, "*", "User:*", Op.DESCRIBE)
    group = acl(RT.GROUP, "orders", "User:alice", Op.READ)
    other = acl(RT.TOPIC, "other", "User:alice", Op.READ)
    made = [alice_read, bob_denied, prefixed, wildcard, group, other]
    assert admin.create_acls(made) == [None] * 6
    assert admin.create_acls([alice_read]) == [None]  # an existing ACL: no error, no copy

    def described(*args: object, **kwargs: object) -> set[AclBinding]:
        found = admin.describe_acls(AclBindingFilter(*args, **kwargs))  # type: ignore[arg-type]
        assert len(found) == len(set(found))
        return set(found)

    assert described(RT.TOPIC, "orders", PT.LITERAL) == {alice_read, bob_denied}
    assert described(RT.TOPIC, "ord", PT.PREFIXED) == {prefixed}
    assert described(RT.TOPIC, "ord", PT.LITERAL) == set()
    assert described(RT.TOPIC, "orders", PT.ANY) == {alice_read, bob_denied}  # ANY: this exact name
    # MATCH: every pattern that applies to the topic "orders".
    assert described(RT.TOPIC, "orders", PT.MATCH) == {alice_read, bob_denied, prefixed, wildcard}
    assert described(RT.ANY, "orders", PT.LITERAL) == {alice_read, bob_denied, group}
    assert described(RT.ANY, "orders", PT.MATCH, principal="User:bob") == {bob_denied}
    assert described(host="10.0.0.1", permission_type=DENY) == {bob_denied}
    assert described(RT.ANY, "orders", PT.MATCH, operation=Op.READ) == {alice_read, group}
    assert set(made) <= described()
    assert set(made) <= set(admin.describe_acls())  # the default filter: every ACL


def test_create_answers_per_acl(admin: AdminClient) -> None:
    good = acl(RT.TOPIC, "per-acl", "User:alice", Op.WRITE)
    bad_cluster = acl(RT.CLUSTER, "not-the-cluster", "User:alice", Op.ALTER)
    no_type = acl(RT.TOPIC, "per-acl", "alice", Op.READ)
    unknown = acl(RT.TOPIC, "per-acl", "User:alice", Op.UNKNOWN)
    results = admin.create_acls([good, bad_cluster, no_type, unknown, good])
    assert results[0] is None and results[4] is None
    assert code(results[1]) == ErrorCode.INVALID_REQUEST
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in str(results[1])
    assert code(results[2]) == ErrorCode.INVALID_REQUEST
    assert "principalType:principalName" in str(results[2])
    assert code(results[3]) == ErrorCode.INVALID_REQUEST  # refused here, never sent
    assert "Operation is UNKNOWN" in str(results[3])
    assert admin.describe_acls(AclBindingFilter(RT.ANY, "per-acl")) == [good]
    assert admin.describe_acls(AclBindingFilter(RT.CLUSTER)) == []
    with pytest.raises(KafkaResponseError, match="UNKNOWN elements") as info:
        admin.describe_acls(AclBindingFilter(RT.UNKNOWN))
    assert info.value.code == ErrorCode.INVALID_REQUEST


def test_delete(admin: AdminClient) -> None:
    a = acl(RT.TOPIC, "del-me", "User:alice", Op.READ)
    b = acl(RT.TOPIC, "del-me", "User:bob", Op.READ)
    c = acl(RT.TOPIC, "del-", "User:bob", Op.WRITE, pattern=PT.PREFIXED)
    d = acl(RT.GROUP, "del-me", "User:bob", Op.READ)
    assert admin.create_acls([a, b, c, d]) == [None] * 4
    results = admin.delete_acls(
        [
            a.to_filter(),  # exactly a
            AclBindingFilter(RT.TOPIC, "del-me", PT.LITERAL),  # a (reported under the first filter) and b
            AclBindingFilter(RT.TOPIC, "nothing-here"),
            AclBindingFilter(RT.TOPIC, "x", operation=Op.UNKNOWN),
        ]
    )
    assert results[0] == [a] and results[1] == [b] and results[2] == []
    assert code(results[3]) == ErrorCode.INVALID_REQUEST
    # (User:bob only: another test's ACLs on the wildcard topic "*" apply to "del-me" too.)
    bobs_match = AclBindingFilter(RT.TOPIC, "del-me", PT.MATCH, "User:bob")
    assert admin.describe_acls(bobs_match) == [c]
    # MATCH removes every pattern applying to the name; the group's ACL is another resource type.
    assert admin.delete_acls([bobs_match]) == [[c]]
    assert admin.delete_acls([a.to_filter()]) == [[]]
    assert admin.describe_acls(AclBindingFilter(RT.ANY, "del-me")) == [d]
    assert admin.delete_acls([AclBindingFilter(principal="User:bob", resource_type=RT.GROUP)]) == [[d]]


async def test_async_client(brokers: tuple[BrokerProcess, str]) -> None:
    binding = acl(RT.TRANSACTIONAL_ID, "tx-", "User:alice", Op.WRITE, pattern=PT.PREFIXED)
    async with AIOAdminClient(bootstrap_servers=brokers[0].bootstrap) as admin:
        assert await admin.create_acls([binding]) == [None]
        assert await admin.describe_acls(AclBindingFilter(RT.TRANSACTIONAL_ID, "tx-1", PT.MATCH)) == [binding]
        assert await admin.delete_acls([binding.to_filter()]) == [[binding]]
        assert await admin.describe_acls(AclBindingFilter(RT.TRANSACTIONAL_ID)) == []


def test_acls_govern_the_acl_apis(admin: AdminClient, brokers: tuple[BrokerProcess, str]) -> None:
    """A principal without ALTER/DESCRIBE on the cluster may not manage ACLs; granted them, it may."""
    mine = acl(RT.TOPIC, "bobs", "User:bob", Op.READ)
    with AdminClient(plain_login(brokers[1], "bob")) as bob:
        refused = bob.create_acls([mine])
        assert code(refused[0]) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        with pytest.raises(KafkaResponseError) as info:
            bob.describe_acls()
        assert info.value.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert code(bob.delete_acls([mine.to_filter()])[0]) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        grants = [acl(RT.CLUSTER, "kafka-cluster", "User:bob", op) for op in (Op.ALTER, Op.DESCRIBE)]
        assert admin.create_acls(grants) == [None, None]
        try:
            assert bob.create_acls([mine]) == [None]
            assert bob.describe_acls(AclBindingFilter(RT.TOPIC, "bobs")) == [mine]
            assert bob.delete_acls([mine.to_filter()]) == [[mine]]
        finally:
            admin.delete_acls([g.to_filter() for g in grants])


def test_security_disabled_without_an_authorizer(broker: BrokerProcess) -> None:
    binding = acl(RT.TOPIC, "t", "User:alice", Op.READ)
    with AdminClient(bootstrap_servers=broker.bootstrap) as admin:
        with pytest.raises(KafkaResponseError, match="No Authorizer is configured on the broker") as info:
            admin.describe_acls()
        assert info.value.code == ErrorCode.SECURITY_DISABLED
        created = admin.create_acls([binding])
        assert code(created[0]) == ErrorCode.SECURITY_DISABLED
        assert "No Authorizer is configured." in str(created[0])
        assert code(admin.delete_acls([ANY_ACL])[0]) == ErrorCode.SECURITY_DISABLED
