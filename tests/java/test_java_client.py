"""Kafka's Java client (kafka-clients 3.9.1) against single brokers: one JVM per broker runs a
group of checks (tests/java/*.java) and each check is a test here.

- a plain broker: the producer (acks, idempotence, codecs, headers, 1 MB records,
  partitioning, callbacks, flush), the consumer (seeks, offsetsForTimes, commits, classic
  groups with range and cooperative-sticky assignors, a KIP-848 group), transactions, and
  the Admin client (``admin.if_supported.*``: APIs the broker may leave out, reported in the
  terminal summary when it answers UNSUPPORTED_VERSION);
- a broker with Kafka's ACL authorizer: ACL create/describe/delete and their effect on a
  SASL/PLAIN user;
- a broker with SASL_PLAINTEXT (PLAIN), SASL_SSL (SCRAM) and SSL (client certificates
  required) listeners (tests/compat/security_broker.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.compat.security_broker import PLAIN_USERS, USERS, secure_broker
from tests.java.jvm import JvmRun, run_checks

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]

# KIP-848 members heartbeat every 500 ms instead of 5 s, so their rebalances settle quickly.
PLAIN_ENV = {
    "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "MINIKAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "500",
}

PRODUCER = [
    "producer.acks_0",
    "producer.acks_1",
    "producer.acks_all",
    "producer.idempotent",
    "producer.codec_gzip",
    "producer.codec_snappy",
    "producer.codec_lz4",
    "producer.codec_zstd",
    "producer.headers",
    "producer.null_key_and_value",
    "producer.large_record_1mb",
    "producer.callback_gets_broker_error",
    "producer.key_partitioning",
    "producer.callbacks",
    "producer.flush",
    "producer.timestamps",
    "producer.min_insync_replicas",
    "producer.auto_create_topic",
]
CONSUMER = [
    "consumer.assign_and_seek",
    "consumer.seek_to_beginning_and_end",
    "consumer.offsets_for_times",
    "consumer.offsets_for_times_in_compressed_batch",
    "consumer.out_of_range_reset",
    "consumer.position_and_committed",
    "consumer.group_range",
    "consumer.group_cooperative_sticky",
    "consumer.group_protocol_consumer",
    "consumer.static_membership",
    "consumer.subscribe_pattern",
    "consumer.commit_sync_and_async",
    "consumer.resume_after_commit",
]
TRANSACTIONS = [
    "transactions.commit",
    "transactions.abort",
    "transactions.isolation_levels",
    "transactions.send_offsets_to_transaction",
    "transactions.zombie_fencing",
]
ADMIN = [
    "admin.create_list_delete_topics",
    "admin.describe_topics_with_ids",
    "admin.delete_topic_by_id",
    "admin.create_partitions",
    "admin.describe_configs_topic",
    "admin.describe_configs_every_topic_config",
    "admin.describe_configs_default_synonyms",
    "admin.describe_configs_broker",
    "admin.incremental_alter_configs",
    "admin.incremental_alter_configs_broker",
    "admin.alter_configs_legacy",
    "admin.list_offsets",
    "admin.delete_records",
    "admin.describe_cluster",
    "admin.describe_log_dirs",
    "admin.describe_features",
    "admin.consumer_groups",
    "admin.consumer_group_kip848",
    "admin.describe_producers",
    "admin.list_and_describe_transactions",
    "admin.abort_transaction",
    "admin.fence_producers",
    "admin.client_quotas",
    "admin.scram_credentials",
    "admin.acls_without_authorizer",
    "admin.elect_leaders",
    "admin.if_supported.list_partition_reassignments",
    "admin.if_supported.alter_partition_reassignments",
    "admin.if_supported.alter_replica_log_dirs",
    "admin.if_supported.update_features",
    "admin.if_supported.describe_metadata_quorum",
    "admin.if_supported.create_delegation_token",
    "admin.if_supported.describe_delegation_token",
    "admin.if_supported.unregister_broker",
    "admin.if_supported.list_client_metrics_resources",
]
ACL = [
    "acl.create_describe_delete",
    "acl.create_invalid",
    "acl.enforced_for_producer",
    "acl.idempotent_producer_with_topic_write",
    "acl.enforced_for_consumer_group",
    "acl.authorized_operations",
]
# connections.max.reauth.ms of the security broker: SASL clients re-authenticate this often (KIP-368).
REAUTH_MS = 2000

# Checks that fail because of a known broker bug, with the bug: strict xfail, so a fix turns them
# into errors (and the entry is then removed).
KNOWN_BUGS: dict[str, str] = {}
SECURITY = [
    "security.plain.produce_consume",
    "security.plain.wrong_password",
    "security.scram_sha_512.produce_consume",
    "security.scram_sha_512.wrong_password",
    "security.scram_sha_256.produce_consume",
    "security.scram_sha_256.wrong_password",
    "security.scram_user_created_by_java_admin",
    "security.reauthentication",
    "security.mtls.produce_consume",
    "security.tls.untrusted_broker_refused",
    "security.mtls.untrusted_client_cert_refused",
    # issue 42 (fixed in 62370ec): the broker closed the connection without a TLS alert and the
    # Java client retried until "Timed out waiting for a node assignment"
    "security.mtls.no_client_cert_fails_fast",
    "security.mtls.no_client_cert_fails_fast_tls12",
]


def params(names: list[str]) -> list[object]:
    """The check names as test parameters, the known bugs marked strict xfail."""
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[n])) if n in KNOWN_BUGS else n
        for n in names
    ]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory, java_classes: Path) -> Iterator[JvmRun]:
    """The producer, consumer, transactions and admin groups against one plain broker."""
    root = tmp_path_factory.mktemp("java-plain")
    broker = BrokerProcess(root / "data", env=PLAIN_ENV).start()
    try:
        yield run_checks(
            "producer,consumer,transactions,admin", {"bootstrap": broker.bootstrap}, workdir=root
        )
    finally:
        code = broker.stop()
        assert code == 0, f"broker exited with {code}:\n{broker.log()[-5000:]}"


@pytest.fixture(scope="module")
def acl_run(tmp_path_factory: pytest.TempPathFactory, java_classes: Path) -> Iterator[JvmRun]:
    """The acl group against a broker with Kafka's authorizer (User:ANONYMOUS, the PLAINTEXT
    listener's principal, is the only super user; alice logs in with SASL/PLAIN)."""
    root = tmp_path_factory.mktemp("java-acl")
    extra = "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\nsuper.users=User:ANONYMOUS\n"
    with secure_broker(root, extra=extra) as sb:
        yield run_checks(
            "acl",
            {
                "bootstrap": sb.proc.bootstrap,
                "plain.bootstrap": f"127.0.0.1:{sb.sasl_plaintext}",
                "user": "alice",
                "password": PLAIN_USERS["alice"],
            },
            workdir=root,
        )


