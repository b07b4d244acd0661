"""Exactly-once consume-transform-produce through crashes (marker ``crash``: `make test-crash`).

100,000 input records; a confluent-kafka worker (tests/crash/eos_worker.py)
reads them read_committed, writes each one transformed and commits its
offsets in the same transaction. The worker is SIGKILLed 3 times and the
broker twice, at random moments, each restarted at once (the broker on the
same port and data directory). At the end the output topic, read
read_committed, holds every input record transformed exactly once: no loss,
no duplicate, in input order per partition.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.broker_process import REPO, BrokerProcess
from tests.compat.group_harness import create_topic
from tests.compat.test_transactions import read_all

pytestmark = [pytest.mark.crash, pytest.mark.timeout(900)]

TOTAL = 100_000
PARTITIONS = 4
ENV = {
    "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "MINIKAFKA_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "1000",
}


@pytest.fixture
def kbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", env=ENV).start()
    try:
        yield proc
    finally:
        proc.stop()


def _worker(bootstrap: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "tests.crash.eos_worker", bootstrap, str(TOTAL)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def test_exactly_once_through_kills(kbroker: BrokerProcess, tmp_path: Path) -> None:
    create_topic(kbroker.bootstrap, "in", PARTITIONS)
    create_topic(kbroker.bootstrap, "out", PARTITIONS)
    producer = Producer({"bootstrap.servers": kbroker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(TOTAL):
        producer.produce("in", f"record-{i}".encode(), key=str(i).encode(), partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0

    rng = random.Random(18)
    kills = ["worker", "worker", "worker", "broker", "broker"]
    rng.shuffle(kills)
    log = tmp_path / "worker.log"
    worker = _worker(kbroker.bootstrap, log)
    restarts = 0
    deadline = time.monotonic() + float(os.environ.get("EOS_DEADLINE_S", 600))
    while time.monotonic() < deadline:
        if kills:
            time.sleep(rng.uniform(0.5, 2.5))
        else:
            time.sleep(0.5)
        if worker.poll() is not None:
            if worker.returncode == 0:
                break
            restarts += 1  # it gave up after an error (e.g. the broker went away): start it again
            worker = _worker(kbroker.bootstrap, log)
            continue
        if kills:
            victim = kills.pop()
            if victim == "worker":
                worker.kill()
                worker.wait()
                worker = _worker(kbroker.bootstrap, log)
            else:
                kbroker.kill()
                kbroker.start(timeout=60)
    else:
        worker.send_signal(signal.SIGUSR1)  # where it is stuck, into its log
        time.sleep(1)
        worker.kill()
        stuck = "\n".join(line for line in log.read_text().splitlines() if not line.startswith("%"))
        pytest.fail(f"the worker did not finish; its log:\n{stuck[-4000:]}")
    assert not kills, "the worker finished before every kill happened: make TOTAL larger"

    out = read_all(kbroker.bootstrap, "read_committed", TOTAL, ("out",))
    want = sorted(f"RECORD-{i}".encode() for i in range(TOTAL))
    assert len(out) == len(want), f"{len(out)} records out of {TOTAL} ({restarts} worker restarts)"
    assert sorted(out) == want
