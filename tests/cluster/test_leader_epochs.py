"""The loss and divergence sequences of the 001 article (§3.3, §3.4), staged with SIGSTOP and SIGKILL.

Both run on a partition with two replicas, A (leader) and B, and
min.insync.replicas 1, the setting the article uses. The third broker is the
controller; it is paused while the sequence is staged and comes back only
after B leads, so that no controller sees B gone while A still lives and
takes B out of the ISR: B then becomes leader with whatever its log holds. A broker that truncated to its high watermark on restart
(§3.3) or a follower that kept records its new leader never had (§3.4) fails
these tests; leader epochs (§3.5) are what makes them pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from storage import naming
from tests.cluster.helpers import (
    Sender,
    check_exactly_once,
    controller_of,
    partition_metadata,
    read_all,
    replica_batches,
    wait_for,
)
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, zookeeper: ZooKeeperProcess) -> Iterator[Cluster]:
    """Three brokers whose HW checkpoint is written only at start and at clean shutdown.

    So a killed broker comes back with the HW of a partition created since
    its start at the log start offset: the lagging HW of §3.3, made certain
    instead of depending on where the 5 s checkpoint timer stood.
    """
    with Cluster(tmp_path, zookeeper, **{"replica.high.watermark.checkpoint.interval.ms": "3600000"}) as c:
        yield c


def _two_replica_topic(cluster: Cluster, name: str) -> tuple[int, int, int]:
    """Create ``name`` on the two non-controller brokers; (A the leader, B the follower, C the controller)."""
    c = controller_of(cluster)
    a, b = (n for n in cluster.brokers if n != c)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
    topic = NewTopic(name, 1, replica_assignment=[[a, b]], config={"min.insync.replicas": "1"})
    admin.create_topics([topic])[name].result(15)
    wait_for(
        lambda: partition_metadata(cluster.bootstrap, name).get(0, (-1, [], []))[::2] == (a, [a, b]),
        30,
        f"{name}: broker {a} leading with {b} in sync",
    )
    return a, b, c


def _leader_seen_by(cluster: Cluster, node: int, topic: str) -> int:
    try:
        return partition_metadata(cluster.brokers[node].bootstrap, topic)[0][0]
    except Exception:
        return -1


def _same_batches(cluster: Cluster, topic: str, a: int, b: int) -> bool:
    ours = replica_batches(cluster.brokers[a].data_dir, topic, 0)
    return ours == replica_batches(cluster.brokers[b].data_dir, topic, 0) and bool(ours)


def test_s33_a_restarted_follower_keeps_records_above_its_high_watermark(cluster: Cluster) -> None:
    """§3.3: B restarts while its HW lags, then A dies and B leads: no acknowledged record may be gone."""
    a, b, c = _two_replica_topic(cluster, "s33")
    sender = Sender(cluster.bootstrap, "s33", **{"linger.ms": 0})
    sender.send(range(30000))
    wait_for(lambda: sender.producer.poll(0.1) is not None and len(sender.acked) >= 5000, 60, "acks")
    cluster.pause(c)
    cluster.pause(a)  # the leader freezes with acks just sent: B learns of the last HW only on its next fetch
    sender.producer.poll(1)
    acked_before = dict(sender.acked)
    assert acked_before

    cluster.kill(b)
    checkpoint = (cluster.brokers[b].data_dir / naming.REPLICATION_OFFSET_CHECKPOINT).read_text()
    assert "s33 0 " not in checkpoint  # the staging worked: B comes back with HW 0 below acked records
    cluster.restart(b)  # comes back with its HW behind its log end; A cannot answer it
    # C's and A's sessions expire: B becomes controller, finds A gone and elects itself from the ISR.
    wait_for(lambda: _leader_seen_by(cluster, b, "s33") == b, 60, f"broker {b} elected")
    cluster.kill(a)
    cluster.kill(c)
    cluster.restart(c)

    sender.send(range(30000, 35000))  # the retried tail and new records go to B
    sender.flush()
    cluster.restart(a)
    wait_for(lambda: _same_batches(cluster, "s33", a, b), 60, "A and B holding the same batches")
    check_exactly_once(sender.acked, read_all(cluster.bootstrap, "s33", 1))
    assert not sender.errors


def test_s34_a_returning_leader_drops_what_the_new_leader_never_had(cluster: Cluster) -> None:
    """§3.4: A holds records B lacks, both die, B leads and takes new writes: A must truncate, not diverge."""
    a, b, c = _two_replica_topic(cluster, "s34")
    sender = Sender(cluster.bootstrap, "s34")
    sender.send(range(5000))
    sender.flush()

    cluster.pause(c)
    cluster.pause(b)
    lone = Producer({"bootstrap.servers": cluster.brokers[a].bootstrap, "acks": 1, "logger": QUIET})
    for n in range(1_000_000, 1_000_200):
        lone.produce("s34", key=str(n).encode(), value=b"only on A")
    assert lone.flush(15) == 0  # acknowledged by A alone (acks=1): B never fetched them
    cluster.pause(a)
    ahead = replica_batches(cluster.brokers[a].data_dir, "s34", 0)
    behind = replica_batches(cluster.brokers[b].data_dir, "s34", 0)
    assert ahead[-1][1] > behind[-1][1]  # the staging worked: A's log is longer

    for node in (a, b, c):
        cluster.kill(node)
    cluster.restart(b)  # alone: it becomes controller and, once A's session is gone, elects itself
    wait_for(lambda: _leader_seen_by(cluster, b, "s34") == b, 60, f"broker {b} elected")
    cluster.restart(c)
    sender.send(range(5000, 10000))  # these take the offsets A's own records had
    sender.flush()

    cluster.restart(a)
    wait_for(lambda: _same_batches(cluster, "s34", a, b), 60, "A truncated and caught up with B")
    seen = read_all(cluster.bootstrap, "s34", 1)
    check_exactly_once(sender.acked, seen)
    assert not [n for n in seen if n >= 1_000_000]  # acks=1 records only A held are gone, as in Kafka
    assert not sender.errors
