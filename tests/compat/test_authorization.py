"""Authorization end to end: one broker with Kafka's ACL authorizer, clients over SASL/PLAIN.

The broker has a PLAINTEXT listener (principal User:ANONYMOUS, a super user, used for setup)
and a SASL_PLAINTEXT one where admin (a super user), alice, bob and carol log in. ACLs are
pre-loaded from the data directory's ACL file. For each API family a principal with the right
ACL succeeds and one without gets Kafka's AUTHORIZATION_FAILED code, through confluent-kafka
(librdkafka), kafka-python and, where a client hides the code, raw requests: DENY beats ALLOW,
PREFIXED patterns and ``User:*`` apply, super users bypass everything, Metadata lists only
the topics the principal may describe.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AclOperation as CAclOperation
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from broker.security.acl_store import FILE, LocalAclStore
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess, free_port
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
TOPICS = ("t-alice", "t-deny", "pre-x", "t-public", "t-secret")
Op, RT = AclOperation, ResourceType


def acl(
    rtype: ResourceType,
    name: str,
    who: str,
    op: AclOperation,
    deny: bool = False,
    prefixed: bool = False,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, PatternType.PREFIXED if prefixed else PatternType.LITERAL),
        AccessControlEntry(who, "*", op, AclPermissionType.DENY if deny else AclPermissionType.ALLOW),
    )


ACLS = [
    acl(RT.TOPIC, "t-alice", "User:alice", Op.READ),
    acl(RT.TOPIC, "t-alice", "User:alice", Op.WRITE),
    acl(RT.TOPIC, "t-alice", "User:alice", Op.DESCRIBE_CONFIGS),
    acl(RT.TOPIC, "pre-", "User:alice", Op.ALL, prefixed=True),
    acl(RT.TOPIC, "new-", "User:alice", Op.CREATE, prefixed=True),
    acl(RT.TOPIC, "new-", "User:alice", Op.DELETE, prefixed=True),
    acl(RT.TOPIC, "t-deny", "User:alice", Op.ALL),
    acl(RT.TOPIC, "t-deny", "User:bob", Op.ALL),
    acl(RT.TOPIC, "t-deny", "User:alice", Op.WRITE, deny=True),  # DENY beats the ALLOW ALL
    acl(RT.TOPIC, "t-public", "User:*", Op.READ),
    acl(RT.GROUP, "g-alice", "User:alice", Op.READ),
    acl(RT.GROUP, "g-public", "User:*", Op.READ),
    acl(RT.TRANSACTIONAL_ID, "tx-alice", "User:alice", Op.WRITE),
]


@dataclass
class Secured:
    proc: BrokerProcess
    sasl_port: int

    @property
    def plain(self) -> str:
        return self.proc.bootstrap

    def conf(self, user: str, **extra: Any) -> dict[str, Any]:
        return {
            "bootstrap.servers": f"127.0.0.1:{self.sasl_port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
            **extra,
        }

    def raw(self, user: str) -> RawClient:
        """A raw client logged in as ``user`` (SaslHandshake v1 + SaslAuthenticate v2, PLAIN)."""
        c = RawClient(self.sasl_port)
        assert c.request(17, 1, {"mechanism": "PLAIN"}).error_code == 0
        token = b"\0" + user.encode() + b"\0" + USERS[user].encode()
        assert c.request(36, 2, {"auth_bytes": token}).error_code == 0
        return c


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("authz")
    data = root / "data"
    data.mkdir()
    LocalAclStore(data / FILE).save(ACLS)
    proc = BrokerProcess(data)
    sasl_port = free_port()
    jaas = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    config: Path = root / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{proc.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
        "super.users=User:admin;User:ANONYMOUS\n"
        "group.initial.rebalance.delay.ms=0\n"
    )
    proc.extra = ["--config", str(config)]
    proc.start()
    try:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": proc.bootstrap})
        for t in TOPICS:
            producer.produce(t, b"seed")
        assert producer.flush(30) == 0
        yield Secured(proc, sasl_port)
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()[-5000:]}"


def _produce(secured: Secured, user: str, topic: str, **extra: Any) -> int | None:
    """Produce one record as ``user``; None on success, else the error code it failed with."""
    errors: list[KafkaError] = []
    producer = Producer(
        secured.conf(
            user,
            **{"enable.idempotence": False, "message.timeout.ms": 10000, "error_cb": errors.append, **extra},
        )
    )
    delivered: list[KafkaError | None] = []
    try:
        producer.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(15)
    except (KafkaException, SystemError) as exc:
        # A fatal error (an idempotent producer refused a producer id) surfaces from whichever
        # call serves the callbacks: produce() when the refusal is quick, as SystemError then.
        fatal = [e for e in errors if e.fatal()]
        if fatal:
            return fatal[0].code()
        if isinstance(exc, KafkaException):
            return exc.args[0].code()
        raise
    assert delivered, f"no delivery report for {user} -> {topic}: {errors}"
    err = delivered[0]
    if err is not None and err.code() == KafkaError._FATAL:
        fatal = [e for e in errors if e.fatal()]
        return fatal[0].code() if fatal else err.code()
    return None if err is None else err.code()


def test_produce(secured: Secured) -> None:
    assert _produce(secured, "alice", "t-alice") is None
    assert _produce(secured, "bob", "t-alice") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce(secured, "alice", "t-deny") == KafkaError.TOPIC_AUTHORIZATION_FAILED  # DENY wins
    assert _produce(secured, "bob", "t-deny") is None
    assert _produce(secured, "alice", "pre-x") is None  # PREFIXED "pre-"
    assert _produce(secured, "bob", "t-public") == KafkaError.TOPIC_AUTHORIZATION_FAILED  # User:* READ only
    assert _produce(secured, "admin", "t-secret") is None  # super user


def test_produce_wire_codes(secured: Secured) -> None:
    """The Produce API itself (clients stop earlier, at Metadata): per topic, and a transactional
    batch without WRITE on its transactional id fails the whole request."""

    def body(txn_id: str | None, records: bytes, *topics: str) -> dict[str, Any]:
        return {
            "transactional_id": txn_id,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": t, "partition_data": [{"index": 0, "records": records}]} for t in topics],
        }

    plain = build_batch([Record(0, 0, None, b"x")])
    with secured.raw("bob") as c:
        r = c.request(0, 9, body(None, plain, "t-alice", "t-deny"))
        codes = {t.name: t.partition_responses[0].error_code for t in r.responses}
        assert codes == {"t-alice": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "t-deny": 0}
        txn = build_batch([Record(0, 0, None, b"x")], producer_id=1, producer_epoch=0, is_transactional=True)
        for txn_id in (None, "tx-alice"):
            r = c.request(0, 9, body(txn_id, txn, "t-deny"))
            part = r.responses[0].partition_responses[0]
            assert part.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert part.error_message == "Transactional Id authorization failed."


def test_idempotent_produce(secured: Secured) -> None:
    assert _produce(secured, "alice", "t-alice", **{"enable.idempotence": True}) is None
    # carol may WRITE no topic and lacks IDEMPOTENT_WRITE: InitProducerId is refused
    assert (
        _produce(secured, "carol", "t-public", **{"enable.idempotence": True})
        == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    )
    body = {
        "transactional_id": None,
        "transaction_timeout_ms": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    for user, code in (("carol", ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("bob", 0), ("admin", 0)):
        with secured.raw(user) as c:
            assert c.request(22, 4, body).error_code == code, user  # bob: WRITE on t-deny suffices


def _consume_error(secured: Secured, user: str, group: str, topic: str) -> int | None:
    """Subscribe as ``user`` in ``group``; None once a record arrives, else the first error's code."""
    consumer = Consumer(
        secured.conf(
            user,
            **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False},
        )
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None:
                return None
            return msg.error().code()
        raise AssertionError(f"{user}: nothing consumed from {topic} and no error")
    finally:
        consumer.close()


