"""Transactions on a three-broker cluster (marker ``cluster``: `make test-cluster`).

The partitions of the transaction are led by different brokers, so the
coordinator writes most markers with WriteTxnMarkers to other brokers;
`__transaction_state` is created at the first transactional producer with
replication factor 3. Then the coordinator of a transactional id is SIGKILLed
while its transaction is open: the broker that takes over its
`__transaction_state` partition replays the id and the producer's commit goes
through there, with nothing committed lost and nothing aborted visible.
Then the coordinator dies between PrepareCommit and the markers (the only
data partition's leader is paused, so the markers cannot be written): the
broker taking over replays PrepareCommit and writes them once that leader is
back, and the commit the producer was told of happens. Last, the leaders of
a transaction's partitions and its group coordinator verify a producer's
first write with a coordinator on another broker (KIP-890 part 1), and
transactions v2 add the partitions there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.groups.hashing import partition_for
from client.admin import AdminClient as Admin
from protocol.errors import ErrorCode
from tests.cluster.helpers import create_topic, partition_metadata, wait_for
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess, zookeeper_available
from tests.compat.test_transactions import read_all
from tests.integration import test_transactions_v2 as tv2
from tests.integration.test_txn_verification import Producer as WireProducer
from tests.wire import RawClient

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not zookeeper_available(), reason="ZooKeeper not installed"),
]

TOPIC = "txn-cluster"
PARTITIONS = 6
TXN_PARTITIONS = 5


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with (
        ZooKeeperProcess(tmp_path / "zookeeper") as zk,
        Cluster(tmp_path, zk, **{"transaction.state.log.num.partitions": str(TXN_PARTITIONS)}) as c,
    ):
        create_topic(c.bootstrap, TOPIC, PARTITIONS, 3, **{"min.insync.replicas": "2"})
        yield c


def producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "logger": QUIET})
    p.init_transactions(60)
    return p


def values(tag: str, n: int = 3) -> list[tuple[int, bytes]]:
    return [(p, f"{tag}-{p}-{i}".encode()) for p in range(PARTITIONS) for i in range(n)]


def run(p: Producer, records: list[tuple[int, bytes]], commit: bool) -> None:
    p.begin_transaction()
    for partition, value in records:
        p.produce(TOPIC, value, partition=partition)
    p.flush(60)
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)


def test_markers_reach_every_leader(cluster: Cluster) -> None:
    leaders = {leader for leader, _, _ in partition_metadata(cluster.bootstrap, TOPIC).values()}
    assert len(leaders) > 1  # the markers cannot all be local
    p = producer(cluster.bootstrap, "spread")
    run(p, values("one"), True)
    run(p, values("two"), False)
    run(p, values("three"), True)
    want = sorted(v for _, v in values("one") + values("three"))
    assert sorted(read_all(cluster.bootstrap, "read_committed", len(want), (TOPIC,))) == want
    assert len(read_all(cluster.bootstrap, "read_uncommitted", len(want) + 18, (TOPIC,))) == len(want) + 18
    txn_state = partition_metadata(cluster.bootstrap, "__transaction_state")
    assert len(txn_state) == TXN_PARTITIONS and all(
        len(replicas) == 3 for _, replicas, _ in txn_state.values()
    )


def test_coordinator_failover_keeps_the_open_transaction(cluster: Cluster) -> None:
    txn_id = "failover"
    p = producer(cluster.bootstrap, txn_id)
    run(p, values("before"), True)
    p.begin_transaction()
    for partition, value in values("during"):
        p.produce(TOPIC, value, partition=partition)
    p.flush(60)

    coordinator = partition_metadata(cluster.bootstrap, "__transaction_state")[
        partition_for(txn_id, TXN_PARTITIONS)
    ][0]
    cluster.kill(coordinator)
    alive = ",".join(b.bootstrap for n, b in cluster.brokers.items() if n != coordinator)
    wait_for(
        lambda: (
            partition_metadata(alive, "__transaction_state")[partition_for(txn_id, TXN_PARTITIONS)][0]
            not in (coordinator, -1)
        ),
        60,
        "a new transaction coordinator",
    )
    p.commit_transaction(120)
    run(p, values("after"), False)

    want = sorted(v for _, v in values("before") + values("during"))
    assert sorted(read_all(alive, "read_committed", len(want), (TOPIC,))) == want


def test_commit_completes_after_the_coordinator_dies_before_the_markers(cluster: Cluster) -> None:
    # the coordinator of "prepared" is one broker; the data lives on another one only (RF 1)
    txn_id = "prepared"
    partition = partition_for(txn_id, TXN_PARTITIONS)
    producer(cluster.bootstrap, "warm-up")  # creates __transaction_state
    wait_for(
        lambda: partition_metadata(cluster.bootstrap, "__transaction_state")[partition][0] >= 0,
        30,
        "a coordinator for the id",
    )
    coordinator = partition_metadata(cluster.bootstrap, "__transaction_state")[partition][0]
    data_leader = next(n for n in cluster.brokers if n != coordinator)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
    topic = NewTopic("one-home", 1, replica_assignment=[[data_leader]], config={"min.insync.replicas": "1"})
    admin.create_topics([topic])["one-home"].result(30)
    wait_for(lambda: partition_metadata(cluster.bootstrap, "one-home")[0][0] == data_leader, 30, "its leader")

    p = producer(cluster.bootstrap, txn_id)
    p.begin_transaction()
    p.produce("one-home", b"prepared-then-orphaned", partition=0)
    p.flush(60)
    cluster.pause(data_leader)  # the markers cannot be written now
    try:
        # EndTxn is answered once PrepareCommit is durable; the producer then waits for the markers
        committing = threading.Thread(target=p.commit_transaction, args=(120,))
        committing.start()
        reachable = ",".join(b.bootstrap for n, b in cluster.brokers.items() if n != data_leader)
        with Admin(bootstrap_servers=reachable, request_timeout_ms=5000) as admin:
            wait_for(
                lambda: _state(admin, txn_id) == "PrepareCommit",
                90,
                "PrepareCommit, its markers held up by the paused leader",
            )
        cluster.kill(coordinator)
    finally:
        cluster.resume(data_leader)
    committing.join(120)
    assert not committing.is_alive()
    alive = ",".join(b.bootstrap for n, b in cluster.brokers.items() if n != coordinator)
    assert read_partition(alive, "one-home") == [(0, b"prepared-then-orphaned")]


def read_partition(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    """(offset, value) of every record a read_committed consumer assigned partition 0 from offset 0
    reads, waiting up to 60 s for the first and then until a second passes with nothing new.

    No consumer group: a group's first coordinator may be the broker just killed (its session
    has not expired yet) and a rebalance would start an uncommitted reader over, which says
    nothing of the log."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                if got:
                    break
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.value()))
    finally:
        consumer.close()
    return got


