"""The coordinator's data: groups, members, their states, and the results handed back to handlers.

Nothing here touches I/O or time; `coordinator.GroupCoordinator` drives these
objects. A `Group` goes through Kafka's five states::

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
    CompletingRebalance --leader's assignment stored--> Stable
    Stable / CompletingRebalance --join, leave, expiry--> PreparingRebalance
    PreparingRebalance --nobody left--> Empty
    any --deleted or expired--> Dead

`Group.transition_to` enforces exactly these edges (Kafka's validPreviousStates).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.groups.clock import TimerHandle
from broker.groups.consumer_model import ConsumerGroup
from broker.groups.records import OffsetValue
from protocol.errors import ErrorCode

TopicPartition = tuple[str, int]
Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference


class GroupState(enum.Enum):
    """Kafka's group states; the value is the name DescribeGroups and ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


class IllegalStateError(RuntimeError):
    """A transition Kafka's state machine does not allow (a coordinator bug)."""


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    """What a JoinGroup is answered with. Only the leader's result lists ``members``."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_name: str = ""
    leader_id: str = ""
    members: tuple[JoinMember, ...] = ()
    skip_assignment: bool = False  # v9+: the leader of a Stable group it rejoined (KIP-814)


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup as the coordinator sees it (v0 has rebalance timeout = session timeout).

    ``require_known_member_id``: v4+ without a group instance id; an unknown
    member first gets MEMBER_ID_REQUIRED with its new id.
    """

    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool = False
    reason: str | None = None
    skip_assignment_supported: bool = False  # v9+


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """DescribeGroups' view: metadata and assignments only while Stable (else empty), as Kafka."""

    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...] = ()


DEAD_SUMMARY = GroupSummary(GroupState.DEAD.value, "", "")
NO_SUMMARY = GroupSummary("", "", "")


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"  # or "consumer" (KIP-848)


@dataclass(eq=False)
class Member:
    """One member. ``join_callback``/``sync_callback`` are set while its JoinGroup/SyncGroup waits."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    last_heartbeat_ms: int = 0
    is_new: bool = False
    timer: TimerHandle | None = None
    timer_deadline: int = 0

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol!r}")

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalStateError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def matches(self, protocols: Protocols) -> bool:
        return self.protocols == protocols


@dataclass(eq=False)
class Group:
    """One consumer group: membership, generation, chosen protocol, committed offsets."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int | None = None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group instance id -> member id
    pending_members: dict[str, TimerHandle] = field(default_factory=dict)  # ids handed out, not yet joined
    offsets: dict[TopicPartition, OffsetValue] = field(default_factory=dict)
    pending_commits: dict[TopicPartition, int] = field(default_factory=dict)  # appends not yet durable
    # producer id -> offsets its open transaction committed (TxnOffsetCommit), visible once it commits
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetValue]] = field(default_factory=dict)
    new_member_added: bool = False
    initial_join: bool = False  # the pending join is Kafka's InitialDelayedJoin
    join_timer: TimerHandle | None = None
    # members of this generation that have not sent SyncGroup yet, and the timer that drops them
    pending_sync: set[str] = field(default_factory=set)
    sync_timer: TimerHandle | None = None
    consumer: ConsumerGroup | None = None  # set while the group uses the consumer protocol (KIP-848)

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalStateError(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not allowed"
            )
        self.state = state
        self.state_timestamp_ms = now_ms

    # -- membership ------------------------------------------------------------------------
    def add(self, member: Member, callback: JoinCallback | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        member.join_callback = callback

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.join_callback = None
        member.sync_callback = None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known instance id presented with a member id other than the one it has now."""
        if group_instance_id is None:
            return False
        current = self.static_members.get(group_instance_id)
        return current is not None and current != member_id

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick the first member that did; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols -------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        candidates: set[str] | None = None
        for m in self.members.values():
            names = set(m.protocol_names)
            candidates = names if candidates is None else candidates & names
        return candidates or set()

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its favourite protocol that all support; most votes wins.

        Ties go to the protocol that received its first vote earliest (members in join order).
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalStateError(f"group {self.group_id} has no protocol common to all members")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def current_member_metadata(self) -> tuple[JoinMember, ...]:
        if self.protocol_name is None:
            raise IllegalStateError(f"group {self.group_id} has no protocol selected")
        protocol = self.protocol_name
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in self.members.values()
        )

    # -- views -----------------------------------------------------------------------------
    def summary(self) -> GroupSummary:
        if self.state is GroupState.STABLE and self.protocol_name is not None:
            protocol = self.protocol_name
            members = tuple(
                MemberSummary(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(protocol),
                    m.assignment,
                )
                for m in self.members.values()
            )
            return GroupSummary(self.state.value, self.protocol_type or "", protocol, members)
        members = tuple(
            MemberSummary(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", b"")
            for m in self.members.values()
        )
        return GroupSummary(self.state.value, self.protocol_type or "", "", members)

    def overview(self) -> GroupOverview:
        if self.consumer is not None:
            return GroupOverview(self.group_id, "consumer", self.consumer.state(), "consumer")
        return GroupOverview(self.group_id, self.protocol_type or "", self.state.value)