def test_consume(secured: Secured) -> None:
    assert _consume_error(secured, "alice", "g-alice", "t-alice") is None
    assert _consume_error(secured, "bob", "g-public", "t-public") is None  # User:* READ on both
    assert _consume_error(secured, "bob", "g-public", "t-alice") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _consume_error(secured, "carol", "g-alice", "t-public") == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_fetch_wire_codes(secured: Secured) -> None:
    def body(replica_id: int, *topics: str) -> dict[str, Any]:
        partition = {
            "partition": 0,
            "current_leader_epoch": -1,
            "fetch_offset": 0,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        return {
            "replica_id": replica_id,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [{"topic": t, "partitions": [partition]} for t in topics],
            "forgotten_topics_data": [],
        }

    def codes(r: Any) -> dict[str, int]:
        return {t.topic: t.partitions[0].error_code for t in r.responses}

    with secured.raw("bob") as c:
        r = c.request(1, 12, body(-1, "t-public", "t-alice"))
        assert codes(r) == {"t-public": 0, "t-alice": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert r.responses[0].partitions[0].records  # t-public's seed record
        # a follower fetch needs CLUSTER_ACTION: every partition is refused
        r = c.request(1, 12, body(1, "t-public"))
        assert codes(r) == {"t-public": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        r = c.request(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": t,
                        "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
                    }
                    for t in ("t-public", "t-secret")
                ],
            },
        )
        assert {t.name: t.partitions[0].error_code for t in r.topics} == {
            "t-public": 0,
            "t-secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }


def test_group_offsets(secured: Secured) -> None:
    consumer = Consumer(secured.conf("alice", **{"group.id": "g-alice", "enable.auto.commit": False}))
    try:
        consumer.commit(offsets=[CTopicPartition("t-alice", 0, 1)], asynchronous=False)
        committed = consumer.committed([CTopicPartition("t-alice", 0)], timeout=10)
        assert committed[0].offset == 1
    finally:
        consumer.close()

    def commit(group: str, *topics: str) -> dict[str, int]:
        r = c.request(
            8,
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
                    {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1}]} for t in topics
                ],
            },
        )
        return {t.name: t.partitions[0].error_code for t in r.topics}

    with secured.raw("admin") as c:
        assert commit("g-alice", "t-secret") == {"t-secret": 0}
    with secured.raw("alice") as c:
        assert commit("g-alice", "t-alice", "t-secret") == {
            "t-alice": 0,
            "t-secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }
        assert commit("g-public", "t-alice") == {"t-alice": 0}  # User:* READ on g-public
        # alice may not describe t-secret: the all-topics form leaves its offsets out
        r = c.request(9, 8, {"groups": [{"group_id": "g-alice", "topics": None}], "require_stable": False})
        assert r.groups[0].error_code == 0
        assert [t.name for t in r.groups[0].topics] == ["t-alice"]
        r = c.request(
            9,
            8,
            {
                "groups": [
                    {"group_id": "g-alice", "topics": [{"name": "t-secret", "partition_indexes": [0]}]}
                ],
                "require_stable": False,
            },
        )
        assert r.groups[0].topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with secured.raw("bob") as c:
        assert commit("g-alice", "t-deny") == {"t-deny": ErrorCode.GROUP_AUTHORIZATION_FAILED}
        r = c.request(9, 8, {"groups": [{"group_id": "g-alice", "topics": None}], "require_stable": False})
        assert r.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = c.request(10, 4, {"key_type": 0, "coordinator_keys": ["g-alice", "g-public"]})
        assert [k.error_code for k in r.coordinators] == [ErrorCode.GROUP_AUTHORIZATION_FAILED, 0]
        # DescribeGroups: READ implies DESCRIBE on g-public, nothing on g-alice
        r = c.request(15, 5, {"groups": ["g-alice", "g-public"], "include_authorized_operations": True})
        assert [g.error_code for g in r.groups] == [ErrorCode.GROUP_AUTHORIZATION_FAILED, 0]
        assert r.groups[1].authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)


