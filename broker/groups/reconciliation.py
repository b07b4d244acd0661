"""Moving one member of a consumer-protocol group towards its target assignment (KIP-848).

The rules, as Kafka's CurrentAssignmentBuilder applies them:

- A member keeps the partitions of its current assignment that are in its
  target. Those it has but the target does not are *pending revocation*: while
  the member still reports owning any of them, it stays at its epoch in state
  UNREVOKED_PARTITIONS and is told its reduced assignment (the client revokes
  what is missing). Once it no longer owns them, it moves to the next epoch.
- Partitions of the target that it does not have yet are given only once no
  other member owns them (`ConsumerGroup.partition_epoch` is -1); until then the
  member is at the target epoch in UNRELEASED_PARTITIONS, and gets them on a
  later heartbeat.
- Otherwise the member is STABLE at the target epoch.

``owned`` is what the member reported in this heartbeat (None when it did not
say, which counts as still owning everything).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from broker.groups.consumer_model import Assignment, ConsumerMember, MemberState

PartitionEpoch = Callable[[uuid.UUID, int], int]


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> ConsumerMember:
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(tid, frozenset()) & parts for tid, parts in partitions.items())


def _next(
    member: ConsumerMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> ConsumerMember:
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    adding: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for tid in set(target) | set(member.assigned):
        want = target.get(tid, frozenset())
        have = member.assigned.get(tid, frozenset())
        keep = have & want
        if keep:
            assigned[tid] = keep
        if have - keep:
            revoking[tid] = have - keep
        free = frozenset(p for p in want - keep if partition_epoch(tid, p) == -1)
        if len(free) < len(want - keep):
            unreleased = True
        if free:
            adding[tid] = free
    if revoking and _owns_any(owned, revoking):
        return _updated(member, member_epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    for tid, parts in adding.items():
        assigned[tid] = assigned.get(tid, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _updated(member, target_epoch, state, assigned, {})


def _updated(
    member: ConsumerMember,
    epoch: int,
    state: MemberState,
    assigned: Assignment,
    revoking: Assignment,
) -> ConsumerMember:
    return member.with_(
        member_epoch=epoch,
        previous_member_epoch=member.member_epoch,
        state=state,
        assigned=assigned,
        pending_revocation=revoking,
    )