@pytest.fixture(scope="module")
def security_run(tmp_path_factory: pytest.TempPathFactory, java_classes: Path) -> Iterator[JvmRun]:
    """The security group against a broker with PLAIN, SCRAM and mTLS listeners."""
    root = tmp_path_factory.mktemp("java-security")
    users = [f"alice:PLAIN:{PLAIN_USERS['alice']}"] + [f"{u}:{m}:{p}" for u, (m, p) in USERS.items()]
    with secure_broker(root, extra=f"connections.max.reauth.ms={REAUTH_MS}\n") as sb:
        yield run_checks(
            "security",
            {
                "bootstrap": sb.proc.bootstrap,
                "plain.bootstrap": f"127.0.0.1:{sb.sasl_plaintext}",
                "scram.bootstrap": f"127.0.0.1:{sb.sasl_ssl}",
                "ssl.bootstrap": f"127.0.0.1:{sb.ssl}",
                "ca": sb.tls.ca,
                "untrusted.ca": sb.tls.untrusted_ca,
                "keystore": sb.client_cert.keystore,
                "untrusted.keystore": sb.untrusted_cert.keystore,
                "users": ",".join(users),
                "reauth.ms": str(REAUTH_MS),
            },
            workdir=root,
        )


@pytest.mark.parametrize("name", params(PRODUCER + CONSUMER + TRANSACTIONS + ADMIN))
def test_plain_broker(plain_run: JvmRun, name: str) -> None:
    plain_run.assert_ok(name)


@pytest.mark.parametrize("name", params(ACL))
def test_acl_broker(acl_run: JvmRun, name: str) -> None:
    acl_run.assert_ok(name)


@pytest.mark.parametrize("name", params(SECURITY))
def test_security_broker(security_run: JvmRun, name: str) -> None:
    security_run.assert_ok(name)


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("plain_run", PRODUCER + CONSUMER + TRANSACTIONS + ADMIN),
        ("acl_run", ACL),
        ("security_run", SECURITY),
    ],
)
def test_each_run_reports_exactly_its_checks(
    request: pytest.FixtureRequest, fixture: str, expected: list[str]
) -> None:
    """A JVM that died early, or a check added in Java but not listed here, fails this test."""
    run: JvmRun = request.getfixturevalue(fixture)
    run.assert_clean_exit()
    assert set(run.checks) == set(expected)
