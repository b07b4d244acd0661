"""Our consumer with ``group.protocol=consumer`` (KIP-848), in a group with librdkafka's consumer-protocol member."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client import Consumer, ConsumerRebalanceListener, Producer, TopicPartition
from tests.broker_process import BrokerProcess
from tests.compat.group_harness import create_topic, wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 6


@pytest.fixture
def kbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path / "data", env={"MINIKAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS": "300"}
    ).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


class Listener(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: set[TopicPartition] = set()
        self.lost: set[TopicPartition] = set()

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked |= revoked

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost |= lost


def ours(bootstrap: str, group: str, topic: str, listener: Listener | None = None) -> Consumer:
    c = Consumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        group_protocol="consumer",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    c.subscribe([topic], listener=listener)
    return c


def produce(bootstrap: str, topic: str, per_partition: int, start: int = 0) -> None:
    with Producer(bootstrap_servers=bootstrap) as p:
        for partition in range(PARTITIONS):
            for n in range(start, start + per_partition):
                p.send(topic, value=f"{partition}-{n}".encode(), partition=partition)
        p.flush()


def test_our_members_share_a_group_with_librdkafka(kbroker: BrokerProcess) -> None:
    topic, group = "ours-848", "g-ours-848"
    create_topic(kbroker.bootstrap, topic, PARTITIONS)
    produce(kbroker.bootstrap, topic, 10)
    listeners = [Listener(), Listener()]
    mine = [ours(kbroker.bootstrap, group, topic, lst) for lst in listeners]
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kbroker.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    theirs.subscribe([topic])
    seen: set[bytes] = set()
    try:

        def balanced() -> bool:
            for c in mine:
                seen.update(r.value for r in c.poll(0.05))
            msg = theirs.poll(0.05)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
            sizes = [len(c.assignment()) for c in mine] + [len(theirs.assignment())]
            return sizes == [2, 2, 2] and len(seen) == 60

        wait_for(balanced, 60, "a 2/2/2 split and every record", interval=0)
        owned = [c.assignment() for c in mine]
        assert not owned[0] & owned[1]
        # our commits carry the member epoch (OffsetCommit v9)
        mine[0].commit()
        committed = mine[0].committed(sorted(owned[0]))
        assert all(v is not None and v.offset == 10 for v in committed.values())
        # one of ours leaves: the others take its partitions and revoke nothing
        for lst in listeners:
            lst.revoked.clear()
        mine[1].close()

        def settled() -> bool:
            mine[0].poll(0.05)
            theirs.poll(0.05)
            return len(mine[0].assignment()) + len(theirs.assignment()) == PARTITIONS

        wait_for(settled, 30, "the leaver's partitions handed over", interval=0)
        assert owned[0] <= mine[0].assignment()
        assert listeners[0].revoked == set() and listeners[0].lost == set()
    finally:
        for c in mine:
            c.close()
        theirs.close()


def test_resume_from_commits(kbroker: BrokerProcess) -> None:
    topic, group = "ours-848-resume", "g-ours-848-resume"
    create_topic(kbroker.bootstrap, topic, PARTITIONS)
    produce(kbroker.bootstrap, topic, 5)
    first = ours(kbroker.bootstrap, group, topic)
    got: list[Any] = []
    wait_for(lambda: got.extend(first.poll(0.1)) or len(got) == 30, 30, "the first records")
    first.commit()
    first.close()
    produce(kbroker.bootstrap, topic, 3, start=5)
    second = ours(kbroker.bootstrap, group, topic)
    again: list[Any] = []
    try:
        wait_for(lambda: again.extend(second.poll(0.1)) or len(again) >= 18, 30, "the new records")
        assert sorted(r.value for r in again) == sorted(
            f"{p}-{n}".encode() for p in range(PARTITIONS) for n in range(5, 8)
        )
    finally:
        second.close()