def _state(admin: Admin, txn_id: str) -> str | None:
    try:
        found = admin.describe_transactions([txn_id])[txn_id]
    except Exception:
        return None
    return getattr(found, "state", None)


def test_transactions_v2_add_partitions_from_every_leader(cluster: Cluster) -> None:
    """Transactions v2 (KIP-890 part 2, our own encoder: no client here speaks it): Produce v12
    sent to each partition's leader adds the partition itself, with AddPartitionsToTxn v5 to the
    coordinator when that is another broker, and TxnOffsetCommit v5 at the group coordinator
    adds the offsets partition the same way. EndTxn v5 then writes every marker."""
    txn_id, group = "tv2-spread", "tv2-group"
    any_port = next(iter(cluster.brokers.values())).port
    with RawClient(any_port) as c:
        c.await_transaction_coordinator(txn_id)
        found = c.request(10, 1, {"key": txn_id, "key_type": 1})
        group_coordinator = c.request(10, 1, {"key": group, "key_type": 0}).node_id
    leaders = {p: leader for p, (leader, _, _) in partition_metadata(cluster.bootstrap, TOPIC).items()}
    assert set(leaders.values()) - {found.node_id}  # some adds must cross brokers
    with RawClient(found.port) as coordinator:
        pid, epoch = tv2.init(coordinator, txn_id)
        for partition, leader in sorted(leaders.items()):
            with RawClient(cluster.brokers[leader].port) as c:
                values = {partition: b"v2-%d" % partition}
                assert tv2.produce(c, txn_id, pid, epoch, 0, values, TOPIC) == {partition: 0}
        with RawClient(cluster.brokers[group_coordinator].port) as c:
            assert tv2.txn_offset_commit(c, pid, epoch, 5, txn_id, group, TOPIC) == 0
        state = coordinator.request(65, 0, {"transactional_ids": [txn_id]}).transaction_states[0]
        assert {(t.topic, p) for t in state.topics for p in t.partitions} >= {(TOPIC, p) for p in leaders}
        assert tv2.end(coordinator, txn_id, pid, epoch, True) == (0, pid, epoch + 1)
    want = sorted(b"v2-%d" % p for p in leaders)
    assert sorted(read_all(cluster.bootstrap, "read_committed", len(want), (TOPIC,))) == want
    with RawClient(cluster.brokers[group_coordinator].port) as c:
        wait_for(lambda: tv2.committed(c, group, TOPIC) == 5, 30, "the committed offset")


