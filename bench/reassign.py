"""`reassign` suite: how fast a reassignment copies a partition, and what a throttled one costs producers.

Three brokers on a real ZooKeeper; one partition of ``MB`` megabytes (1 KB
records written by kcat with acks=1) on brokers 1 and 2.

- follower catch-up (the baseline): broker 2 is paused (SIGSTOP) while the
  partition is written, then resumed; bytes / time until its copy is as long
  as the leader's is the follower fetch rate;
- reassignment, unthrottled: the partition moves from [1, 2] to [1, 3]
  (broker 3 holds nothing of it); bytes / time from the new replica's first
  byte to its last (goal: >= 0.5 of the follower rate), and the whole move's
  time from AlterPartitionReassignments to its end (the ZooKeeper round trips
  of starting, joining the ISR and completing come on top of the copy);
- throttled: the move back to [1, 2], with ``leader.`` and
  ``follower.replication.throttled.rate`` at ``THROTTLE`` bytes/s on every
  broker and the throttled-replicas topic configs kafka-reassign-partitions
  sets; the copy rate against the throttle (measured from 12 s in: Kafka's
  rate counts at least ten one-second windows, so a fresh throttle admits a
  burst), and the p99 of an acks=all
  producer (200 records/s to an RF 3 topic, in a process of its own) during
  the move against the same producer with nothing moving. Both windows
  start with the kernel's dirty pages written out (``os.sync``): the record
  file and the copies made before the throttled move (three times ``MB``)
  would otherwise reach the disk 30 s after they were written
  (``vm.dirty_expire_centisecs``), inside the move's window, and every
  acks=all fsync waits behind that burst (measured: 70-180 MB bursts, fsyncs
  of 80-150 ms), which is the setup's cost, not the move's.

Run alone: ``python -m bench.reassign [--mb N]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient as ConfluentAdmin  # noqa: E402
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

from bench import loadgen  # noqa: E402
from client.admin import AdminClient  # noqa: E402
from client.types import TopicPartition  # noqa: E402
from tests.cluster.helpers import partition_metadata, wait_for, wait_for_leaders  # noqa: E402
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess  # noqa: E402

Row = tuple[str, float, str]
TOPIC = "copied"
RECORD = 1000
THROTTLE = 5 * 1024 * 1024
STEADY_AFTER_S = 12.0  # Kafka's rate counts at least 10 windows: a fresh throttle admits a burst
PRODUCE_RATE = 200


def _log_bytes(cluster: Cluster, node: int) -> int:
    return sum(f.stat().st_size for f in (cluster.brokers[node].data_dir / f"{TOPIC}-0").glob("*.log"))


def _set(admin: ConfluentAdmin, resources: list[ConfigResource]) -> None:
    for resource in resources:  # confluent-kafka sends one BROKER resource per call
        admin.incremental_alter_configs([resource])[resource].result(30)


def _throttle(
    admin: ConfluentAdmin, brokers: list[int], rate: int | None, leaders: str, followers: str
) -> None:
    """Kafka's throttle as kafka-reassign-partitions sets it (None: remove it)."""
    op = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
    _set(
        admin,
        [
            ConfigResource(
                ConfigResource.Type.BROKER,
                str(b),
                incremental_configs=[
                    ConfigEntry(key, str(rate or ""), incremental_operation=op)
                    for key in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
                ],
            )
            for b in brokers
        ]
        + [
            ConfigResource(
                ConfigResource.Type.TOPIC,
                TOPIC,
                incremental_configs=[
                    ConfigEntry("leader.replication.throttled.replicas", leaders, incremental_operation=op),
                    ConfigEntry(
                        "follower.replication.throttled.replicas", followers, incremental_operation=op
                    ),
                ],
            )
        ],
    )


def _probe(bootstrap: str, topic: str, stop: Any, out: Any) -> None:
    """In a process of its own: an acks=all producer at ``PRODUCE_RATE`` until ``stop`` is set;
    sends the list of its records' times to their acks (ms) on ``out``."""
    producer = Producer({"bootstrap.servers": bootstrap, "logger": QUIET, "acks": "all", "linger.ms": 0})
    ms: list[float] = []
    start = time.perf_counter()
    i = 0
    while not stop.is_set():
        due = start + i / PRODUCE_RATE
        if due > time.perf_counter():
            time.sleep(due - time.perf_counter())
        sent = time.perf_counter()
        producer.produce(
            topic,
            b"x" * 100,
            on_delivery=lambda err, _m, s=sent: (
                ms.append((time.perf_counter() - s) * 1000) if err is None else None
            ),
        )
        producer.poll(0)
        i += 1
    producer.flush(30)
    out.send(ms)


