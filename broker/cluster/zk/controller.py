"""The controller's decisions, as a pure function of a metadata snapshot (the writes are the caller's).

Kafka's ZK-mode rules:

- A partition with no state yet (a new topic): leader = the first live replica
  in assignment order, ISR = the live replicas, leader epoch 0. No live
  replica: it waits.
- A live leader whose ISR holds dead followers, or replicas no longer
  assigned (a reassignment removed them): they leave the ISR (epoch + 1); a
  leader no longer assigned counts as dead.
- A dead leader (or none, -1): the first replica in assignment order that is
  alive and in the ISR leads (epoch + 1), ISR = its live members. None: with
  ``unclean.leader.election.enable`` (the topic's, else the broker's) the
  first live replica leads with an ISR of itself; otherwise the partition goes
  offline (leader -1, epoch + 1) keeping its ISR, since the last in-sync
  replica is never removed; it comes back when one of them does.
- A live leader that registered after the state was written (its registration
  zxid is newer than the state's last write: it restarted) is re-elected with
  epoch + 1 before it may lead, so a restarted broker never resumes a
  leadership whose log it may have lost.
- Leadership never moves back to the preferred replica here: that is an
  election of its own (elections.py), asked for or due to leader imbalance.
- Topics marked for deletion get no state changes; `deletions` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.cluster.zk.snapshot import Snapshot, TopicPartition
from broker.cluster.zk.znodes import LeaderAndIsr


@dataclass(frozen=True, slots=True)
class StateWrite:
    """Write ``state`` for ``tp``; ``expected_version`` -1 creates the znode."""

    tp: TopicPartition
    state: LeaderAndIsr
    expected_version: int


def plan_state_writes(
    snap: Snapshot, controller_epoch: int, *, unclean: Callable[[str], bool] = lambda topic: False
) -> list[StateWrite]:
    """The state writes the cluster needs now; ``unclean(topic)``: whether the topic allows unclean
    leader election."""
    live = set(snap.brokers)
    writes: list[StateWrite] = []
    deleting = set(snap.deleting)
    for topic, assignment in sorted(snap.assignments.items()):
        if topic in deleting:
            continue
        for partition, replicas in sorted(assignment.items()):
            tp = (topic, partition)
            record = snap.states.get(tp)
            if record is None:
                alive = [r for r in replicas if r in live]
                if alive:
                    writes.append(
                        StateWrite(tp, LeaderAndIsr(alive[0], 0, tuple(alive), controller_epoch), -1)
                    )
                continue
            state = record.state
            # only assigned replicas count: one that a reassignment removed may still have been
            # added to the ISR by a leader that had not seen the new assignment yet
            new = _next_state(state, replicas, live & set(replicas), snap, record.mzxid, unclean(topic))
            if new is not None:
                writes.append(
                    StateWrite(
                        tp,
                        LeaderAndIsr(new[0], state.leader_epoch + 1, new[1], controller_epoch),
                        record.version,
                    )
                )
    return writes


def _next_state(
    state: LeaderAndIsr, replicas: list[int], live: set[int], snap: Snapshot, mzxid: int, unclean: bool
) -> tuple[int, tuple[int, ...]] | None:
    """(leader, ISR) the partition should move to, or None if it is fine as it is."""
    live_isr = tuple(r for r in state.isr if r in live)
    if state.leader in live:
        if len(live_isr) < len(state.isr):
            return state.leader, live_isr
        if snap.broker_czxid.get(state.leader, -1) > mzxid:
            return state.leader, state.isr  # the leader restarted since: a new epoch before it leads
        return None
    picked = offline_election(state, replicas, live, unclean)
    if picked is not None:
        return picked
    if state.leader != -1:
        return -1, state.isr
    return None


def offline_election(
    state: LeaderAndIsr, replicas: list[int], live: set[int], unclean: bool
) -> tuple[int, tuple[int, ...]] | None:
    """(leader, ISR) for a partition without a live leader, or None: the first live ISR member in
    assignment order with the live ISR; else, ``unclean``, the first live replica with an ISR of itself."""
    live_isr = tuple(r for r in state.isr if r in live)
    for r in replicas:
        if r in live_isr:
            return r, live_isr
    if unclean:
        for r in replicas:
            if r in live:
                return r, (r,)
    return None


def deletions(snap: Snapshot) -> list[str]:
    """Topics marked for deletion (the controller removes their znodes, then the mark)."""
    return list(snap.deleting)
