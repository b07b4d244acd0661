"""Consumer groups with real clients: mixed groups, crashes, clean leaves, static members, kcat, admin, restarts.

Members run as separate processes (tests/compat/group_member.py) so they can be
SIGKILLed; what they saw is in their event files, what the broker decided is
in its `__consumer_offsets` records (tests/compat/group_harness.py).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess
from tests.compat.group_harness import (
    GroupView,
    Member,
    all_committed,
    create_topic,
    decode_assignment,
    owned_exactly_once,
    produce,
    wait_for,
)
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(240)

GROUP_ENV = {
    "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "1000",
    "MINIKAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "500",  # KIP-848 members settle in seconds
    "MINIKAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS": "6000",  # and a killed one is gone as fast
}


@pytest.fixture
def gbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", env=GROUP_ENV).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    try:
        yield started
    finally:
        for m in started:
            m.kill()


def describe(port: int, group: str) -> tuple[str, int]:
    with RawClient(port) as c:
        g = c.request(15, 3, {"groups": [group], "include_authorized_operations": False}).groups[0]
    return g.group_state, len(g.members)


def committed(port: int, group: str) -> dict[int, int]:
    """The group's committed offsets, partition -> offset, from OffsetFetch."""
    with RawClient(port) as c:
        resp = c.request(9, 3, {"group_id": group, "topics": None})
    return {p.partition_index: p.committed_offset for t in resp.topics for p in t.partitions}


def stable_with(port: int, group: str, n: int) -> bool:
    return describe(port, group) == ("Stable", n)


def consumed(ms: list[Member]) -> Counter[tuple[int, int]]:
    return Counter(r for m in ms for r in m.records())