def _kafka_python(secured: Secured, user: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": f"127.0.0.1:{secured.sasl_port}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": USERS[user],
    }


def test_with_kafka_python(secured: Secured) -> None:
    """ListGroups filtered by DESCRIBE, Metadata's topic list, DescribeGroups' error code."""
    from kafka import KafkaConsumer
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    def groups(user: str) -> set[str]:
        admin = KafkaAdminClient(**_kafka_python(secured, user))
        try:
            return {g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()}
        finally:
            admin.close()

    with secured.raw("admin") as c:  # make sure both groups exist
        for group in ("g-alice", "g-public"):
            c.request(
                8,
                8,
                {
                    "group_id": group,
                    "generation_id_or_member_epoch": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": [
                        {"name": "t-public", "partitions": [{"partition_index": 0, "committed_offset": 0}]}
                    ],
                },
            )
    assert {"g-alice", "g-public"} <= groups("admin")  # DESCRIBE on the cluster: every group
    assert groups("alice") & {"g-alice", "g-public"} == {"g-alice", "g-public"}
    assert "g-alice" not in groups("bob") and "g-public" in groups("bob")

    consumer = KafkaConsumer(**_kafka_python(secured, "bob"))
    try:
        assert consumer.topics() & set(TOPICS) == {"t-deny", "t-public"}
    finally:
        consumer.close()

    admin = KafkaAdminClient(**_kafka_python(secured, "bob"))
    try:
        # kafka-python's describe_configs drops per-resource errors: the resource just has no configs
        described = admin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "t-alice")])
        assert described == {"topic": {"t-alice": {}}}
        with pytest.raises(Exception) as info:
            admin.describe_groups(["g-alice"])
        assert getattr(info.value, "errno", None) == ErrorCode.GROUP_AUTHORIZATION_FAILED, info.value
    finally:
        admin.close()