class Latencies:
    """An acks=all producer at a fixed rate, in a process of its own (so this process's polling and
    sampling do not show in its latencies), noting each record's time to its ack."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.ms: list[float] = []
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self._receive, send = ctx.Pipe(duplex=False)
        self._process = ctx.Process(target=_probe, args=(bootstrap, topic, self._stop, send), daemon=True)

    def __enter__(self) -> Latencies:
        self._process.start()
        time.sleep(2.0)  # the probe's start-up (interpreter, metadata) is not part of the measure
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._receive.poll(60):
            self.ms = self._receive.recv()
        self._process.join(30)


class Growth:
    """Samples a broker's replica of the partition every 0.5 s while it is copied."""

    def __init__(self, cluster: Cluster, node: int, every_s: float = 0.5) -> None:
        self.samples: list[tuple[float, int]] = []
        self._cluster, self._node, self._every_s = cluster, node, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), _log_bytes(self._cluster, self._node)))
            time.sleep(self._every_s)

    def steady_rate(self) -> float:
        """Bytes/s from ``STEADY_AFTER_S`` into the copy to its last second (the burst left out)."""
        start = self.samples[0][0]
        end = self.samples[-1][0]
        window = [(t, b) for t, b in self.samples if start + STEADY_AFTER_S <= t <= end - 1.0]
        if len(window) < 4:
            raise RuntimeError("the throttled copy ended before its steady state: raise --mb")
        return (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])

    def copy_rate(self, size: int) -> float:
        """Bytes/s from the first byte of the copy to its last (the control round trips left out)."""
        first = next(t for t, b in self.samples if b > 0)
        last = next(t for t, b in self.samples if b >= size)
        return size / max(last - first, self._every_s)

    def __enter__(self) -> Growth:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def _move(admin: AdminClient, target: list[int], poll_s: float = 0.05) -> float:
    """Seconds from asking for the move to its end (polled every ``poll_s``)."""
    started = time.monotonic()
    errors = admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): target})
    if any(e is not None for e in errors.values()):
        raise RuntimeError(f"reassignment refused: {errors}")
    while admin.list_partition_reassignments():
        time.sleep(poll_s)
    return time.monotonic() - started


def run(mb: int = 200) -> list[Row]:
    records = mb * 1024 * 1024 // RECORD
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = loadgen.record_file(root, records, RECORD)
        with ZooKeeperProcess(root / "zookeeper") as zk, Cluster(root / "cluster", zk) as c:
            confluent = ConfluentAdmin({"bootstrap.servers": c.bootstrap, "logger": QUIET})
            confluent.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2]])])[TOPIC].result(30)
            confluent.create_topics([NewTopic("acks", 1, 3)])["acks"].result(30)
            wait_for_leaders(c.bootstrap, TOPIC, 1, 2)
            wait_for_leaders(c.bootstrap, "acks", 1, 3)

            os.sync()
            with Latencies(c.bootstrap, "acks") as quiet:
                time.sleep(15)
            c.pause(2)  # its fetcher stops where it is; its ZooKeeper session outlives the pause
            loadgen.kcat_produce(c.brokers[1].bootstrap, TOPIC, [path], records, "1")
            size = _log_bytes(c, 1)
            resumed = time.monotonic()
            c.resume(2)
            while _log_bytes(c, 2) < size:
                time.sleep(0.01)
            catch_up = size / (time.monotonic() - resumed)
            wait_for(lambda: 2 in partition_metadata(c.bootstrap, TOPIC)[0][2], 60, "broker 2 in the ISR")

            admin = AdminClient(bootstrap_servers=c.bootstrap)
            try:
                with Growth(c, 3, every_s=0.01) as growth:
                    moved_in = _move(admin, [1, 3])
                    wait_for(lambda: _log_bytes(c, 3) >= size, 30, "the whole copy")
                unthrottled = growth.copy_rate(size)
                time.sleep(5)  # broker 2 deletes its replica
                _throttle(confluent, [1, 2, 3], THROTTLE, "0:1,0:3", "0:2")
                os.sync()
                with Latencies(c.bootstrap, "acks") as moving, Growth(c, 2) as growth:
                    _move(admin, [1, 2], poll_s=1.0)  # the producer beside it shares this process
                throttled = growth.steady_rate()
                _throttle(confluent, [1, 2, 3], None, "", "")
            finally:
                admin.close()

    p99_quiet = loadgen.percentile(quiet.ms, 0.99)
    p99_moving = loadgen.percentile(moving.ms, 0.99)
    rows: list[Row] = [
        (f"follower catch-up of {mb} MB (paused follower resumed)", catch_up / 1e6, "MB/s"),
        ("reassignment copy, unthrottled (first byte to last)", unthrottled / 1e6, "MB/s"),
        ("  reassignment / follower catch-up (goal >= 0.5)", unthrottled / catch_up, "x"),
        ("  the whole move, AlterPartitionReassignments to its end", moved_in, "s"),
        (f"reassignment copy, throttled to {THROTTLE / 1e6:.1f} MB/s", throttled / 1e6, "MB/s"),
        ("  steady throttled copy / throttle (goal 0.9-1.1)", throttled / THROTTLE, "x"),
        (f"acks=all producer p99, {PRODUCE_RATE} records/s, nothing moving", p99_quiet, "ms"),
        ("  during the throttled move", p99_moving, "ms"),
        ("  during / nothing moving (goal <= 2)", p99_moving / p99_quiet, "x"),
        ("acks=all producer p50, nothing moving", loadgen.percentile(quiet.ms, 0.5), "ms"),
        ("  during the throttled move", loadgen.percentile(moving.ms, 0.5), "ms"),
    ]
    print()
    print(f"{'reassign (ZooKeeper + 3 brokers on this machine)':<74} {'value':>12} unit")
    for name, value, unit in rows:
        print(f"{name:<74} {value:>12,.2f} {unit}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.reassign")
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    run(mb=args.mb)


if __name__ == "__main__":
    main()
