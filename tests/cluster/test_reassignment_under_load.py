"""Growing and shrinking a cluster under load: a fourth broker takes half of every topic's partitions,
then broker 1 is emptied, while an idempotent acks=all producer writes and a consumer group reads.

What must hold (issue: operating a growing cluster): every acknowledged
record is in the log exactly once, the group's consumer sees every one of
them and never waits longer than its session timeout for the next record,
and at the end every replica of every partition holds the same batches
(offsets, leader epochs, CRCs) and broker 1 holds none.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from client.admin import AdminClient
from client.types import TopicPartition
from tests.broker_process import REPO
from tests.cluster.helpers import (
    check_exactly_once,
    create_topic,
    partition_metadata,
    read_all,
    replica_batches,
    wait_for,
)
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = pytest.mark.cluster

TOPIC = "growing"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 10000


class Load:
    """A producer thread writing numbered records and a group consumer thread reading them."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: dict[int, tuple[int, int]] = {}
        self.errors: list[object] = []
        self.seen: set[int] = set()
        self.longest_wait = 0.0
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "logger": QUIET,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120000,
            }
        )
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "logger": QUIET,
                "group.id": "growing-readers",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
            }
        )
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def _report(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked[int(msg.key())] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

    def _produce(self) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                self._producer.produce(TOPIC, key=str(n).encode(), value=b"x" * 200, on_delivery=self._report)
                n += 1
            except BufferError:
                pass
            self._producer.poll(0.002)
        self._producer.flush(120)

    def _consume(self) -> None:
        self._consumer.subscribe([TOPIC])
        last = None
        producing = self._threads[0]
        while producing.is_alive() or len(self.seen) < len(self.acked):
            msg = self._consumer.poll(0.2)
            now = time.monotonic()
            if msg is None or msg.error():
                if self._stop.is_set() and last is not None and now - last > 30:
                    return
                continue
            if last is not None and not self._stop.is_set():
                self.longest_wait = max(self.longest_wait, now - last)
            last = now
            self.seen.add(int(msg.key()))
        self._consumer.close()

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(180)


def _all_moved(admin: AdminClient) -> bool:
    return admin.list_partition_reassignments() == {}


def _replicas_identical(cluster: Cluster, topic: str) -> bool:
    for p, (_, replicas, _) in partition_metadata(cluster.bootstrap, topic).items():
        logs = [replica_batches(cluster.brokers[r].data_dir, topic, p) for r in replicas]
        if not logs[0] or any(batches != logs[0] for batches in logs):
            return False
    return True


def test_add_a_broker_move_half_then_decommission_one_under_load(
    tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    with Cluster(tmp_path, zookeeper) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3)
        load = Load(cluster.bootstrap).__enter__()
        admin = AdminClient(bootstrap_servers=cluster.bootstrap)
        try:
            wait_for(lambda: len(load.seen) > 2000, 60, "the load running")
            cluster.add_broker(4)
            # half of every topic's partitions get a replica on broker 4 (in place of their last one)
            moves = {}
            for topic in (TOPIC, "__consumer_offsets"):
                for p, (_, replicas, _) in sorted(partition_metadata(cluster.bootstrap, topic).items()):
                    if p % 2 == 0:
                        moves[TopicPartition(topic, p)] = [*replicas[:-1], 4]
            assert all(e is None for e in admin.alter_partition_reassignments(moves).values())
            wait_for(lambda: _all_moved(admin), 120, "the moves onto broker 4")
            for tp, target in moves.items():
                assert partition_metadata(cluster.bootstrap, tp.topic)[tp.partition][1] == target
            time.sleep(2)
            emptied = subprocess.run(
                [
                    *(sys.executable, "-m", "client.cli", "partitions", "reassign"),
                    *("--decommission", "1", "--wait", "--bootstrap-server", cluster.bootstrap),
                ],
                capture_output=True,
                text=True,
                cwd=REPO,
                timeout=300,
            )
            assert emptied.returncode == 0, emptied.stdout + emptied.stderr
            time.sleep(3)
        finally:
            load.stop()
            admin.close()
        assert not load.errors, load.errors[:3]
        assert len(load.acked) > 5000
        seen = read_all(cluster.bootstrap, TOPIC, PARTITIONS)
        check_exactly_once(load.acked, seen)
        assert set(load.acked) <= load.seen, sorted(set(load.acked) - load.seen)[:5]
        assert load.longest_wait < SESSION_TIMEOUT_MS / 1000, load.longest_wait
        for topic in (TOPIC, "__consumer_offsets"):
            for p, (leader, replicas, isr) in partition_metadata(cluster.bootstrap, topic).items():
                assert 1 not in replicas and leader != 1 and 1 not in isr, (topic, p, replicas)
        wait_for(lambda: not any(cluster.brokers[1].data_dir.glob(f"{TOPIC}-*")), 30, "broker 1 empty")
        wait_for(lambda: _replicas_identical(cluster, TOPIC), 30, "identical replicas")
        print(f"acked {len(load.acked)}, longest consumer wait {load.longest_wait:.2f} s")