def test_admin_topics(secured: Secured) -> None:
    alice = AdminClient(secured.conf("alice"))
    alice.create_topics([NewTopic("new-a", 1, 1)])["new-a"].result(15)  # PREFIXED CREATE
    with pytest.raises(KafkaException) as info:
        alice.create_topics([NewTopic("other", 1, 1)])["other"].result(15)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    alice.delete_topics(["new-a"])["new-a"].result(15)
    bob = AdminClient(secured.conf("bob"))
    with pytest.raises(KafkaException) as info:
        bob.delete_topics(["t-alice"])["t-alice"].result(15)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # CreateTopics v5+: no DESCRIBE_CONFIGS on new-b, so no configs in the answer
    with secured.raw("alice") as c:
        r = c.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": "new-b",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout_ms": 10000,
                "validate_only": True,
            },
        )
        t = r.topics[0]
        assert (t.error_code, t.topic_config_error_code, t.num_partitions, list(t.configs)) == (
            0,
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            -1,
            [],
        )
        # DeleteTopics by ID of a topic alice may not describe: no name in the answer
        with secured.raw("admin") as a:
            md = a.request(
                3,
                12,
                {
                    "topics": [{"topic_id": uuid.UUID(int=0), "name": "t-secret"}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            secret_id = md.topics[0].topic_id
        r = c.request(20, 6, {"topics": [{"name": None, "topic_id": secret_id}], "timeout_ms": 10000})
        assert (r.responses[0].name, r.responses[0].error_code) == (
            None,
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        )


def test_describe_configs(secured: Secured) -> None:
    alice = AdminClient(secured.conf("alice"))
    resource = ConfigResource(ConfigResource.Type.TOPIC, "t-alice")
    configs = alice.describe_configs([resource])[resource].result(15)
    assert "cleanup.policy" in configs
    bob = AdminClient(secured.conf("bob"))
    with pytest.raises(KafkaException) as info:
        bob.describe_configs([resource])[resource].result(15)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    with pytest.raises(KafkaException) as info:
        alice.describe_configs([broker])[broker].result(15)
    assert info.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    with secured.raw("alice") as c:  # AlterConfigs: alice has DESCRIBE_CONFIGS, not ALTER_CONFIGS
        r = c.request(
            44,
            0,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "t-alice",
                        "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1000"}],
                    }
                ],
                "validate_only": True,
            },
        )
        assert (r.responses[0].error_code, r.responses[0].error_message) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            None,
        )


def test_transactions(secured: Secured) -> None:
    producer = Producer(secured.conf("alice", **{"transactional.id": "tx-alice"}))
    consumer = Consumer(secured.conf("alice", **{"group.id": "g-alice", "enable.auto.commit": False}))
    try:
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("t-alice", b"in-txn")
        # AddOffsetsToTxn + TxnOffsetCommit: READ on g-alice and t-alice
        offsets = [CTopicPartition("t-alice", 0, 1)]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 15)
        producer.commit_transaction(15)
    finally:
        consumer.close()
    for user, txn_id in (("bob", "tx-alice"), ("alice", "tx-other")):
        refused = Producer(secured.conf(user, **{"transactional.id": txn_id}))
        with pytest.raises(KafkaException) as info:
            refused.init_transactions(15)
        assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, (user, txn_id)
    with secured.raw("bob") as c:
        r = c.request(65, 0, {"transactional_ids": ["tx-alice"]})
        assert r.transaction_states[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = c.request(66, 0, {"state_filters": [], "producer_id_filters": []})
        assert "tx-alice" not in [t.transactional_id for t in r.transaction_states]
    with secured.raw("alice") as c:
        r = c.request(66, 0, {"state_filters": [], "producer_id_filters": []})
        assert [t.transactional_id for t in r.transaction_states] == ["tx-alice"]
        r = c.request(
            26, 3, {"transactional_id": "tx-other", "producer_id": 1, "producer_epoch": 0, "committed": True}
        )
        assert r.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_metadata_lists_only_described_topics(secured: Secured) -> None:
    def listed(user: str) -> set[str]:
        return set(AdminClient(secured.conf(user)).list_topics(timeout=15).topics) & set(TOPICS)

    assert listed("admin") == set(TOPICS)
    assert listed("alice") == {"t-alice", "t-deny", "pre-x", "t-public"}
    assert listed("bob") == {"t-deny", "t-public"}
    assert listed("carol") == {"t-public"}
    with secured.raw("bob") as c:
        r = c.request(
            3,
            12,
            {
                "topics": [
                    {"topic_id": uuid.UUID(int=0), "name": n} for n in ("t-secret", "no-such", "t-public")
                ],
                "allow_auto_topic_creation": True,
                "include_topic_authorized_operations": True,
            },
        )
        got = {t.name: (t.error_code, t.topic_authorized_operations) for t in r.topics}
        assert got == {
            "t-secret": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -(2**31)),
            "no-such": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -(2**31)),  # exists or not: not told
            "t-public": (0, (1 << Op.READ) | (1 << Op.DESCRIBE)),
        }
    # confluent-kafka's view of the authorized operations
    alice = AdminClient(secured.conf("alice"))
    topic = alice.describe_topics(TopicCollection(["t-alice"]), include_authorized_operations=True)
    ops = set(topic["t-alice"].result(15).authorized_operations)
    assert ops == {
        CAclOperation.READ,
        CAclOperation.WRITE,
        CAclOperation.DESCRIBE,
        CAclOperation.DESCRIBE_CONFIGS,
    }
    cluster = alice.describe_cluster(include_authorized_operations=True).result(15)
    assert not cluster.authorized_operations  # no DESCRIBE on the cluster: 0
    admin = AdminClient(secured.conf("admin"))
    cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
    assert CAclOperation.CLUSTER_ACTION in set(cluster.authorized_operations)


