"""`cluster` suite: three brokers on a real ZooKeeper, beside one broker, in the same run.

- produce: 100 B records with kcat (two processes) to 8 partitions, RF 3 and
  acks=all on the cluster, against RF 1 and acks=1 on a single broker with
  the same file and processes (goal: ratio >= 0.4; the three brokers and
  kcat share two cores);
- consume: kcat reading that topic back from the cluster, beside reading the
  single broker's;
- failover: SIGKILL of a partition's leader to the first acks=all record
  acknowledged by the new one, over several trials (goal: p50 under the
  ZooKeeper session timeout + 1 s), with confluent-kafka and with the
  bundled client. The killed broker is restarted and back in the ISR before
  the next trial.

Run alone: ``python -m bench.cluster [--records N] [--trials K]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench import loadgen  # noqa: E402
from tests.broker_process import BrokerProcess  # noqa: E402
from tests.cluster.helpers import partition_metadata, wait_for_leaders  # noqa: E402
from tests.cluster_process import QUIET, SESSION_TIMEOUT_MS, Cluster, ZooKeeperProcess  # noqa: E402

Row = tuple[str, float, str]
PARTITIONS = 8
PRODUCERS = 2


def _topic(bootstrap: str, name: str, partitions: int, rf: int, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    admin.create_topics([NewTopic(name, partitions, rf, config=configs)])[name].result(30)
    wait_for_leaders(bootstrap, name, partitions, rf)


def _produce_and_consume(
    bootstrap: str, topic: str, files: list[Path], n: int, acks: str
) -> tuple[float, float]:
    produced = loadgen.kcat_produce(bootstrap, topic, files, n, acks)
    stored = loadgen.stored_records(bootstrap, topic, PARTITIONS)
    if stored != n:
        raise RuntimeError(f"{topic}: {stored} records stored of {n} sent")
    return produced, loadgen.kcat_consume(bootstrap, topic, n).rate


def _failover(cluster: Cluster, trials: int, client: str) -> list[float]:
    """Seconds from SIGKILL of the leader of ``fo``-0 (RF 3) to the first acks=all record acknowledged after.

    ``client``: ``confluent`` (librdkafka) or ``bundled`` (client/), both with
    short retry and reconnect backoffs so their own backoffs (up to 1 s by
    default) stay out of the figure. librdkafka still looks for a new leader
    only on its 1 s topic scan, which starts when the producer does: killing
    right after the warm-up record would put every scan at the same point
    (about 0.95 s past each whole second after the kill) and the figure on
    whole seconds; a random wait of up to 1 s before the kill spreads the
    scans as a real client's would be. The bundled client refreshes metadata
    on every retry.
    """
    times = []
    rng = random.Random(trials)
    for _ in range(trials):
        sender = _confluent_sender if client == "confluent" else _bundled_sender
        send, close = sender(cluster.bootstrap)
        send(b"warm")
        leader = partition_metadata(cluster.bootstrap, "fo")[0][0]
        time.sleep(rng.uniform(0, 1))  # the kill at a random point of the client's 1 s timers
        cluster.kill(leader)
        killed = time.monotonic()
        times.append(send(b"after") - killed)
        close()
        cluster.restart(leader)
        wait_for_leaders(cluster.bootstrap, "fo", 1, 3)
    return times


Sender = tuple[Callable[[bytes], float], Callable[[], object]]  # (send one record: ack time, close)


def _confluent_sender(bootstrap: str) -> Sender:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": 60000,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 100,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 100,
            "logger": QUIET,
        }
    )

    def send(value: bytes) -> float:
        acked: list[float] = []
        producer.produce("fo", value, partition=0, on_delivery=lambda _e, _m: acked.append(time.monotonic()))
        assert producer.flush(60) == 0 and acked
        return acked[0]

    return send, lambda: None


def _bundled_sender(bootstrap: str) -> Sender:
    from client.producer import Producer as BundledProducer

    producer = BundledProducer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "delivery.timeout.ms": 60000,
            "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 100,
        }
    )

    def send(value: bytes) -> float:
        producer.send("fo", value=value, partition=0).get(60)
        return time.monotonic()

    return send, producer.close


def run(records: int = 1_000_000, size: int = 100, trials: int = 5) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = loadgen.split(loadgen.record_file(root, records, size), PRODUCERS)

        (root / "single").mkdir()
        single = BrokerProcess(root / "single" / "data", extra=["--log-level", "WARNING"]).start()
        try:
            _topic(single.bootstrap, "rf1", PARTITIONS, 1)
            rf1_produce, rf1_consume = _produce_and_consume(single.bootstrap, "rf1", files, records, "1")
        finally:
            single.stop()

        with ZooKeeperProcess(root / "zookeeper") as zk, Cluster(root / "cluster", zk) as c:
            _topic(c.bootstrap, "rf3", PARTITIONS, 3, **{"min.insync.replicas": "2"})
            rf3_produce, rf3_consume = _produce_and_consume(c.bootstrap, "rf3", files, records, "all")
            _topic(c.bootstrap, "fo", 1, 3, **{"min.insync.replicas": "2"})
            failovers = _failover(c, trials, "confluent")
            bundled = _failover(c, trials, "bundled")

    goal = SESSION_TIMEOUT_MS / 1000 + 1
    rows += [
        (f"produce {size} B, {PARTITIONS} partitions, RF 3 acks=all, 3 brokers", rf3_produce, "records/s"),
        (f"  baseline: RF 1 acks=1, one broker, same {PRODUCERS} kcat processes", rf1_produce, "records/s"),
        ("  RF 3 acks=all / RF 1 acks=1 (goal >= 0.4)", rf3_produce / rf1_produce, "x"),
        ("consume the RF 3 topic from the cluster (kcat)", rf3_consume, "records/s"),
        ("  baseline: consume the RF 1 topic from one broker", rf1_consume, "records/s"),
        ("  cluster / one broker", rf3_consume / rf1_consume, "x"),
        (
            f"failover (SIGKILL of the leader to the next acks=all ack), confluent-kafka, p50 of {trials}",
            statistics.median(failovers),
            "s",
        ),
        (f"  worst of {trials}", max(failovers), "s"),
        (f"failover, bundled client, p50 of {trials}", statistics.median(bundled), "s"),
        (f"  worst of {trials}", max(bundled), "s"),
        (f"  goal: session timeout ({SESSION_TIMEOUT_MS} ms) + 1 s", goal, "s"),
    ]
    print()
    print(f"{'cluster (ZooKeeper + 3 brokers on this machine)':<74} {'value':>12} unit")
    for name, value, unit in rows:
        print(f"{name:<74} {value:>12,.2f} {unit}")
    print(f"failover trials, confluent-kafka (s): {', '.join(f'{t:.2f}' for t in failovers)}")
    print(f"failover trials, bundled client (s): {', '.join(f'{t:.2f}' for t in bundled)}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    run(records=args.records, trials=args.trials)


if __name__ == "__main__":
    main()