def test_first_writes_are_verified_with_a_coordinator_elsewhere(cluster: Cluster) -> None:
    """KIP-890 part 1 across brokers: a partition leader and a group coordinator that are not the
    transaction coordinator ask it (AddPartitionsToTxn v5 verify_only) before a producer's first
    transactional write, so a batch or an offset commit outside the open transaction is refused in
    its version's words and a late batch after the commit opens nothing."""
    txn_id = "verified-remotely"
    any_port = next(iter(cluster.brokers.values())).port
    with RawClient(any_port) as c:
        c.await_transaction_coordinator(txn_id)
        coordinator = c.request(10, 1, {"key": txn_id, "key_type": 1}).node_id
        group = next(
            g
            for g in (f"verifying-{i}" for i in range(100))
            if c.request(10, 1, {"key": g, "key_type": 0}).node_id != coordinator
        )
        group_coordinator = c.request(10, 1, {"key": group, "key_type": 0}).node_id
    leaders = {p: leader for p, (leader, _, _) in partition_metadata(cluster.bootstrap, TOPIC).items()}
    added, outside = [p for p, leader in sorted(leaders.items()) if leader != coordinator][:2]
    with (
        RawClient(cluster.brokers[coordinator].port) as at_coordinator,
        RawClient(cluster.brokers[leaders[added]].port) as at_added,
        RawClient(cluster.brokers[leaders[outside]].port) as at_outside,
        RawClient(cluster.brokers[group_coordinator].port) as at_group,
    ):
        p = WireProducer(at_coordinator, txn_id, TOPIC)
        assert p.add(TOPIC, added) == {added: 0}
        assert p.send(outside, 0, 10, via=at_outside) == ErrorCode.INVALID_TXN_STATE
        assert p.send(outside, 0, 11, via=at_outside) == ErrorCode.TRANSACTION_ABORTABLE
        assert p.send(added, 0, 10, via=at_added) == 0
        assert p.commit_offset(3, 5, group, via=at_group) == ErrorCode.INVALID_TXN_STATE
        assert p.commit_offset(4, 5, group, via=at_group) == ErrorCode.TRANSACTION_ABORTABLE
        assert p.add_offsets(group) == 0
        assert p.commit_offset(4, 5, group, via=at_group) == 0
        ended = at_coordinator.request(
            26,
            3,
            {"transactional_id": txn_id, "producer_id": p.pid, "producer_epoch": p.epoch, "committed": True},
        )
        assert ended.error_code == 0

        # a batch before the marker reaches the partition joins the transaction being committed
        # (as in Kafka: the producer has one open there); after it, it would open a new one
        wait_for(lambda: _stable_offset(at_added, added) == 2, 30, "the commit marker")
        late: list[int] = []

        def answered() -> bool:
            late.append(p.send(added, 1, 10, via=at_added))
            return late[-1] != ErrorCode.NOT_ENOUGH_REPLICAS  # the coordinator still completing it

        wait_for(answered, 30, "the markers")
        assert late[-1] == ErrorCode.INVALID_TXN_STATE
    assert read_all(cluster.bootstrap, "read_committed", 1, (TOPIC,)) == [b"x"]
    with RawClient(cluster.brokers[group_coordinator].port) as c:
        wait_for(lambda: tv2.committed(c, group, TOPIC) == 5, 30, "the committed offset")


def _stable_offset(c: RawClient, partition: int) -> int:
    """The partition's last stable offset (ListOffsets, read_committed, latest)."""
    body = {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
    }
    return int(c.request(2, 2, body).topics[0].partitions[0].offset)


def test_a_state_write_waits_through_an_isr_change_of_the_same_leader(tmp_path: Path) -> None:
    """A follower of the coordinator's `__transaction_state` partition dies while a write waits for it:
    the controller removes it from the ISR with a new leader epoch, the coordinator still leads, and
    the write completes (Kafka: only a replica that stops leading fails the waiting writes)."""
    with (
        ZooKeeperProcess(tmp_path / "zookeeper") as zk,
        Cluster(
            tmp_path,
            zk,
            # The controller's removal (session timeout, 6 s) comes before the leader's own (30 s).
            **{"transaction.state.log.num.partitions": "1", "replica.lag.time.max.ms": "30000"},
        ) as c,
    ):
        producer(c.bootstrap, "tx-warm")  # __transaction_state exists, replicated on every broker
        port = c.brokers[1].port
        with RawClient(port, timeout=10) as raw:
            coordinator = raw.request(10, 1, {"key": "tx-isr", "key_type": 1}).node_id
        follower = next(n for n in c.brokers if n != coordinator)
        c.kill(follower)
        body = {
            "transactional_id": "tx-isr",
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        with RawClient(c.brokers[coordinator].port, timeout=40) as raw:
            answer = raw.request(22, 4, body)
        assert answer.error_code == ErrorCode.NONE, ErrorCode(answer.error_code).name
