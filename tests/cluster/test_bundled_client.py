"""The bundled client and CLI against a three-broker cluster: leaders followed across a SIGKILL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from client.consumer import Consumer
from client.producer import Producer
from client.types import TopicPartition
from tests.broker_process import REPO
from tests.cluster.helpers import partition_metadata, wait_for_leaders
from tests.cluster_process import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def _cli(*argv: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "broker.cli", *argv],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_cli_and_bundled_client_follow_leaders(cluster: Cluster) -> None:
    bs = cluster.bootstrap
    _cli(
        "topics",
        "create",
        "bundled",
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--bootstrap-server",
        bs,
    )
    wait_for_leaders(bs, "bundled", 3, 3)
    described = json.loads(_cli("topics", "describe", "bundled", "--json", "--bootstrap-server", bs))
    parts = described[0]["partitions"]
    assert [sorted(p["replicas"]) for p in parts] == [[1, 2, 3]] * 3
    assert all(sorted(p["isr"]) == [1, 2, 3] and p["leader"] in (1, 2, 3) for p in parts)

    producer = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True})
    futures = [producer.send("bundled", value=b"%d" % n, key=b"%d" % n) for n in range(3000)]
    victim = partition_metadata(bs, "bundled")[0][0]
    cluster.kill(victim)
    futures += [producer.send("bundled", value=b"%d" % n, key=b"%d" % n) for n in range(3000, 6000)]
    producer.flush(90)
    acked = {(meta.partition, meta.offset) for meta in (f.get(60) for f in futures)}
    producer.close()
    assert len(acked) == 6000  # every send acknowledged, at distinct (partition, offset)

    alive = ",".join(b.bootstrap for n, b in cluster.brokers.items() if n != victim)
    consumer = Consumer({"bootstrap.servers": alive, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("bundled", p) for p in range(3)])
    keys: list[int] = []
    for _ in range(200):
        keys += [int(r.key) for r in consumer.poll(0.5)]
        if len(keys) >= 6000:
            break
    consumer.close()
    assert sorted(keys) == list(range(6000))