def test_mixed_group_shares_partitions_and_consumes_everything_once(
    gbroker: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    """kafka-python + aiokafka + confluent-kafka in one group (range assignor) on a 6-partition topic."""
    boot = gbroker.bootstrap
    create_topic(boot, "mixed", 6)
    for client in ("kafka-python", "aiokafka", "confluent-kafka"):
        members.append(Member(client, boot, "mixed-g", "mixed", tmp_path / f"{client}.jsonl"))
    wait_for(
        lambda: owned_exactly_once(members, 6, expect_owners=3), 60, "3 members owning 2 partitions each"
    )
    assert stable_with(gbroker.port, "mixed-g", 3)
    assert sorted(len(m.assignment()) for m in members) == [2, 2, 2]
    produce(boot, "mixed", 6, 50)
    expected = {(p, o) for p in range(6) for o in range(50)}
    wait_for(lambda: set(consumed(members)) == expected, 60, "every record consumed")
    wait_for(lambda: all_committed(members, 6, 50), 30, "every partition committed")
    counts = consumed(members)
    assert set(counts.values()) == {1}, "a record was consumed twice"
    for m in members:  # each read exactly its own partitions
        assert {p for p, _ in m.records()} == m.assignment()
        assert m.report_committed() == {p: 50 for p in m.assignment()}  # the client's own committed()

    # clean close: LeaveGroup, so the others take over at once (session timeout is 6 s)
    leaving = members[0]
    leaving.close()
    closed_at = time.monotonic()
    rest = members[1:]
    wait_for(lambda: owned_exactly_once(rest, 6, expect_owners=2), 30, "the two others owning everything")
    assert time.monotonic() - closed_at < 5.0, (
        "rebalance waited for the session timeout instead of LeaveGroup"
    )
    produce(boot, "mixed", 6, 10, start=50)
    more = {(p, o) for p in range(6) for o in range(50, 60)}
    wait_for(lambda: more <= set(consumed(rest)), 60, "new records consumed by the rest")
    later = [r for r in consumed(rest).elements() if r not in expected]
    assert sorted(later) == sorted(more)  # exactly once, and nothing before the committed offsets again
    assert (
        sum(1 for r in consumed(rest).elements() if r in expected) == sum(len(m.records()) for m in rest) - 60
    )


def test_classic_clients_keep_consuming_through_an_upgrade_to_the_consumer_protocol_and_back(
    gbroker: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    """Kafka 4's online migration with clients that only speak the classic protocol: kafka-python
    and aiokafka (eager, range) share a group; a confluent-kafka member with group.protocol=consumer
    joins it (the group becomes a consumer-protocol group), the two go on consuming and committing
    inside it as classic members, and when it leaves the group is classic again."""
    boot = gbroker.bootstrap
    create_topic(boot, "migrate", 6)
    for client in ("kafka-python", "aiokafka"):
        members.append(Member(client, boot, "migrate-g", "migrate", tmp_path / f"{client}.jsonl"))
    wait_for(lambda: owned_exactly_once(members, 6, expect_owners=2), 60, "the two classic members")
    upgraded = Member("confluent-kafka-848", boot, "migrate-g", "migrate", tmp_path / "upgraded.jsonl")
    members.append(upgraded)
    wait_for(
        lambda: owned_exactly_once(members, 6, expect_owners=3), 60, "three members, the upgraded one too"
    )
    with RawClient(gbroker.port) as c:
        listed = c.request(16, 5, {"states_filter": [], "types_filter": ["consumer"]}).groups
    assert [g.group_id for g in listed] == ["migrate-g"]

    produce(boot, "migrate", 6, 50)
    expected = {(p, o) for p in range(6) for o in range(50)}
    wait_for(lambda: set(consumed(members)) == expected, 60, "every record consumed")
    wait_for(lambda: all_committed(members, 6, 50), 30, "every partition committed")
    assert set(consumed(members).values()) == {1}, "a record was consumed twice"

    members.remove(upgraded)
    upgraded.close()
    wait_for(
        lambda: owned_exactly_once(members, 6, expect_owners=2), 60, "the classic members owning everything"
    )
    wait_for(lambda: stable_with(gbroker.port, "migrate-g", 2), 30, "a Stable classic group of two")
    produce(boot, "migrate", 6, 10, start=50)
    more = {(p, o) for p in range(6) for o in range(50, 60)}
    wait_for(lambda: more <= set(consumed(members)), 60, "the new records")
    assert sorted(r for r in consumed(members).elements() if r in more) == sorted(more)


def test_sigkilled_member_is_replaced_and_others_resume_from_commits(
    gbroker: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    boot = gbroker.bootstrap
    create_topic(boot, "crash", 6)
    clients = ("kafka-python", "aiokafka", "confluent-kafka")
    for client in clients:
        members.append(Member(client, boot, "crash-g", "crash", tmp_path / f"{client}.jsonl"))
    wait_for(lambda: owned_exactly_once(members, 6, expect_owners=3), 60, "a stable 3-member group")
    produce(boot, "crash", 6, 30)
    wait_for(lambda: len(set(consumed(members))) == 180, 60, "the first records consumed")
    wait_for(lambda: all_committed(members, 6, 30), 30, "every partition committed")
    victim = members[2]
    lost = victim.assignment()
    last_commit = {p: max(o for _, q, o in victim.commits() if q == p) for p in lost}
    seen = {p: max(o for q, o in victim.records() if q == p) for p in lost}
    victim.kill()
    killed_at = time.monotonic()
    survivors = members[:2]
    wait_for(lambda: owned_exactly_once(survivors, 6, expect_owners=2), 40, "the survivors owning everything")
    takeover = time.monotonic() - killed_at
    assert takeover < 6 + 10, f"takeover took {takeover:.1f}s"
    before = {m.out: len(m.records()) for m in survivors}
    produce(boot, "crash", 6, 10, start=30)
    wait_for(
        lambda: {(p, o) for p in range(6) for o in range(30, 40)} <= set(consumed(survivors)),
        60,
        "survivors consuming new records",
    )
    for p in lost:  # the new owner started at the victim's committed offset, not earlier
        new_reads = [o for m in survivors for q, o in m.records()[before[m.out] :] if q == p]
        assert last_commit[p] <= min(new_reads) <= seen[p] + 1, (p, last_commit[p], min(new_reads))
    # the victim comes back and gets its share again
    members.append(Member(clients[2], boot, "crash-g", "crash", tmp_path / "restarted.jsonl"))
    wait_for(lambda: owned_exactly_once(members, 6, expect_owners=3), 60, "the restarted member rejoining")
    assert stable_with(gbroker.port, "crash-g", 3)


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(
    gbroker: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    boot = gbroker.bootstrap
    create_topic(boot, "static", 6)
    steady = Member(
        "kafka-python",
        boot,
        "static-g",
        "static",
        tmp_path / "steady.jsonl",
        instance_id="kp",
        session_ms=10000,
    )
    bouncer = Member(
        "confluent-kafka",
        boot,
        "static-g",
        "static",
        tmp_path / "bouncer.jsonl",
        instance_id="ck",
        session_ms=10000,
    )
    members += [steady, bouncer]
    wait_for(lambda: owned_exactly_once(members, 6, expect_owners=2), 60, "a stable 2-member static group")
    view = GroupView(gbroker.data_dir, "static-g")
    generation = view.generations()[-1].generation
    kept = bouncer.assignment()
    steady_events = len(steady.events())
    bouncer.close()  # a static member does not send LeaveGroup
    again = Member(
        "confluent-kafka",
        boot,
        "static-g",
        "static",
        tmp_path / "bouncer2.jsonl",
        instance_id="ck",
        session_ms=10000,
    )
    members.append(again)
    wait_for(lambda: again.assignment(), 30, "the restarted static member getting its assignment")
    assert again.assignment() == kept
    time.sleep(1.5)  # give a rebalance, if one were (wrongly) going on, time to show
    assert [e["e"] for e in steady.events()[steady_events:] if e["e"] in ("assigned", "revoked")] == []
    assert stable_with(gbroker.port, "static-g", 2)
    latest = view.generations()[-1]
    assert latest.generation == generation, "the group went through a rebalance"
    assert {m.group_instance_id for m in latest.members} == {"kp", "ck"}
    produce(boot, "static", 6, 5)
    wait_for(lambda: len(set(consumed([steady, again]))) == 30, 60, "both consuming")
    assert {p for p, _ in again.records()} == kept


@pytest.mark.usefixtures("kcat")
def test_kcat_balanced_consumer(gbroker: BrokerProcess) -> None:
    boot = gbroker.bootstrap
    create_topic(boot, "kc", 3)
    produce(boot, "kc", 3, 20)
    proc = subprocess.run(
        [
            "kcat",
            "-b",
            boot,
            "-G",
            "kcat-g",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%p %o %s\n",
            "-X",
            "session.timeout.ms=6000",
            "kc",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    got = sorted(tuple(map(int, line.split()[:2])) for line in proc.stdout.splitlines() if line.strip())
    assert got == [(p, o) for p in range(3) for o in range(20)]
    with RawClient(gbroker.port) as c:
        resp = c.request(
            9, 3, {"group_id": "kcat-g", "topics": [{"name": "kc", "partition_indexes": [0, 1, 2]}]}
        )
    assert [p.committed_offset for p in resp.topics[0].partitions] == [20, 20, 20]
    assert describe(gbroker.port, "kcat-g")[0] == "Empty"  # it left on exit


def test_admin_clients_list_and_describe_groups_and_compute_lag(
    gbroker: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    boot = gbroker.bootstrap
    create_topic(boot, "adm", 4)
    produce(boot, "adm", 4, 10)
    members.append(Member("kafka-python", boot, "adm-g", "adm", tmp_path / "kp.jsonl"))
    members.append(Member("confluent-kafka", boot, "adm-g", "adm", tmp_path / "ck.jsonl"))
    wait_for(lambda: owned_exactly_once(members, 4, expect_owners=2), 60, "a stable 2-member group")
    wait_for(lambda: len(set(consumed(members))) == 40, 60, "all consumed")
    wait_for(lambda: all_committed(members, 4, 10), 30, "every partition committed")
    for m in members:
        m.close()
    members.clear()
    produce(boot, "adm", 4, 5, start=10)  # nobody consumes these: a lag of 5 per partition

    # confluent-kafka AdminClient, on an Empty group with committed offsets
    admin = AdminClient({"bootstrap.servers": boot})
    listed = admin.list_consumer_groups().result(30)
    assert "adm-g" in {g.group_id for g in listed.valid}
    desc = admin.describe_consumer_groups(["adm-g"])["adm-g"].result(30)
    assert desc.state == ConsumerGroupState.EMPTY and desc.members == []
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("adm-g")])["adm-g"].result(30)
    committed = {tp.partition: tp.offset for tp in offsets.topic_partitions}
    assert committed == {p: 10 for p in range(4)}

    # a running group: members and assignments
    members.append(Member("confluent-kafka", boot, "adm-live", "adm", tmp_path / "live.jsonl"))
    wait_for(lambda: owned_exactly_once(members, 4, expect_owners=1), 60, "one live member")
    wait_for(lambda: stable_with(gbroker.port, "adm-live", 1), 30, "Stable")
    live = admin.describe_consumer_groups(["adm-live"])["adm-live"].result(30)
    assert live.state == ConsumerGroupState.STABLE and live.partition_assignor == "range"
    assert len(live.members) == 1
    assignment = {(tp.topic, tp.partition) for tp in live.members[0].assignment.topic_partitions}
    assert assignment == {("adm", p) for p in range(4)}

    # kafka-python KafkaAdminClient
    kadmin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        groups = {g["group_id"]: g for g in kadmin.list_groups()}
        assert groups["adm-g"]["protocol_type"] == "consumer" and "adm-live" in groups
        described = kadmin.describe_groups(["adm-live", "adm-g"])
        assert described["adm-live"]["group_state"] == "Stable"
        parts = described["adm-live"]["members"][0]["member_assignment"]["assigned_partitions"]
        assert {(a["topic"], p) for a in parts for p in a["partitions"]} == assignment
        assert described["adm-g"]["group_state"] == "Empty"
        k_offsets = kadmin.list_group_offsets("adm-g")["adm-g"]
        assert {tp.partition: om.offset for tp, om in k_offsets.items()} == {p: 10 for p in range(4)}
    finally:
        kadmin.close()

    # lag = end offset - committed offset, with each client
    from confluent_kafka import Consumer
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    probe = Consumer({"bootstrap.servers": boot, "group.id": "adm-probe"})
    ends = {p: probe.get_watermark_offsets(TopicPartition("adm", p), timeout=10)[1] for p in range(4)}
    probe.close()
    assert {p: ends[p] - committed[p] for p in range(4)} == {p: 5 for p in range(4)}
    kc = KafkaConsumer(bootstrap_servers=boot, group_id="adm-g", enable_auto_commit=False)
    try:
        tps = [KTopicPartition("adm", p) for p in range(4)]
        k_ends = kc.end_offsets(tps)
        assert {tp.partition: k_ends[tp] - kc.committed(tp) for tp in tps} == {p: 5 for p in range(4)}
    finally:
        kc.close()

    # and deletion: refused while the group has members, done once it is empty
    deleted = admin.delete_consumer_groups(["adm-g"])
    deleted["adm-g"].result(30)
    with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
        admin.delete_consumer_groups(["adm-live"])["adm-live"].result(30)
    kadmin = KafkaAdminClient(bootstrap_servers=boot)
    try:
        assert "adm-g" not in {g["group_id"] for g in kadmin.list_groups()}
    finally:
        kadmin.close()


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_broker_restart_keeps_groups_and_commits(tmp_path: Path, members: list[Member], how: str) -> None:
    proc = BrokerProcess(tmp_path / "data", env=GROUP_ENV).start()
    port = proc.port
    try:
        boot = proc.bootstrap
        create_topic(boot, "rs", 4)
        members.append(Member("kafka-python", boot, "rs-g", "rs", tmp_path / "kp.jsonl"))
        members.append(Member("confluent-kafka", boot, "rs-g", "rs", tmp_path / "ck.jsonl"))
        wait_for(lambda: owned_exactly_once(members, 4, expect_owners=2), 60, "a stable 2-member group")
        produce(boot, "rs", 4, 20)
        wait_for(lambda: len(set(consumed(members))) == 80, 60, "all consumed")
        wait_for(lambda: all_committed(members, 4, 20), 30, "every partition committed")
        if how == "sigkill":
            assert proc.proc is not None
            os.kill(proc.proc.pid, signal.SIGKILL)
            proc.kill()
        else:
            assert proc.stop() == 0, proc.log()
        proc = BrokerProcess(tmp_path / "data", port=port, env=GROUP_ENV).start()
        assert committed(port, "rs-g") == dict.fromkeys(range(4), 20)
        assert describe(port, "rs-g")[0] == "Stable"  # the group survived with its members
        produce(boot, "rs", 4, 10, start=20)
        wait_for(
            lambda: {(p, o) for p in range(4) for o in range(20, 30)} <= set(consumed(members)),
            60,
            "the same members consuming after the restart",
        )
        counts = consumed(members)
        assert [r for r, n in counts.items() if n > 1 and r[1] < 20] == [], (
            "records before the commits came again"
        )
        assert all(m.alive for m in members)
    finally:
        for m in members:
            m.kill()
        assert proc.stop() == 0, proc.log()


CLASSIC_CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")


def _churn(
    bootstrap: str,
    data_dir: Path,
    tmp_path: Path,
    seconds: float,
    members: list[Member],
    seed: int,
    clients: tuple[str, ...] = CLASSIC_CLIENTS,
) -> None:
    """Members join, leave and crash at random while a producer writes; then check the broker's records.

    With ``confluent-kafka-848`` among ``clients`` the group changes protocol back and forth
    (KIP-848 migration); the per-generation check then covers its classic periods."""
    rng = random.Random(seed)
    partitions = 8
    create_topic(bootstrap, "churn", partitions)
    produced = 0
    n = 0

    def start() -> None:
        nonlocal n
        n += 1
        client = clients[n % len(clients)]
        members.append(Member(client, bootstrap, "churn-g", "churn", tmp_path / f"m{n}.jsonl"))

    for _ in range(3):
        start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        produce(bootstrap, "churn", partitions, 5, start=produced)
        produced += 5
        live = [m for m in members if m.alive]
        action = rng.random()
        if len(live) < 5 and (action < 0.4 or len(live) < 2):
            start()
        elif action < 0.7:
            rng.choice(live).close()
        else:
            rng.choice(live).kill()
        time.sleep(rng.uniform(0.5, 1.5))
    for m in members:
        m.close() if m.alive and rng.random() < 0.5 else m.kill()
    # a final pair drains whatever is left
    start()
    start()
    everything = {(p, o) for p in range(partitions) for o in range(produced)}
    wait_for(lambda: everything <= set(consumed(members)), 90, "every produced record consumed at least once")
    # the broker's committed offsets, not the members' commit events: a member killed between its
    # commit and writing the event leaves the last offset committed with no event saying so
    port = int(bootstrap.rpartition(":")[2])
    wait_for(
        lambda: committed(port, "churn-g") == dict.fromkeys(range(partitions), produced), 90, "final commits"
    )
    for m in members:
        m.close()

    view = GroupView(data_dir, "churn-g")
    generations = view.generations()
    if clients == CLASSIC_CLIENTS:
        assert len({g.generation for g in generations}) >= 3, (
            "churn produced too few rebalances to mean anything"
        )
    for g in generations:
        owners: Counter[tuple[str, int]] = Counter()
        for member in g.members:
            for topic, parts in decode_assignment(member.assignment).items():
                owners.update((topic, p) for p in parts)
        assert all(c == 1 for c in owners.values()), (
            f"generation {g.generation} gave a partition to two members"
        )
    last: dict[tuple[str, int], int] = {}
    for rec in view.commits():
        tp = (rec.topic, rec.partition)
        assert rec.offset >= last.get(tp, 0), (
            f"committed offset of {tp} went back from {last[tp]} to {rec.offset}"
        )
        last[tp] = rec.offset
    assert last == {("churn", p): produced for p in range(partitions)}


@pytest.mark.churn
def test_churn_short(gbroker: BrokerProcess, tmp_path: Path, members: list[Member]) -> None:
    _churn(gbroker.bootstrap, gbroker.data_dir, tmp_path, 10, members, seed=3)  # starts, 2 closes, 2 kills


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_churn_minute(gbroker: BrokerProcess, tmp_path: Path, members: list[Member]) -> None:
    _churn(gbroker.bootstrap, gbroker.data_dir, tmp_path, 60, members, seed=int(time.time()))


@pytest.mark.churn
def test_churn_with_both_protocols(gbroker: BrokerProcess, tmp_path: Path, members: list[Member]) -> None:
    """The churn of `test_churn_short` with consumer-protocol members among the classic ones: the
    group upgrades and downgrades as they come and go, and nothing is lost or committed backwards."""
    # the first three members are classic; every fourth one to start speaks KIP-848
    clients = ("confluent-kafka-848", "kafka-python", "aiokafka", "confluent-kafka")
    _churn(gbroker.bootstrap, gbroker.data_dir, tmp_path, 15, members, seed=5, clients=clients)
    assert "upgraded to the consumer protocol" in gbroker.log()  # the churn did change the protocol
