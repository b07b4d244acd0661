"""Where replicas and leaderships sit, computed from a `ClusterSnapshot` without another request:
each broker's load (`broker_loads`), the leader imbalance as Kafka's controller computes it
(`leader_imbalance`), and how far each reassignment in progress has copied (`reassignment_rows`).

- A broker is *online* when the cluster lists it (DescribeCluster); one that a partition's
  replicas name but the cluster does not list is *offline* (stopped, crashed, or cut off from
  ZooKeeper), and shows without an address or sizes.
- Bytes on disk: the sum of the partition sizes the broker reported (DescribeLogDirs), None
  when it did not answer.
- Leader imbalance, as Kafka's controller (KafkaController.checkAndTriggerAutoLeaderRebalance,
  here broker/cluster/zk/elections.py `imbalance`): a partition's preferred leader is the first
  of its replicas; a broker's ratio is how many of the partitions it is preferred leader of are
  led by another broker (or by none), over how many it is preferred leader of; the controller
  moves them back when the ratio is above ``leader.imbalance.per.broker.percentage`` / 100.
  Every topic counts, internal ones too (Kafka leaves out only topics being deleted, which
  Metadata does not show).
- Reassignment progress: for each replica being added, the bytes it holds against its
  leader's (both from DescribeLogDirs), capped at 100 %; a replica already in the ISR has
  caught up whatever the bytes say. Unknown (None) when either broker did not answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from client.admin import PartitionReassignment
from client.errors import KafkaError
from client.types import TopicPartition
from console.gateway import ClusterSnapshot, PartitionRow


@dataclass(frozen=True)
class BrokerLoad:
    """One broker's row on the brokers page; ``host``/``port`` None when it is offline."""

    node_id: int
    online: bool
    controller: bool
    host: str | None
    port: int | None
    rack: str | None
    leaders: int  # partitions it leads
    replicas: int  # partitions it holds a replica of (by the assignment)
    bytes: int | None  # on disk, as it reported; None when unknown
    bytes_error: str | None  # why bytes is None


def _partitions(snap: ClusterSnapshot) -> list[PartitionRow]:
    return [p for t in snap.topics.values() for p in t.partitions]


def broker_loads(snap: ClusterSnapshot) -> list[BrokerLoad]:
    """Every live broker and every offline one that the assignment still names, by node id."""
    leaders: dict[int, int] = {}
    replicas: dict[int, int] = {}
    for p in _partitions(snap):
        if p.leader >= 0:
            leaders[p.leader] = leaders.get(p.leader, 0) + 1
        for r in set(p.replicas):
            replicas[r] = replicas.get(r, 0) + 1
    live = {b.node_id: b for b in snap.brokers}
    out = []
    for node in sorted(set(live) | set(replicas)):
        b = live.get(node)
        answer = snap.log_dirs.get(node)
        if isinstance(answer, KafkaError):
            size, why = None, str(answer)
        elif answer is None:
            size, why = None, "offline" if b is None else "not asked"
        else:
            size, why = sum(answer.values()), None
        out.append(
            BrokerLoad(
                node,
                b is not None,
                node == snap.controller_id,
                b.host if b else None,
                b.port if b else None,
                b.rack if b else None,
                leaders.get(node, 0),
                replicas.get(node, 0),
                size,
                why,
            )
        )
    return out


@dataclass(frozen=True)
class Imbalance:
    """A broker's preferred leaderships: ``preferred`` partitions list it first, ``elsewhere`` of
    them are led by another broker (or have no leader)."""

    node_id: int
    online: bool
    preferred: int
    elsewhere: int

    @property
    def ratio(self) -> float | None:
        return self.elsewhere / self.preferred if self.preferred else None

    @property
    def percent(self) -> float | None:
        return None if self.ratio is None else self.ratio * 100

    def above(self, percentage: int) -> bool:
        """Whether Kafka's controller would move this broker's leaderships back (ratio > percentage)."""
        return self.ratio is not None and self.ratio > percentage / 100


def leader_imbalance(snap: ClusterSnapshot) -> list[Imbalance]:
    """Per broker (live ones, and offline ones the assignment names), by node id."""
    preferred: dict[int, int] = {}
    elsewhere: dict[int, int] = {}
    named: set[int] = set()
    for p in _partitions(snap):
        named.update(p.replicas)
        if not p.replicas:
            continue
        first = p.replicas[0]
        preferred[first] = preferred.get(first, 0) + 1
        if p.leader != first:
            elsewhere[first] = elsewhere.get(first, 0) + 1
    live = {b.node_id for b in snap.brokers}
    return [
        Imbalance(node, node in live, preferred.get(node, 0), elsewhere.get(node, 0))
        for node in sorted(live | named)
    ]


@dataclass(frozen=True)
class ReplicaProgress:
    """A replica being added: its bytes against the leader's (None: unknown, ``why`` says why)."""

    node_id: int
    bytes: int | None
    leader_bytes: int | None
    in_sync: bool
    why: str | None

    @property
    def percent(self) -> float | None:
        if self.in_sync:
            return 100.0
        if self.bytes is None or self.leader_bytes is None:
            return None
        if self.leader_bytes <= 0:
            return 100.0  # nothing to copy
        return min(self.bytes * 100 / self.leader_bytes, 100.0)


@dataclass(frozen=True)
class ReassignmentRow:
    tp: TopicPartition
    leader: int | None  # None: the snapshot does not know the partition (yet)
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    progress: tuple[ReplicaProgress, ...]  # of each replica being added


def _size_on(
    snap: ClusterSnapshot, live: set[int], node: int, tp: TopicPartition, *, leader: bool = False
) -> tuple[int | None, str | None]:
    """Bytes of ``tp``'s replica on ``node``, or None and why. A replica being added that the
    broker does not report yet holds 0 bytes; a leader that does not report it, unknown."""
    if node not in live:
        return None, f"broker {node} is offline"
    answer = snap.log_dirs.get(node)
    if answer is None:
        return None, f"broker {node} was not asked"
    if isinstance(answer, KafkaError):
        return None, str(answer)
    if tp not in answer:
        return (None, f"leader {node} does not report the partition") if leader else (0, None)
    return answer[tp], None


def reassignment_rows(
    snap: ClusterSnapshot, ongoing: Mapping[TopicPartition, PartitionReassignment]
) -> list[ReassignmentRow]:
    """The reassignments in progress with their progress, by topic and partition."""
    index = {TopicPartition(p.topic, p.partition): p for p in _partitions(snap)}
    live = {b.node_id for b in snap.brokers}
    out = []
    for tp in sorted(ongoing):
        moving = ongoing[tp]
        part = index.get(tp)
        leader = part.leader if part is not None else None
        if leader is None or leader < 0:
            leader_bytes, leader_why = (
                None,
                "the partition has no leader" if part else "not in the snapshot yet",
            )
        else:
            leader_bytes, leader_why = _size_on(snap, live, leader, tp, leader=True)
        progress = []
        for node in moving.adding:
            size, why = _size_on(snap, live, node, tp)
            in_sync = part is not None and node in part.isr
            progress.append(ReplicaProgress(node, size, leader_bytes, in_sync, why or leader_why))
        out.append(
            ReassignmentRow(
                tp,
                leader,
                moving.replicas,
                moving.target,
                moving.adding,
                moving.removing,
                tuple(progress),
            )
        )
    return out
