"""Partition reassignment as Kafka's ZK-mode controller runs it, as pure functions of a metadata snapshot.

Kafka's terms (KafkaController.onPartitionReassignment): RS the partition's
replicas, AR those being added, RR those being removed; the original
replicas are RS - AR and the target ones RS - RR.

- Starting (AlterPartitionReassignments, or an entry of
  ``/admin/reassign_partitions``) writes RS = the target followed by the
  original replicas not in it, AR = RS - original, RR = RS - target into the
  topic znode. A reassignment that replaces one in progress starts from the
  same original replicas; replicas of the old one that are in neither leave
  at once (`Change.state`). Cancelling is a reassignment back to the original
  replicas, so it completes at once.
- The brokers in AR create their replica when they see the new assignment
  and copy it from the leader; the leader adds each to the ISR once caught up.
- Complete when every target replica is in the ISR: one ZooKeeper
  transaction writes RS = the target with no AR/RR and the partition state:
  the leader stays if it is a target replica and alive, else the first
  target replica that is alive and in the ISR leads (none: the reassignment
  waits); the ISR keeps only target replicas; leader epoch + 1. Brokers no
  longer assigned the partition stop serving it and delete their replica.
- Answers as Kafka's controller gives them, in its order:
  INVALID_REPLICA_ASSIGNMENT (empty, duplicate or negative ids; added
  replicas on brokers that are not alive), NO_REASSIGNMENT_IN_PROGRESS
  (cancelling none, of a partition that may not exist),
  UNKNOWN_TOPIC_OR_PARTITION (no such partition, or its topic is being
  deleted), and, as Kafka 4's
  ``allowReplicationFactorChange`` = false asks, INVALID_REPLICATION_FACTOR
  for a target of another size than the original replicas.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.cluster.assignment import FullAssignment
from broker.cluster.zk.controller import StateWrite
from broker.cluster.zk.snapshot import Snapshot, TopicPartition
from broker.cluster.zk.znodes import LeaderAndIsr
from protocol.errors import ErrorCode

Answer = tuple[int, str | None]  # (error code, message)


def current(snap: Snapshot, tp: TopicPartition) -> FullAssignment | None:
    """``tp``'s assignment in ``snap``; None if there is no such partition."""
    replicas = snap.assignments.get(tp[0], {}).get(tp[1])
    if replicas is None:
        return None
    return FullAssignment(tuple(replicas), tuple(snap.adding.get(tp, ())), tuple(snap.removing.get(tp, ())))


def reassigning(snap: Snapshot) -> dict[TopicPartition, FullAssignment]:
    """Every partition being reassigned in ``snap``."""
    out = {}
    for tp in sorted({*snap.adding, *snap.removing}):
        assignment = current(snap, tp)
        if assignment is not None and tp[0] not in snap.deleting:
            out[tp] = assignment
    return out


@dataclass(frozen=True, slots=True)
class Change:
    """One partition's new assignment and the state write that goes with it (None: none needed)."""

    tp: TopicPartition
    assignment: FullAssignment
    state: StateWrite | None


def start(
    snap: Snapshot,
    tp: TopicPartition,
    target: list[int] | None,
    controller_epoch: int,
    *,
    allow_rf_change: bool = True,
) -> Change | Answer:
    """The change that starts (or, ``target`` None, cancels) the reassignment of ``tp``, or the error
    answer that refuses it."""
    # Kafka's order (processApiPartitionReassignment): the replicas are checked first, against the
    # partition's assignment (none for an unknown one); then cancelling needs a reassignment under
    # way; then the partition must exist outside a deletion
    assignment = current(snap, tp)
    if target is None:
        if assignment is None or not assignment.reassigning:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
        wanted = assignment.origin
    else:
        refused = _invalid(assignment or FullAssignment(()), target, set(snap.brokers))
        if refused is not None:
            return refused
        wanted = tuple(target)
    if assignment is None or tp[0] in snap.deleting:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
    if not allow_rf_change and len(wanted) != len(assignment.origin):
        return (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(assignment.origin)} to {len(wanted)} "
            "but allowReplicationFactorChange is false",
        )
    new = assignment.reassign_to(wanted)
    if not new.reassigning:  # cancelled, or the target is what the partition has: done now
        new = FullAssignment(new.replicas)
    return Change(tp, new, _restate(snap, tp, new.replicas, controller_epoch, complete=False))


def _invalid(assignment: FullAssignment, target: list[int], live: set[int]) -> Answer | None:
    if not target:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
    if len(set(target)) != len(target):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {target}",
        )
    if any(r < 0 for r in target):
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {target}"
    adding = assignment.reassign_to(tuple(target)).adding
    if not set(adding) <= live:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}",
        )
    return None


def completions(snap: Snapshot, controller_epoch: int) -> list[Change]:
    """The partitions whose reassignment can complete now: every target replica is in the ISR and
    a target replica can lead."""
    out = []
    for tp, assignment in reassigning(snap).items():
        record = snap.states.get(tp)
        if record is None or not set(assignment.target) <= set(record.state.isr):
            continue
        write = _restate(snap, tp, assignment.target, controller_epoch, complete=True)
        if write is not None and write.state.leader >= 0:
            out.append(Change(tp, FullAssignment(assignment.target), write))
    return out


def _restate(
    snap: Snapshot, tp: TopicPartition, keep: tuple[int, ...], controller_epoch: int, *, complete: bool
) -> StateWrite | None:
    """The state write that leaves only ``keep`` (in their order) in ``tp``'s ISR and leadership, or
    None when the state needs no change (``complete``: always a write, with a new leader epoch, as
    Kafka's controller bumps it when a reassignment completes)."""
    record = snap.states.get(tp)
    if record is None:
        return None
    state, live = record.state, set(snap.brokers)
    isr = tuple(r for r in state.isr if r in keep)
    leader = state.leader
    if leader not in keep or leader not in live:
        leader = next((r for r in keep if r in live and r in isr), -1)
    if not complete and leader == state.leader and isr == state.isr:
        return None
    if leader == -1 and not isr:
        isr = state.isr  # the last in-sync replica is never removed: the partition waits for it
    return StateWrite(tp, LeaderAndIsr(leader, state.leader_epoch + 1, isr, controller_epoch), record.version)


@dataclass(frozen=True, slots=True)
class ZkRequests:
    """What the controller does about ``/admin/reassign_partitions`` this round."""

    start: dict[TopicPartition, list[int]]  # entries to start
    drop: dict[TopicPartition, str]  # entries to remove from the znode, with the reason (logged)


def zk_requests(snap: Snapshot) -> ZkRequests:
    """Entries of ``/admin/reassign_partitions`` to start, and those done or refused (to drop)."""
    starts: dict[TopicPartition, list[int]] = {}
    drop: dict[TopicPartition, str] = {}
    for tp, target in snap.reassign_requests.items():
        assignment = current(snap, tp)
        if assignment is None or tp[0] in snap.deleting:
            drop[tp] = "the partition does not exist"
        elif not assignment.reassigning and assignment.replicas == tuple(target):
            drop[tp] = "completed"
        elif assignment.reassigning and assignment.target == tuple(target):
            continue  # under way
        else:
            refused = _invalid(assignment, target, set(snap.brokers))
            if refused is not None:
                drop[tp] = str(refused[1])
            else:
                starts[tp] = target
    return ZkRequests(starts, drop)