def test_other_apis_wire_codes(secured: Secured) -> None:
    """The remaining APIs' checks, by raw request, as bob (who may use t-deny, t-public, g-public)."""
    auth = ErrorCode
    with secured.raw("bob") as c:
        r = c.request(
            21,
            2,
            {
                "topics": [
                    {"name": t, "partitions": [{"partition_index": 0, "offset": 0}]}
                    for t in ("t-alice", "t-deny")
                ],
                "timeout_ms": 5000,
            },
        )
        assert {t.name: t.partitions[0].error_code for t in r.topics} == {
            "t-alice": auth.TOPIC_AUTHORIZATION_FAILED,
            "t-deny": 0,
        }
        r = c.request(
            37,
            3,
            {
                "topics": [{"name": "t-alice", "count": 2, "assignments": None}],
                "timeout_ms": 5000,
                "validate_only": True,
            },
        )
        assert r.results[0].error_code == auth.TOPIC_AUTHORIZATION_FAILED
        r = c.request(35, 4, {"topics": None})
        assert (r.error_code, list(r.results)) == (auth.CLUSTER_AUTHORIZATION_FAILED, [])
        r = c.request(
            61, 0, {"topics": [{"name": t, "partition_indexes": [0]} for t in ("t-alice", "t-public")]}
        )
        assert [t.partitions[0].error_code for t in r.topics] == [auth.TOPIC_AUTHORIZATION_FAILED, 0]
        r = c.request(
            23,
            4,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": t,
                        "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                    }
                    for t in ("t-alice", "t-public")
                ],
            },
        )
        assert [t.partitions[0].error_code for t in r.topics] == [auth.TOPIC_AUTHORIZATION_FAILED, 0]
        # groups
        r = c.request(47, 0, {"group_id": "g-public", "topics": []})
        assert r.error_code == auth.GROUP_AUTHORIZATION_FAILED  # OffsetDelete needs DELETE on the group
        r = c.request(42, 2, {"groups_names": ["g-public", "g-alice"]})
        assert [g.error_code for g in r.results] == [auth.GROUP_AUTHORIZATION_FAILED] * 2
        r = c.request(
            12, 4, {"group_id": "g-alice", "generation_id": 1, "member_id": "m", "group_instance_id": None}
        )
        assert r.error_code == auth.GROUP_AUTHORIZATION_FAILED
        r = c.request(
            11,
            5,
            {
                "group_id": "g-alice",
                "session_timeout_ms": 10000,
                "rebalance_timeout_ms": 10000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}],
            },
        )
        assert r.error_code == auth.GROUP_AUTHORIZATION_FAILED
        beat = {
            "group_id": "g-public",
            "member_id": "",
            "member_epoch": 0,
            "rebalance_timeout_ms": 10000,
            "subscribed_topic_names": ["t-alice"],
            "server_assignor": None,
            "topic_partitions": [],
        }
        assert c.request(68, 0, beat).error_code == auth.TOPIC_AUTHORIZATION_FAILED
        assert c.request(68, 0, {**beat, "group_id": "g-alice"}).error_code == auth.GROUP_AUTHORIZATION_FAILED
        # transactions
        r = c.request(
            24,
            3,
            {
                "v3_and_below_transactional_id": "tx-alice",
                "v3_and_below_producer_id": 1,
                "v3_and_below_producer_epoch": 0,
                "v3_and_below_topics": [{"name": "t-deny", "partitions": [0]}],
            },
        )
        assert (
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            == auth.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        r = c.request(24, 4, {"transactions": []})
        assert r.error_code == auth.CLUSTER_AUTHORIZATION_FAILED  # broker batches need CLUSTER_ACTION
        r = c.request(
            25,
            3,
            {"transactional_id": "tx-alice", "producer_id": 1, "producer_epoch": 0, "group_id": "g-public"},
        )
        assert r.error_code == auth.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = c.request(
            28,
            3,
            {
                "transactional_id": "tx-alice",
                "group_id": "g-public",
                "producer_id": 1,
                "producer_epoch": 0,
                "topics": [
                    {
                        "name": "t-public",
                        "partitions": [
                            {"partition_index": 0, "committed_offset": 0, "committed_metadata": None}
                        ],
                    }
                ],
            },
        )
        assert r.topics[0].partitions[0].error_code == auth.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        r = c.request(
            27,
            1,
            {
                "markers": [
                    {
                        "producer_id": 1,
                        "producer_epoch": 0,
                        "transaction_result": True,
                        "topics": [{"name": "t-deny", "partition_indexes": [0]}],
                        "coordinator_epoch": 0,
                    }
                ]
            },
        )
        assert r.markers[0].topics[0].partitions[0].error_code == auth.CLUSTER_AUTHORIZATION_FAILED
    with secured.raw("alice") as c:
        # WRITE on tx-alice and t-alice, not on t-public (User:* may only READ it)
        r = c.request(
            24,
            3,
            {
                "v3_and_below_transactional_id": "tx-alice",
                "v3_and_below_producer_id": 1,
                "v3_and_below_producer_epoch": 0,
                "v3_and_below_topics": [
                    {"name": "t-public", "partitions": [0]},
                    {"name": "t-alice", "partitions": [0]},
                ],
            },
        )
        codes = [t.results_by_partition[0].partition_error_code for t in r.results_by_topic_v3_and_below]
        assert codes == [auth.TOPIC_AUTHORIZATION_FAILED, auth.OPERATION_NOT_ATTEMPTED]
        r = c.request(
            25,
            3,
            {"transactional_id": "tx-alice", "producer_id": 1, "producer_epoch": 0, "group_id": "g-none"},
        )
        assert r.error_code == auth.GROUP_AUTHORIZATION_FAILED
    with secured.raw("admin") as c:  # the super user passes every check
        r = c.request(35, 4, {"topics": None})
        assert r.error_code == 0 and r.results


def test_scram_credentials_need_cluster_alter_and_describe(secured: Secured) -> None:
    """Nobody but those allowed on the cluster may read user names or replace a password."""
    upsert = {
        "deletions": [],
        "upsertions": [
            {
                "name": "admin",
                "mechanism": 2,
                "iterations": 4096,
                "salt": b"salt-of-mallory",
                "salted_password": b"\x01" * 64,
            }
        ],
    }
    with secured.raw("bob") as c:
        r = c.request(51, 0, upsert)
        assert [(u.user, u.error_code) for u in r.results] == [
            ("admin", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        ]
        assert c.request(50, 0, {"users": None}).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with secured.raw("admin") as c:  # a super user
        assert c.request(50, 0, {"users": []}).error_code == 0


def test_elect_leaders_needs_cluster_alter(secured: Secured) -> None:
    body = {
        "election_type": 0,
        "topic_partitions": [{"topic": "t-public", "partitions": [0]}],
        "timeout_ms": 5000,
    }
    for user, top, code in (
        ("bob", ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        ("admin", ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED),
    ):
        with secured.raw(user) as c:
            r = c.request(43, 2, body)
        assert r.error_code == top, user
        assert r.replica_election_results[0].partition_result[0].error_code == code, user
    with secured.raw("bob") as c:  # all partitions, refused: the answer names no topic
        r = c.request(43, 2, {**body, "topic_partitions": None})
    assert (r.error_code, r.replica_election_results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
