"""The state of a consumer-protocol group (KIP-848): members, epochs, target and current assignments.

A group that uses the consumer protocol is a `broker.groups.model.Group` (it
keeps the committed offsets, shared with the classic protocol) whose
``consumer`` field holds a `ConsumerGroup`.

Epochs: the *group epoch* is bumped whenever a member joins, leaves or changes
its subscription, or a subscribed topic changes its partition count; the
*assignment epoch* is the group epoch the target assignment was computed for;
each member's *member epoch* reaches the assignment epoch once the member has
revoked what it no longer owns (`broker.groups.reconciliation`).

States, as Kafka reports them: Empty (no members), Assigning (the target is
older than the group epoch), Reconciling (a member is not yet at the
assignment epoch, or still waits for a partition), Stable.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, fields
from operator import attrgetter

from broker.groups.clock import TimerHandle

Assignment = dict[uuid.UUID, frozenset[int]]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(enum.IntEnum):
    """Kafka's MemberState byte, as stored in ConsumerGroupCurrentMemberAssignmentValue."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member speaking the classic protocol inside a consumer group sent in its JoinGroup:
    its session timeout and its protocols, (name, ConsumerProtocolSubscription) in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The name its JoinGroup and SyncGroup answers carry: its first protocol's (Kafka's)."""
        return self.protocols[0][0]


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """One member; replaced (never mutated) on every change, so old and new can be compared."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMetadata | None = None  # set for a member that joined with JoinGroup

    def assignment_changed(self, other: ConsumerMember) -> bool:
        """Whether the ConsumerGroupCurrentMemberAssignment record of ``other`` differs from ours."""
        return _ASSIGNMENT_FIELDS(self) != _ASSIGNMENT_FIELDS(other)

    def reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def with_(self, **changes: object) -> ConsumerMember:
        """A copy with ``changes`` (dataclasses.replace, at half its cost: a rebalance makes
        several per heartbeat)."""
        if not changes.keys() <= _FIELD_SET:
            raise TypeError(f"unknown fields {sorted(changes.keys() - _FIELD_SET)}")
        new = object.__new__(ConsumerMember)
        for name in _FIELD_NAMES:
            _set(new, name, changes[name] if name in changes else getattr(self, name))
        return new


_FIELD_NAMES = tuple(f.name for f in fields(ConsumerMember))
_FIELD_SET = frozenset(_FIELD_NAMES)
_set = object.__setattr__


# what a member's assignment record holds
_ASSIGNMENT_FIELDS = attrgetter(
    "member_epoch", "previous_member_epoch", "state", "assigned", "pending_revocation"
)


@dataclass(eq=False)
class ConsumerGroup:
    """The consumer-protocol side of a group."""

    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    # (topic id as an int, partition) -> its owner's epoch; int keys: a UUID hashes in Python code
    partition_epochs: dict[tuple[int, int], int] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)  # name -> id, count
    metadata_topics: object = None  # the cluster's topics mapping subscription_metadata was computed from
    session_timers: dict[str, TimerHandle] = field(default_factory=dict)
    session_deadlines: dict[str, int] = field(default_factory=dict)  # member id -> when its session ends
    rebalance_timers: dict[str, TimerHandle] = field(default_factory=dict)  # (classic members: join)
    sync_timers: dict[str, TimerHandle] = field(default_factory=dict)  # classic members awaiting SyncGroup

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition (assigned or pending revocation); -1: free."""
        return self.partition_epochs.get((topic_id.int, partition), -1)

    def set_member(self, member: ConsumerMember) -> None:
        """Add or replace a member, moving the partition ownership its assignment implies."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        epochs, epoch = self.partition_epochs, member.member_epoch
        for assignment in (member.assigned, member.pending_revocation):
            for tid, parts in assignment.items():
                key = tid.int
                for p in parts:
                    epochs[(key, p)] = epoch

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        self.session_deadlines.pop(member_id, None)
        for timers in (self.session_timers, self.rebalance_timers, self.sync_timers):
            handle = timers.pop(member_id, None)
            if handle is not None:
                handle.cancel()
        return member

    def _release(self, member: ConsumerMember) -> None:
        epochs, epoch = self.partition_epochs, member.member_epoch
        for assignment in (member.assigned, member.pending_revocation):
            for tid, parts in assignment.items():
                key = tid.int
                for p in parts:
                    if epochs.get((key, p)) == epoch:
                        del epochs[(key, p)]

    def cancel_timers(self) -> None:
        for timers in (self.session_timers, self.rebalance_timers, self.sync_timers):
            for handle in timers.values():
                handle.cancel()
            timers.clear()
        self.session_deadlines.clear()
