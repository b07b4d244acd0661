"""A three-broker cluster on a real ZooKeeper, driven by confluent-kafka (librdkafka).

Brokers are real processes: failures are SIGKILL. Every test checks what a
real consumer reads against what the producer had acknowledged.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.cluster.helpers import (
    Sender,
    check_exactly_once,
    controller_of,
    create_topic,
    partition_metadata,
    read_all,
    replicas_agree,
    wait_for,
    wait_for_leaders,
)
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_rf3_topic_replicates_to_every_broker_and_serves_groups(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "rf3", 4, 3, **{"min.insync.replicas": "2"})
    md = partition_metadata(cluster.bootstrap, "rf3")
    assert all(sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3] for _, replicas, isr in md.values())
    assert len({leader for leader, _, _ in md.values()}) >= 2  # leaderships are spread over the brokers
    sender = Sender(cluster.bootstrap, "rf3")
    sender.send(range(3000))
    sender.flush()
    assert not sender.errors and len(sender.acked) == 3000

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["rf3"])
    got = 0
    deadline = time.monotonic() + 60
    while got < 3000 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            got += 1
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition("rf3", p) for p in range(4)], timeout=10)
    consumer.close()
    assert got == 3000
    assert sum(tp.offset for tp in committed) == 3000

    wait_for(lambda: replicas_agree(cluster, "rf3", 4), 15, "identical replicas")


def test_200k_records_through_two_sigkills_lose_nothing_acknowledged(cluster: Cluster) -> None:
    """A leader killed and restarted, then another broker killed, while 200k records are written."""
    create_topic(cluster.bootstrap, "t", 3, 3, **{"min.insync.replicas": "2"})
    victim = partition_metadata(cluster.bootstrap, "t")[0][0]
    sender = Sender(cluster.bootstrap, "t")
    sender.send(range(0, 60000))
    cluster.kill(victim)  # with writes in flight to the partitions it leads
    sender.send(range(60000, 120000))
    sender.flush()
    assert not sender.errors and len(sender.acked) == 120000
    new_leader = partition_metadata(cluster.bootstrap, "t")[0][0]
    assert new_leader not in (victim, -1)

    cluster.restart(victim)
    wait_for_leaders(cluster.bootstrap, "t", 3, 3)  # the restarted broker caught up and is back in the ISR
    sender.send(range(120000, 160000))
    second = next(n for n in cluster.brokers if n != victim)
    cluster.kill(second)
    sender.send(range(160000, 200000))
    sender.flush()
    assert not sender.errors and len(sender.acked) == 200000
    cluster.restart(second)
    wait_for_leaders(cluster.bootstrap, "t", 3, 3)
    check_exactly_once(sender.acked, read_all(cluster.bootstrap, "t", 3))

    wait_for(
        lambda: replicas_agree(cluster, "t", 3),
        30,
        "every replica holding the same batches at the same offsets",
    )


def test_with_one_replica_left_acks_all_is_refused_and_acks_1_works(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "mir", 1, 3, **{"min.insync.replicas": "2"})
    leader = partition_metadata(cluster.bootstrap, "mir")[0][0]
    for node in cluster.brokers:
        if node != leader:
            cluster.kill(node)
    survivor = cluster.brokers[leader].bootstrap
    wait_for(
        lambda: partition_metadata(survivor, "mir")[0][2] == [leader], 40, "the ISR to shrink to the leader"
    )

    results: list[KafkaError | None] = []
    strict = Producer(
        {
            "bootstrap.servers": survivor,
            "acks": "all",
            "retries": 0,
            "message.timeout.ms": 5000,
            "enable.idempotence": False,
        }
    )
    strict.produce("mir", value=b"refused", on_delivery=lambda err, msg: results.append(err))
    strict.flush(15)
    assert results and results[0] is not None and results[0].code() == KafkaError.NOT_ENOUGH_REPLICAS

    loose = Producer({"bootstrap.servers": survivor, "acks": 1, "enable.idempotence": False, "logger": QUIET})
    offsets: list[int] = []
    loose.produce(
        "mir", value=b"accepted", on_delivery=lambda err, msg: offsets.append(-1 if err else msg.offset())
    )
    loose.flush(15)
    assert offsets == [0]  # the refused record was never appended


def test_acks_all_waiting_when_the_isr_drops_below_min_isr_is_not_acknowledged(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    """An acks=all write waiting for a follower that stops (SIGSTOP) is answered
    NOT_ENOUGH_REPLICAS_AFTER_APPEND when that follower leaves the ISR and the ISR falls below
    min.insync.replicas, as from Kafka, not acknowledged as if it were on two replicas."""
    # the follower leaves the ISR after 1.5 s, well before its ZooKeeper session expires (6 s)
    with Cluster(tmp_path, zookeeper, **{"replica.lag.time.max.ms": "1500"}) as cluster:
        create_topic(cluster.bootstrap, "minisr", 1, 2, **{"min.insync.replicas": "2"})
        leader, replicas, _ = partition_metadata(cluster.bootstrap, "minisr")[0]
        follower = next(n for n in replicas if n != leader)
        results: list[KafkaError | None] = []
        producer = Producer(
            {
                "bootstrap.servers": cluster.brokers[leader].bootstrap,
                "acks": "all",
                "retries": 0,
                "enable.idempotence": False,
                "logger": QUIET,
            }
        )
        producer.produce("minisr", b"before", on_delivery=lambda err, msg: results.append(err))
        producer.flush(30)
        assert results == [None]
        cluster.pause(follower)
        try:
            producer.produce("minisr", b"held up", on_delivery=lambda err, msg: results.append(err))
            producer.flush(30)
        finally:
            cluster.resume(follower)
    error = results[1]
    assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND, error


def test_controller_sigkill_hands_over_and_leadership_changes_continue(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "c", 2, 3)
    controller = controller_of(cluster)
    cluster.kill(controller)
    alive = [n for n in cluster.brokers if n != controller]
    started = time.monotonic()
    wait_for(lambda: controller_of(cluster, alive) not in (-1, controller), 20, "a new controller")
    assert time.monotonic() - started < 15  # session timeout (6 s) plus a few seconds
    survivor = cluster.brokers[alive[0]].bootstrap
    wait_for(
        lambda: all(leader in alive for leader, _, _ in partition_metadata(survivor, "c").values()),
        15,
        "the new controller to move the dead broker's leaderships",
    )
    create_topic(cluster.brokers[alive[0]].bootstrap, "after", 2, 2)


def test_group_coordinator_sigkill_moves_the_group_and_keeps_its_offsets(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "work", 6, 3, **{"min.insync.replicas": "2"})
    sender = Sender(cluster.bootstrap, "work")
    sender.send(range(6000))
    sender.flush()
    wait_for_leaders(cluster.bootstrap, "__consumer_offsets", 5, 3)

    def member(name: str) -> Consumer:
        c = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "workers",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "logger": QUIET,
            }
        )
        c.subscribe(["work"])
        return c

    members = [member(f"m{i}") for i in range(3)]
    seen: set[int] = set()

    def poll_round() -> None:
        for c in members:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                seen.add(int(msg.key()))
                # a rebalance may have taken the partition away meanwhile: its next owner re-reads it
                with contextlib.suppress(KafkaException):
                    c.commit(msg, asynchronous=False)

    def consume(until: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(seen) < until and time.monotonic() < deadline:
            poll_round()

    consume(2000, 60)
    assert len(seen) >= 2000
    coordinator = _group_coordinator(cluster, "workers")
    cluster.kill(coordinator)
    started = time.monotonic()
    consume(6000, 90)  # the group moves to the new leader of its __consumer_offsets partition
    assert seen == set(range(6000)), f"{6000 - len(seen)} records never consumed"
    new_coordinator = _group_coordinator(cluster, "workers", [n for n in cluster.brokers if n != coordinator])
    assert new_coordinator not in (-1, coordinator)
    assert time.monotonic() - started < 60

    def all_committed() -> bool:
        for _ in range(5):
            poll_round()  # a commit refused during the move is redone by the partition's owner
        committed = members[0].committed([TopicPartition("work", p) for p in range(6)], timeout=15)
        return sum(tp.offset for tp in committed) == 6000

    wait_for(all_committed, 60, "every offset committed on the new coordinator")
    for c in members:
        c.close()


def _group_coordinator(cluster: Cluster, group: str, nodes: list[int] | None = None) -> int:
    """The node FindCoordinator names for ``group``, asked of the first broker that answers."""
    from tests.wire import RawClient

    for node in nodes or list(cluster.brokers):
        try:
            with RawClient(cluster.brokers[node].port) as c:
                answer = c.request(10, 1, {"key": group, "key_type": 0})
            if answer.error_code == 0:
                return answer.node_id
        except OSError:
            continue
    return -1


def test_sigterm_hands_leaderships_over_before_exiting(cluster: Cluster) -> None:
    create_topic(cluster.bootstrap, "calm", 3, 3, **{"min.insync.replicas": "2"})
    leader = partition_metadata(cluster.bootstrap, "calm")[0][0]
    sender = Sender(cluster.bootstrap, "calm")
    sender.send(range(5000))
    started = time.monotonic()
    assert cluster.brokers[leader].stop() == 0  # SIGTERM: a clean shutdown
    stopped_in = time.monotonic() - started
    sender.send(range(5000, 10000))
    sender.flush()
    assert not sender.errors and len(sender.acked) == 10000
    survivor = cluster.brokers[next(n for n in cluster.brokers if n != leader)].bootstrap
    md = partition_metadata(survivor, "calm")
    assert all(new not in (leader, -1) for new, _, _ in md.values())
    assert stopped_in < 12  # no waiting for the ZooKeeper session to expire
    assert "moved every leadership away" in cluster.log(leader)
    check_exactly_once(sender.acked, read_all(survivor, "calm", 3))


def test_create_partitions_places_replicas_on_every_broker(cluster: Cluster) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    create_topic(cluster.bootstrap, "wide", 2, 3, **{"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
    admin.create_partitions([NewPartitions("wide", 5)])["wide"].result(15)
    admin.create_partitions([NewPartitions("wide", 6, replica_assignment=[[3, 1, 2]])])["wide"].result(15)
    wait_for_leaders(cluster.bootstrap, "wide", 6, 3)
    md = partition_metadata(cluster.bootstrap, "wide")
    assert all(sorted(replicas) == [1, 2, 3] for _, replicas, _ in md.values())
    assert md[5][1] == [3, 1, 2] and md[5][0] == 3
    assert len({replicas[0] for _, replicas, _ in md.values()}) == 3  # preferred leaders spread

    sender = Sender(cluster.bootstrap, "wide")
    sender.send(range(6000))
    sender.flush()
    assert {p for p, _ in sender.acked.values()} == set(range(6))
    check_exactly_once(sender.acked, read_all(cluster.bootstrap, "wide", 6))
    wait_for(lambda: replicas_agree(cluster, "wide", 6), 30, "the new partitions replicated everywhere")


def test_a_consumer_above_the_high_watermark_waits_there_instead_of_starting_over(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    """A consumer whose position is past the HW but not past the log end (a new leader's HW can
    be behind the last one's) gets empty answers until the HW gets there, as from Kafka; an
    OFFSET_OUT_OF_RANGE would send it back to the earliest offset to read everything again."""
    # a follower that stops fetching stays in the ISR for a minute: the HW stays put that long
    with Cluster(tmp_path, zookeeper, **{"replica.lag.time.max.ms": "60000"}) as cluster:
        create_topic(cluster.bootstrap, "ahead", 1, 2, **{"min.insync.replicas": "1"})
        leader, replicas, _ = partition_metadata(cluster.bootstrap, "ahead")[0]
        follower = next(n for n in replicas if n != leader)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "logger": QUIET})
        for i in range(5):
            producer.produce("ahead", str(i).encode(), partition=0)
        producer.flush(30)
        wait_for(lambda: _offsets("ahead", cluster.bootstrap)[1] == 5, 30, "the HW at 5")

        cluster.pause(follower)
        try:
            producer.produce("ahead", b"5", partition=0)  # acks=1: the log ends at 6, the HW stays at 5
            producer.flush(30)
            consumer = Consumer(
                {
                    "bootstrap.servers": cluster.bootstrap,
                    "group.id": "ahead",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                    "logger": QUIET,
                }
            )
            consumer.assign([TopicPartition("ahead", 0, 6)])
            early = [consumer.poll(0.5) for _ in range(6)]  # three seconds of fetching at 6
            assert _offsets("ahead", cluster.bootstrap)[1] == 5  # the HW did not move meanwhile
        finally:
            cluster.resume(follower)
        producer.produce("ahead", b"6", partition=0)
        producer.flush(30)
        later = []
        deadline = time.monotonic() + 30
        while not later and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                later.append(msg)
        consumer.close()
        read = [(m.offset(), m.value()) for m in early + later if m is not None and m.error() is None]
        errors = [m.error() for m in early + later if m is not None and m.error() is not None]
        assert (read, errors) == ([(6, b"6")], [])


def _offsets(topic: str, bootstrap: str) -> tuple[int, int]:
    """(log start, high watermark) of partition 0, as a read_uncommitted consumer is told."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets", "logger": QUIET})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
