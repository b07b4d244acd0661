"""The admin client's cluster calls (`client.admin_cluster`) against a real broker: DescribeCluster,
DescribeLogDirs, and many groups' committed offsets in few requests, each also as an older broker
(APIs or versions taken out of the negotiated tables) would answer them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from client import AdminClient, AIOAdminClient, AIOProducer, KafkaError, KafkaResponseError
from client.admin import NewTopic
from client.admin_cluster import (
    DESCRIBE_CLUSTER,
    DESCRIBE_LOG_DIRS,
    FIND_COORDINATOR,
    OFFSET_FETCH,
    ClusterDescription,
    group_offsets,
)
from client.connection import BrokerConnection
from client.types import OffsetAndMetadata, TopicPartition
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.client.test_admin_acls import plain_login, start_acl_broker

pytestmark = pytest.mark.timeout(60)


@dataclass
class Spy:
    """Every request the client sends in this test: (api key, version or None for negotiated)."""

    sent: list[tuple[int, int | None]] = field(default_factory=list)
    # api key -> fn(response) applied to responses of that API (to fake broker answers)
    rewrite: dict[int, Callable[[Any], None]] = field(default_factory=dict)

    def count(self, api_key: int) -> int:
        return sum(1 for key, _ in self.sent if key == api_key)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    spy = Spy()
    original = BrokerConnection.send

    async def send(self: BrokerConnection, api_key: int, body: dict[str, Any], **kw: Any) -> Any:
        spy.sent.append((api_key, kw.get("version")))
        resp = await original(self, api_key, body, **kw)
        if api_key in spy.rewrite:
            spy.rewrite[api_key](resp)
        return resp

    monkeypatch.setattr(BrokerConnection, "send", send)
    return spy


def old_broker(monkeypatch: pytest.MonkeyPatch, newest: dict[int, int | None]) -> None:
    """Make every connection opened from now on see a broker that serves ``api key`` only up to
    ``newest[api key]`` (None: not at all)."""
    original = BrokerConnection._negotiate

    async def negotiate(self: BrokerConnection, timeout: float) -> None:
        await original(self, timeout)
        for key, top in newest.items():
            if top is None:
                self.broker_versions.pop(key, None)
                self.versions.pop(key, None)
            else:
                lo, _ = self.broker_versions[key]
                self.broker_versions[key] = (lo, top)
                if key in self.versions:
                    self.versions[key] = min(self.versions[key], top)

    monkeypatch.setattr(BrokerConnection, "_negotiate", negotiate)


@pytest.fixture
async def admin(kafka: BrokerProcess) -> AsyncIterator[AIOAdminClient]:
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        yield a


async def produce(kafka: BrokerProcess, topic: str, partition: int, count: int) -> None:
    async with AIOProducer(bootstrap_servers=kafka.bootstrap) as p:
        for i in range(count):
            await p.send_and_wait(topic, b"v" * 100, key=str(i).encode(), partition=partition)


# -- describe_cluster ------------------------------------------------------------------------------


async def test_describe_cluster_names_the_broker_and_controller(
    kafka: BrokerProcess, admin: AIOAdminClient, spy: Spy
) -> None:
    described = await admin.describe_cluster()
    assert spy.count(DESCRIBE_CLUSTER) == 1
    assert isinstance(described, ClusterDescription)
    assert [(b.host, b.port) for b in described.brokers] == [("127.0.0.1", kafka.port)]
    assert described.controller_id == described.brokers[0].node_id
    assert described.cluster_id


async def test_describe_cluster_falls_back_to_metadata(
    kafka: BrokerProcess, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        expected = await a.describe_cluster()
    old_broker(monkeypatch, {DESCRIBE_CLUSTER: None})
    spy.sent.clear()
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        assert await a.describe_cluster() == expected
    assert spy.count(DESCRIBE_CLUSTER) == 0


async def test_describe_cluster_falls_back_on_unsupported_version_answer(
    admin: AIOAdminClient, spy: Spy
) -> None:
    expected = await admin.describe_cluster()

    def refuse(resp: Any) -> None:
        resp.error_code = ErrorCode.UNSUPPORTED_VERSION

    spy.rewrite[DESCRIBE_CLUSTER] = refuse
    assert await admin.describe_cluster() == expected


def test_sync_admin_forwards_the_new_calls(kafka: BrokerProcess) -> None:
    with AdminClient(bootstrap_servers=kafka.bootstrap) as a:
        assert a.describe_cluster().brokers[0].port == kafka.port
        assert a.list_consumer_groups_offsets(["sync-nobody"]) == {"sync-nobody": {}}
        assert isinstance(a.describe_log_dirs(), dict)


# -- describe_log_dirs -----------------------------------------------------------------------------


async def test_describe_log_dirs_sizes(
    kafka: BrokerProcess, admin: AIOAdminClient, topic: str, spy: Spy
) -> None:
    assert (await admin.create_topics([NewTopic(topic, 2)]))[topic] is None
    await produce(kafka, topic, 0, 5)
    written, empty = TopicPartition(topic, 0), TopicPartition(topic, 1)
    first = await admin.describe_log_dirs()
    assert first[written] > 0 and first[empty] == 0
    await produce(kafka, topic, 0, 5)
    second = await admin.describe_log_dirs()
    assert second[written] > first[written] and second[empty] == 0

    node = (await admin.describe_cluster()).brokers[0].node_id
    spy.sent.clear()
    by_broker = await admin.describe_log_dirs_by_broker()
    assert spy.count(DESCRIBE_LOG_DIRS) == 1
    assert list(by_broker) == [node]
    sizes = by_broker[node]
    assert isinstance(sizes, dict) and sizes[written] == second[written]


async def test_describe_log_dirs_skips_a_failing_broker(kafka: BrokerProcess, admin: AIOAdminClient) -> None:
    node = (await admin.describe_cluster()).brokers[0].node_id
    by_broker = await admin.describe_log_dirs_by_broker([node, 999])
    assert isinstance(by_broker[999], KafkaError) and isinstance(by_broker[node], dict)
    assert await admin.describe_log_dirs([node, 999]) == by_broker[node]
    with pytest.raises(KafkaError):  # nobody answered
        await admin.describe_log_dirs([999])


async def test_describe_log_dirs_on_a_broker_without_the_api(
    kafka: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_broker(monkeypatch, {DESCRIBE_LOG_DIRS: None})
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        with pytest.raises(KafkaError, match="DescribeLogDirs"):
            await a.describe_log_dirs()


# -- list_consumer_groups_offsets ---------------------------------------------------------------------


async def commit_groups(admin: AIOAdminClient, topic: str, groups: list[str]) -> dict[str, Any]:
    """Commit distinct offsets for each of ``groups``; what each committed."""
    assert (await admin.create_topics([NewTopic(topic, 3)]))[topic] is None
    expected: dict[str, Any] = {}
    for i, gid in enumerate(groups):
        offsets = {TopicPartition(topic, p): OffsetAndMetadata(10 * i + p, f"m{i}") for p in range(i + 1)}
        assert set((await admin.alter_consumer_group_offsets(gid, offsets)).values()) == {None}
        expected[gid] = offsets
    return expected


async def test_many_groups_offsets_in_one_request(admin: AIOAdminClient, topic: str, spy: Spy) -> None:
    groups = [f"{topic}-g{i}" for i in range(3)]
    expected = await commit_groups(admin, topic, groups)
    spy.sent.clear()
    got = await admin.list_consumer_groups_offsets([*groups, "no-such-group", groups[0]])
    assert got == {**expected, "no-such-group": {}}
    assert list(got) == [*groups, "no-such-group"]
    assert spy.sent.count((FIND_COORDINATOR, 4)) == 1 and spy.count(FIND_COORDINATOR) == 1
    assert spy.sent.count((OFFSET_FETCH, 8)) == 1 and spy.count(OFFSET_FETCH) == 1
    # the same answer as asking one group at a time
    for gid in groups:
        assert await admin.list_consumer_group_offsets(gid) == got[gid]
    assert await admin.list_consumer_groups_offsets([]) == {}


async def test_many_groups_offsets_from_an_older_broker(
    kafka: BrokerProcess, admin: AIOAdminClient, topic: str, monkeypatch: pytest.MonkeyPatch, spy: Spy
) -> None:
    groups = [f"{topic}-g{i}" for i in range(3)]
    expected = await commit_groups(admin, topic, groups)
    old_broker(monkeypatch, {FIND_COORDINATOR: 3, OFFSET_FETCH: 7})
    spy.sent.clear()
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        got = await a.list_consumer_groups_offsets([*groups, "no-such-group"])
    assert got == {**expected, "no-such-group": {}}
    assert spy.count(FIND_COORDINATOR) == 4 and spy.count(OFFSET_FETCH) == 4
    assert all(version is None for key, version in spy.sent if key in (FIND_COORDINATOR, OFFSET_FETCH))


async def test_many_groups_offsets_retry_a_moved_coordinator(
    admin: AIOAdminClient, topic: str, spy: Spy
) -> None:
    groups = [f"{topic}-g{i}" for i in range(2)]
    expected = await commit_groups(admin, topic, groups)
    answers = iter([ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS])

    def moved(resp: Any) -> None:  # the first two answers for the first group: retry it
        for g in resp.groups:
            if g.group_id == groups[0]:
                code = next(answers, None)
                if code is not None:
                    g.error_code, g.topics = code, []

    spy.rewrite[OFFSET_FETCH] = moved
    spy.sent.clear()
    assert await admin.list_consumer_groups_offsets(groups) == expected
    assert spy.count(OFFSET_FETCH) == 3 and spy.count(FIND_COORDINATOR) == 3


def test_group_offsets_of_one_answer() -> None:
    """A group-level error is the group's value; a partition's coordinator error too (v1 answers)."""
    refused = group_offsets("g", ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    assert isinstance(refused, KafkaResponseError) and refused.code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert "group 'g'" in str(refused)

    @dataclass
    class P:
        partition_index: int
        committed_offset: int
        metadata: str | None
        error_code: int = 0

    @dataclass
    class T:
        name: str
        partitions: list[P]

    loading = group_offsets("g", 0, [T("t", [P(0, 5, "", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)])])
    assert isinstance(loading, KafkaResponseError) and loading.retriable
    assert group_offsets("g", 0, [T("t", [P(1, 7, None), P(0, -1, ""), P(2, 3, "x")])]) == {
        TopicPartition("t", 1): OffsetAndMetadata(7, ""),
        TopicPartition("t", 2): OffsetAndMetadata(3, "x"),
    }


# -- with an authorizer: refusals are per group / per broker ----------------------------------------


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    proc, sasl = start_acl_broker(tmp_path_factory.mktemp("cluster-acls"))
    try:
        yield proc, sasl
    finally:
        code = proc.stop()
        assert code == 0, f"broker exited with {code}:\n{proc.log()}"


async def test_refusals_are_per_group_and_per_broker(acl_broker: tuple[BrokerProcess, str]) -> None:
    from client.admin_acls import (
        AccessControlEntry,
        AclBinding,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourcePattern,
        ResourceType,
    )

    proc, sasl = acl_broker
    async with AIOAdminClient(bootstrap_servers=proc.bootstrap) as root:
        expected = await commit_groups(root, "acl-topic", ["acl-open", "acl-closed"])
        grant = AclBinding(
            ResourcePattern(ResourceType.GROUP, "acl-open", PatternType.LITERAL),
            AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        )
        topic_grant = AclBinding(
            ResourcePattern(ResourceType.TOPIC, "acl-topic", PatternType.LITERAL),
            AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        )
        assert await root.create_acls([grant, topic_grant]) == [None, None]
    async with AIOAdminClient(plain_login(sasl, "alice")) as alice:
        got = await alice.list_consumer_groups_offsets(["acl-open", "acl-closed"])
        assert got["acl-open"] == expected["acl-open"]
        refused = got["acl-closed"]
        assert isinstance(refused, KafkaResponseError)
        assert refused.code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        by_broker = await alice.describe_log_dirs_by_broker()
        assert all(
            isinstance(e, KafkaResponseError) and e.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            for e in by_broker.values()
        )
        with pytest.raises(KafkaResponseError, match="CLUSTER_AUTHORIZATION_FAILED"):
            await alice.describe_log_dirs()


async def test_describe_groups_covers_both_group_protocols(kafka: BrokerProcess, topic: str) -> None:
    """A KIP-848 group (librdkafka with group.protocol=consumer) through ConsumerGroupDescribe, a
    classic one through DescribeGroups: each with its state, assignor and members' partitions."""
    import asyncio
    import time

    from confluent_kafka import Consumer

    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 2, 1)])
        members = {}
        for group, protocol in (("modern-" + topic, "consumer"), ("classic-" + topic, "classic")):
            c = Consumer(
                {
                    "bootstrap.servers": kafka.bootstrap,
                    "group.id": group,
                    "group.protocol": protocol,
                    **({"partition.assignment.strategy": "range"} if protocol == "classic" else {}),
                }
            )
            c.subscribe([topic])
            members[group] = c
        try:
            deadline = time.monotonic() + 30
            while True:
                for c in members.values():
                    c.poll(0.1)
                described = await admin.describe_groups(list(members))
                if all(
                    d.state == "Stable"
                    and {tp for m in d.members for tp in m.assignment}
                    == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
                    for d in described.values()
                ):
                    break
                assert time.monotonic() < deadline, described
                await asyncio.sleep(0.2)
            modern, classic = described["modern-" + topic], described["classic-" + topic]
            assert (modern.protocol_type, modern.protocol) == ("consumer", "uniform")
            assert (classic.protocol_type, classic.protocol) == ("consumer", "range")
            assert len(modern.members) == len(classic.members) == 1
        finally:
            for c in members.values():
                c.close()


async def test_list_offsets_answers_an_unknown_topic_at_once(kafka: BrokerProcess, topic: str) -> None:
    """As Kafka's AdminClient: the partitions of a topic the metadata does not have fail with
    UNKNOWN_TOPIC_OR_PARTITION; retrying them would only end in the API timeout (raised here)."""
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap, default_api_timeout_ms=3000) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
        known, gone = TopicPartition(topic, 0), TopicPartition(f"{topic}-never", 0)
        found = await admin.list_offsets({known: "latest", gone: "latest"})
        assert found[known] is not None and found[known].offset == 0
        assert isinstance(found[gone], KafkaResponseError)
        assert found[gone].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
