"""A single broker SIGKILLed between PrepareCommit and the markers (marker ``crash``: `make test-crash`).

The broker runs under tests/crash/held_markers.py, which delays the coordinator's
marker writing, so the kill lands where the transaction's PrepareCommit record is
durable, the producer has been told its commit succeeded, and no partition has a
marker yet (checked in the segment files). The broker restarted the normal way on
the same data directory replays PrepareCommit from `__transaction_state`, writes
the markers, and the commit happens: a read_committed confluent-kafka consumer
sees every record, DescribeTransactions shows CompleteCommit, and the same
transactional id can run its next transaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from client.admin import AdminClient
from protocol.records import scan_valid_prefix
from tests.broker_process import BrokerProcess
from tests.cluster.helpers import wait_for
from tests.compat.group_harness import create_topic
from tests.compat.test_transactions import read_all

pytestmark = [pytest.mark.crash, pytest.mark.timeout(180)]

TOPIC = "prepared"
PARTITIONS = 3
TXN_ID = "prepared-then-killed"


def _markers(data_dir: Path) -> int:
    """COMMIT/ABORT markers in the topic's segment files."""
    count = 0
    for p in range(PARTITIONS):
        for path in (data_dir / f"{TOPIC}-{p}").glob("*.log"):
            headers, _ = scan_valid_prefix(path.read_bytes())
            count += sum(1 for h in headers if h.is_control)
    return count


def _state(bootstrap: str) -> str | None:
    try:
        with AdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000) as admin:
            return getattr(admin.describe_transactions([TXN_ID])[TXN_ID], "state", None)
    except Exception:
        return None


def test_commit_completes_after_a_crash_between_prepare_and_markers(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    held = BrokerProcess(data_dir, module="tests.crash.held_markers").start()
    port = held.port
    try:
        create_topic(held.bootstrap, TOPIC, PARTITIONS)
        producer = Producer({"bootstrap.servers": held.bootstrap, "transactional.id": TXN_ID, "linger.ms": 0})
        producer.init_transactions(30)
        producer.begin_transaction()
        values = [f"prepared-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(5)]
        for i, value in enumerate(values):
            producer.produce(TOPIC, value, partition=i // 5)
        producer.commit_transaction(30)  # answered once PrepareCommit is durable
        assert _state(held.bootstrap) == "PrepareCommit"
        assert _markers(data_dir) == 0  # the markers are held back
        assert read_all(held.bootstrap, "read_committed", 0, (TOPIC,)) == []
    finally:
        held.kill()

    broker = BrokerProcess(data_dir, port=port).start()
    try:
        wait_for(lambda: _state(broker.bootstrap) == "CompleteCommit", 30, "the replayed commit to complete")
        assert _markers(data_dir) == PARTITIONS
        assert sorted(read_all(broker.bootstrap, "read_committed", len(values), (TOPIC,))) == sorted(values)
        # The producer (still the id's current epoch) goes on with its next transaction.
        producer.begin_transaction()
        producer.produce(TOPIC, b"after-restart", partition=0)
        producer.commit_transaction(60)
        got = read_all(broker.bootstrap, "read_committed", len(values) + 1, (TOPIC,))
        assert sorted(got) == sorted([*values, b"after-restart"])
    finally:
        assert broker.stop() == 0, broker.log()
