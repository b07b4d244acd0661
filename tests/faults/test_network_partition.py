"""A partition leader cut off from ZooKeeper and its followers, with clients that still reach everyone.

Five hosts on one switch: ZooKeeper, three brokers, and the client host
where every test client runs. Topic RF 3, min.insync.replicas 2, one
partition; an idempotent acks=all producer writes numbered records
throughout. Cutting the leader off (iptables DROP both ways between it and
ZooKeeper and between it and each follower) must leave it unable to
acknowledge an acks=all write: it cannot shrink its ISR without ZooKeeper.
The majority side elects a new leader when the old one's session expires;
after healing, the old leader learns it was replaced, truncates what it had
appended alone, and every replica holds the same batches. No acknowledged
record may be missing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.cluster.helpers import check_exactly_once, replica_batches, wait_for
from tests.faults.client import RAW_KEY
from tests.faults.netns import Network

pytestmark = [pytest.mark.faults, pytest.mark.timeout(400)]

BROKERS = ["b1", "b2", "b3"]
SESSION_TIMEOUT_MS = 6000


def _json(res: subprocess.CompletedProcess[str]) -> object:
    return json.loads(res.stdout)


def test_cut_off_leader_acknowledges_nothing_it_could_lose(tmp_path: Path) -> None:
    with Network(["zk", *BROKERS, "client"]) as net:
        net.start_zookeeper("zk", tmp_path / "zookeeper")
        env = {
            "MINIKAFKA_ZOOKEEPER_CONNECT": f"{net.address('zk')}:2181",
            "MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "MINIKAFKA_REPLICA_LAG_TIME_MAX_MS": "5000",
            "MINIKAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "3",
        }
        data = {b: tmp_path / b / "data" for b in BROKERS}
        for node, b in enumerate(BROKERS, start=1):
            net.start_broker(b, data[b], {**env, "MINIKAFKA_NODE_ID": str(node)})
        bootstrap = ",".join(f"{net.address(b)}:9092" for b in BROKERS)
        net.python("client", "create", bootstrap, "cut", "1", "3", "2")
        leader = BROKERS[_json(net.python("client", "metadata", bootstrap, "cut"))["0"][0] - 1]
        others = [b for b in BROKERS if b != leader]

        producer = net.client("client", "produce", bootstrap, "cut", "0", "30000", "30")
        time.sleep(5)
        for other in ["zk", *others]:
            net.cut(leader, other)
        cut_at = time.monotonic()
        assert producer.poll() is None, "the producer finished before the partition"

        # Straight to the cut-off leader: it may append, but it must not acknowledge.
        answer = _json(net.python("client", "raw-produce", net.address(leader), "cut", "0", "4000"))
        assert answer["error_code"] != 0, "the cut-off leader acknowledged an acks=all write"

        majority = ",".join(f"{net.address(b)}:9092" for b in others)

        def new_leader() -> int:
            try:
                return int(_json(net.python("client", "metadata", majority, "cut"))["0"][0])
            except (RuntimeError, json.JSONDecodeError, KeyError):
                return -1

        wait_for(
            lambda: new_leader() not in (-1, BROKERS.index(leader) + 1), 60, "a leader on the majority side"
        )
        elected_in = time.monotonic() - cut_at
        time.sleep(5)  # the producer goes on writing to the new leader for a while
        net.heal()

        out, err = producer.communicate(timeout=240)
        assert producer.returncode == 0, err[-3000:]
        result = json.loads(out)
        acked = {int(n): tuple(where) for n, where in result["acked"].items()}
        assert acked, "nothing was acknowledged"

        def replicas_agree() -> bool:
            logs = [replica_batches(data[b], "cut", 0) for b in BROKERS]
            return all(batches == logs[0] for batches in logs)

        wait_for(replicas_agree, 60, "the old leader truncated and caught up: every replica the same")
        read = _json(net.python("client", "read", bootstrap, "cut", "1"))
        seen = {int(n): [tuple(w) for w in where] for n, where in read.items()}
        check_exactly_once(acked, seen)
        assert RAW_KEY not in seen  # appended by the cut-off leader alone: truncated after healing
        assert "truncating" in (data[leader].parent / f"{leader}.log").read_text(errors="replace")
        assert elected_in < SESSION_TIMEOUT_MS / 1000 + 15
