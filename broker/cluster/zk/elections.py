"""Leader elections asked for (ElectLeaders) or due to leader imbalance, as pure functions of a snapshot.

Kafka's ZK-mode controller rules (KafkaController.processReplicaLeaderElection,
checkAndTriggerAutoLeaderRebalance):

- PREFERRED: the first replica in assignment order leads, if it is alive and
  in the ISR (ISR unchanged, epoch + 1). Already leading: ELECTION_NOT_NEEDED;
  not alive or not in sync: PREFERRED_LEADER_NOT_AVAILABLE.
- UNCLEAN: only for a partition with no live leader; the first live ISR
  member in assignment order leads (ISR = the live ISR), else the first live
  replica (ISR = itself: records it lacks are lost, which is what the operator
  asked for). A live leader: ELECTION_NOT_NEEDED; no live replica:
  ELIGIBLE_LEADERS_NOT_AVAILABLE.
- Unknown partitions: UNKNOWN_TOPIC_OR_PARTITION; topics being deleted:
  INVALID_TOPIC_EXCEPTION.
- Leader imbalance (``auto.leader.rebalance.enable``): every
  ``leader.imbalance.check.interval.seconds`` (first 5 s after a controller
  takes over), for each broker, the share of the partitions it is preferred
  leader of that someone else leads; above
  ``leader.imbalance.per.broker.percentage`` those whose preferred replica may
  lead get a PREFERRED election.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.cluster.zk.controller import StateWrite, offline_election
from broker.cluster.zk.snapshot import Snapshot, TopicPartition
from broker.cluster.zk.znodes import LeaderAndIsr
from protocol.errors import ErrorCode

PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}
FIRST_CHECK_S = 5.0  # Kafka's delay before a new controller's first imbalance check


@dataclass(frozen=True, slots=True)
class LeaderBalance:
    """The broker settings behind automatic leader moves."""

    auto_rebalance: bool = True  # auto.leader.rebalance.enable
    check_interval_s: float = 300.0  # leader.imbalance.check.interval.seconds
    imbalance_percentage: int = 10  # leader.imbalance.per.broker.percentage
    unclean: bool = False  # unclean.leader.election.enable, the default for topics without their own


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an election of one partition came to: an error code (0: elected) and, if elected, the write."""

    error: int
    message: str | None = None
    write: StateWrite | None = None


def elect(snap: Snapshot, tp: TopicPartition, election_type: int, controller_epoch: int) -> Outcome:
    """The outcome of electing ``tp``'s leader by ``election_type`` (PREFERRED or UNCLEAN) in ``snap``."""
    topic, index = tp
    replicas = snap.assignments.get(topic, {}).get(index)
    record = snap.states.get(tp)
    if replicas is None or record is None:
        return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    if topic in snap.deleting:
        return Outcome(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    state, live = record.state, set(snap.brokers)
    if not replicas:  # a malformed assignment: no replica to elect
        code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED else None
        return Outcome(code or ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"{topic}-{index} has no replicas")
    if election_type == PREFERRED:
        preferred = replicas[0]
        if state.leader == preferred:
            return Outcome(ErrorCode.ELECTION_NOT_NEEDED)
        if preferred not in live or preferred not in state.isr:
            return Outcome(
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                f"Failed to elect leader for partition {topic}-{index} under strategy "
                f"PreferredReplicaPartitionLeaderElectionStrategy: replica {preferred} is "
                + ("not alive" if preferred not in live else "not in sync"),
            )
        leader, isr = preferred, state.isr
    else:
        if state.leader in live:
            return Outcome(ErrorCode.ELECTION_NOT_NEEDED)
        picked = offline_election(state, replicas, live, unclean=True)
        if picked is None:
            return Outcome(
                ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                f"Failed to elect leader for partition {topic}-{index}: no replica is alive",
            )
        leader, isr = picked
    new = LeaderAndIsr(leader, state.leader_epoch + 1, isr, controller_epoch)
    return Outcome(ErrorCode.NONE, None, StateWrite(tp, new, record.version))


def imbalance(snap: Snapshot) -> dict[int, tuple[list[TopicPartition], int]]:
    """{preferred broker: (its partitions that another broker leads, how many partitions it is preferred
    leader of)}, over the partitions that have a state and whose topic is not being deleted."""
    out: dict[int, tuple[list[TopicPartition], int]] = {}
    deleting = set(snap.deleting)
    for topic, assignment in snap.assignments.items():
        if topic in deleting:
            continue
        for index, replicas in assignment.items():
            record = snap.states.get((topic, index))
            if not replicas or record is None:
                continue
            moved, total = out.setdefault(replicas[0], ([], 0))
            if record.state.leader != replicas[0]:
                moved.append((topic, index))
            out[replicas[0]] = (moved, total + 1)
    return out


def imbalanced_partitions(snap: Snapshot, percentage: int) -> list[TopicPartition]:
    """Partitions a leader-imbalance check moves back to their preferred replica: those of every
    broker whose imbalance ratio is above ``percentage`` and whose preferred replica is alive and in sync."""
    live = set(snap.brokers)
    out: list[TopicPartition] = []
    for broker, (moved, total) in sorted(imbalance(snap).items()):
        if len(moved) / total <= percentage / 100:
            continue
        for tp in moved:
            if broker in live and broker in snap.states[tp].state.isr:
                out.append(tp)
    return sorted(out)
