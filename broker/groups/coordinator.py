"""The group coordinator: Kafka's classic consumer-group protocol on one event loop.

Its other parts: `broker.groups.offsets` (commits, fetches, deletes and expiry
of offsets; inherited) and `broker.groups.consumer_protocol` (KIP-848 groups,
``self.consumer``). A group is of one kind at a time (`Group.consumer` is set
for KIP-848 groups), and both keep their offsets the same way; a KIP-848 group
may hold classic members, whose JoinGroup, SyncGroup, Heartbeat and LeaveGroup
go to `broker.groups.classic_members`, which also changes a group's kind.

Contract with callers (the handlers):

- Every method runs to completion without awaiting; state transitions are
  never interleaved. JoinGroup, SyncGroup, OffsetCommit and DeleteGroups take
  a callback that is invoked exactly once, possibly before the method returns,
  possibly much later (a JoinGroup waits for the rebalance). Callbacks must not
  call back into the coordinator.
- Time comes from a `Clock` (timers for session timeouts, the initial
  rebalance delay, rebalance timeouts and offset expiry), persistence from an
  `OffsetsLog`; unit tests pass a `FakeClock` and an in-memory log.
- Until `load` has replayed `__consumer_offsets`, group requests answer
  COORDINATOR_LOAD_IN_PROGRESS (SyncGroup: REBALANCE_IN_PROGRESS and Heartbeat:
  NONE, as Kafka does, since older clients do not expect that error there).
  After `shutdown` they answer NOT_COORDINATOR, and so do waiting JoinGroups
  and SyncGroups.

Behaviour follows Kafka's GroupCoordinator (classic protocol):

- The first JoinGroup of an Empty group waits `group.initial.rebalance.delay.ms`,
  extended by the same delay while new members keep arriving during the first
  generation, up to the rebalance timeout. Later rebalances complete as soon as
  every known member has rejoined, or at the rebalance timeout (the largest of
  the members'), when dynamic members that did not rejoin are removed (static
  ones stay: they may be restarting; their session timeout still applies).
  LeaveGroup removes a member at once and starts the rebalance of the rest.
- Member ids are ``<client id>-<uuid4>`` (static members: ``<instance id>-<uuid4>``).
  With ``require_known_member_id`` (JoinGroup v4+) a new dynamic member first
  gets MEMBER_ID_REQUIRED carrying its id, and must rejoin with it within the
  session timeout.
- The leader is the first member to join; only its JoinGroup result lists the
  members (with their metadata for the chosen protocol). The protocol is
  chosen by vote among those every member supports; a joiner with none in
  common gets INCONSISTENT_GROUP_PROTOCOL.
- Session timeout: a member that neither heartbeats nor waits in JoinGroup or
  SyncGroup for ``session_timeout_ms`` is removed and the group rebalances.
  A new member waiting in its first JoinGroup is dropped after 5 minutes.
- Static members (group instance id): a JoinGroup with an unknown member id
  and a known instance id replaces the old member id in place, keeps the
  assignment and, in Stable, does not rebalance (the group is re-persisted);
  the old id is fenced (FENCED_INSTANCE_ID) from then on.
- Offsets: commits from the current generation's members (Stable or
  PreparingRebalance) or, for an Empty group, from anyone with generation -1
  are appended to the group's `__consumer_offsets` partition and applied and
  answered only once durable. Metadata longer than `offset.metadata.max.bytes`
  is OFFSET_METADATA_TOO_LARGE. Offsets of an Empty group expire
  `offsets.retention.minutes` after it became Empty (standalone groups: after
  the commit; commits with an explicit retention time: at their expire
  timestamp); an Empty group with no offsets left is removed (tombstoned).
- Group metadata is persisted when the leader's assignment arrives (the
  SyncGroup answers follow once it is durable), when a group becomes Empty, and
  when a static member is replaced; deletions and expiries write tombstones.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence

from broker.groups.classic_members import ClassicMembers
from broker.groups.clock import Clock, TimerHandle
from broker.groups.consumer_protocol import ConsumerProtocol, ConsumerSettings
from broker.groups.consumer_records import ConsumerKey, group_tombstones
from broker.groups.consumer_replay import ConsumerReplay
from broker.groups.hashing import partition_for
from broker.groups.model import (
    DEAD_SUMMARY,
    NO_SUMMARY,
    Group,
    GroupOverview,
    GroupState,
    GroupSummary,
    JoinCallback,
    JoinRequest,
    JoinResult,
    Member,
    Protocols,
    SyncCallback,
    SyncResult,
    TopicPartition,
)
from broker.groups.offsets import DEFAULT_RETENTION_TIME, GroupOffsets, OffsetCommit  # noqa: F401
from broker.groups.offsets_log import CoordinatorConfig, Done, OffsetsLog, RecordKV  # noqa: F401
from broker.groups.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
)
from broker.groups.store_errors import group_store_error
from broker.groups.txn_offsets import GroupTxnOffsets
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("minikafka.groups")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


def _client_reason(req: JoinRequest) -> str:
    """JoinGroup v8+'s reason (KIP-800) as the rebalance log line shows it."""
    return f"; client reason: {req.reason}" if req.reason else ""


class GroupCoordinator(GroupOffsets, GroupTxnOffsets):
    """Every group of this broker (it coordinates all `__consumer_offsets` partitions)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        offsets_log: OffsetsLog,
        clock: Clock,
        consumer: ConsumerSettings | None = None,
    ) -> None:
        self.config = config
        self._log = offsets_log
        self._clock = clock
        self._groups: dict[str, Group] = {}
        self.loading = True
        self.closed = False
        self._expiry_timer: TimerHandle | None = None
        # the __consumer_offsets partitions whose groups this broker coordinates; None: all (one broker)
        self._owned: set[int] | None = None
        # KIP-848 groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe (set its `topics` to the cluster's)
        self.consumer = ConsumerProtocol(self, consumer or ConsumerSettings())
        self.classic_members = ClassicMembers(self, self.consumer)

    # -- lifecycle ---------------------------------------------------------------------------
    def load(self) -> None:
        """Replay every `__consumer_offsets` partition, then start serving and expiring offsets."""
        for partition in range(self._log.num_partitions):
            self._load_partition(partition)
        self.loading = False
        self._schedule_expiry()
        log.info("loaded %d groups from __consumer_offsets", len(self._groups))

    def start_unowned(self) -> None:
        """Cluster mode: coordinate no partition until `elect` (the broker leads none yet)."""
        self._owned = set()
        self.loading = False
        self._schedule_expiry()

    def elect(self, partition: int) -> None:
        """This broker now leads ``partition`` of __consumer_offsets: replay it and coordinate its groups."""
        if self._owned is None or partition in self._owned:
            return
        self._load_partition(partition)
        self._owned.add(partition)
        log.info("coordinating the groups of __consumer_offsets-%d", partition)

    def resign(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: forget its groups; their members get NOT_COORDINATOR."""
        if self._owned is None or partition not in self._owned:
            return
        self._owned.discard(partition)
        for group_id in [g for g in self._groups if self.partition_for(g) == partition]:
            self._abandon(self._groups.pop(group_id))
        log.info("no longer coordinating the groups of __consumer_offsets-%d", partition)

    def shutdown(self) -> None:
        """Stop timers, answer waiting JoinGroup/SyncGroup with NOT_COORDINATOR; later requests too."""
        if self.closed:
            return
        self.closed = True
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for group in self._groups.values():
            self._abandon(group)

    def _abandon(self, group: Group) -> None:
        """Stop a group's timers and answer its waiting JoinGroup/SyncGroup with NOT_COORDINATOR."""
        self._stop_classic(group, ErrorCode.NOT_COORDINATOR)
        if group.consumer is not None:
            group.consumer.cancel_timers()

    def _stop_classic(self, group: Group, error: ErrorCode) -> None:
        """Cancel the group's classic timers (rebalance, pending members, sessions) and answer its
        waiting JoinGroup/SyncGroup calls with ``error``."""
        for timer in (group.join_timer, group.sync_timer, *group.pending_members.values()):
            if timer is not None:
                timer.cancel()
        group.join_timer = group.sync_timer = None
        for member in group.members.values():
            if member.timer is not None:
                member.timer.cancel()
                member.timer = None
            self._invoke_join(member, JoinResult(error, member.member_id))
            self._invoke_sync(member, SyncResult(error))

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._log.num_partitions)

    def group(self, group_id: str) -> Group | None:
        """The live group object (for tests and diagnostics; do not mutate)."""
        return self._groups.get(group_id)

    def metrics_snapshot(self) -> dict[str, tuple[int, dict[TopicPartition, int]]]:
        """Per group: (number of members, committed offset per partition); for /metrics."""
        return {
            group_id: (
                len(g.members) + (len(g.consumer.members) if g.consumer is not None else 0),
                {tp: v.offset for tp, v in g.offsets.items()},
            )
            for group_id, g in self._groups.items()
        }

    def coordination_error(self, group_id: str, *, allow_empty_id: bool = False) -> ErrorCode | None:
        """None if this broker coordinates ``group_id`` and it is loaded; else NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS or INVALID_GROUP_ID (an empty id, unless allowed)."""
        return self._check(group_id, allow_empty_id=allow_empty_id)

    def _check(self, group_id: str, *, allow_empty_id: bool = False) -> ErrorCode | None:
        if self.closed:
            return ErrorCode.NOT_COORDINATOR
        if not group_id and not allow_empty_id:
            return ErrorCode.INVALID_GROUP_ID
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if self._owned is not None and self.partition_for(group_id) not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    # -- JoinGroup ---------------------------------------------------------------------------
    def join_group(self, req: JoinRequest, callback: JoinCallback) -> None:
        error = self._check(req.group_id)
        if error is None and not (
            self.config.min_session_timeout_ms <= req.session_timeout_ms <= self.config.max_session_timeout_ms
        ):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        if error is not None:
            callback(JoinResult(error, req.member_id))
            return
        unknown = req.member_id == ""
        group = self._groups.get(req.group_id)
        if group is not None and group.consumer is not None:
            if group.consumer.members and not self.classic_members.downgrade_for_static_join(group, req):
                self.classic_members.join(group, req, callback)
                return
            if group.consumer is not None:
                self._drop_consumer_state(group)
        if group is None:
            if not unknown:
                callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return
            group = self._add_group(req.group_id)
        if unknown and len(group.members) >= self.config.max_group_size:
            callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._join_unknown(group, req, callback)
        else:
            self._join_known(group, req, callback)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _join_unknown(self, group: Group, req: JoinRequest, callback: JoinCallback) -> None:
        if group.is_(GroupState.DEAD):
            callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(req.protocol_type, {name for name, _ in req.protocols}):
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_id = f"{prefix}-{uuid.uuid4()}"
        instance = req.group_instance_id
        if instance is not None and instance in group.static_members:
            self._replace_static_member(group, new_id, req, callback)
        elif req.require_known_member_id and instance is None:
            group.pending_members[new_id] = self._clock.call_later(
                req.session_timeout_ms, lambda: self._expire_pending(group, new_id)
            )
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, req, callback)

    def _join_known(self, group: Group, req: JoinRequest, callback: JoinCallback) -> None:
        member_id = req.member_id
        if group.is_(GroupState.DEAD):
            callback(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not group.supports_protocols(req.protocol_type, {name for name, _ in req.protocols}):
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif member_id in group.pending_members:
            if len(group.members) >= self.config.max_group_size:  # as for an unknown member
                group.pending_members.pop(member_id).cancel()
                callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id))
            else:
                self._add_member_and_rebalance(group, member_id, req, callback)
        elif group.is_static_member_fenced(member_id, req.group_instance_id):
            callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
        elif member_id not in group.members or (
            req.group_instance_id is not None and req.group_instance_id not in group.static_members
        ):
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
        else:
            member = group.members[member_id]
            state = group.state
            if state is GroupState.PREPARING_REBALANCE:
                self._update_member_and_rebalance(group, member, req, callback)
            elif state is GroupState.COMPLETING_REBALANCE:
                if member.matches(req.protocols):
                    # a retry of a JoinGroup whose answer was lost: repeat this generation's answer
                    callback(self._join_result(group, member))
                else:
                    self._update_member_and_rebalance(group, member, req, callback)
            elif state is GroupState.STABLE:
                if group.leader_id == member_id or not member.matches(req.protocols):
                    # the leader rejoining is how a client asks for a new assignment (e.g. metadata changed)
                    self._update_member_and_rebalance(group, member, req, callback)
                else:
                    callback(self._join_result(group, member, with_members=False))
            else:
                callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: Group, member: Member, *, with_members: bool = True) -> JoinResult:
        is_leader = group.leader_id == member.member_id
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_name or "",
            group.leader_id or "",
            group.current_member_metadata() if with_members and is_leader else (),
        )

    def _add_member_and_rebalance(
        self, group: Group, member_id: str, req: JoinRequest, callback: JoinCallback
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            is_new=True,
        )
        # a rebalance out of Empty waits for more members whatever the generation (Kafka's
        # previousState() == EMPTY), so a fleet restarting slowly forms one generation, not many
        if group.is_(GroupState.PREPARING_REBALANCE) and group.initial_join:
            group.new_member_added = True
        group.add(member, callback)
        self._touch(group, member)
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member_id
        else:
            pending = group.pending_members.pop(member_id, None)
            if pending is not None:
                pending.cancel()
        self._maybe_prepare_rebalance(group, f"member {member_id} joined{_client_reason(req)}")

    def _update_member(self, member: Member, req: JoinRequest, callback: JoinCallback | None) -> None:
        if member.join_callback is not None and member.join_callback is not callback:
            # a second JoinGroup while the first still waits: answer the first so its connection moves on
            self._invoke_join(member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_callback = callback

    def _update_member_and_rebalance(
        self, group: Group, member: Member, req: JoinRequest, callback: JoinCallback
    ) -> None:
        self._update_member(member, req, callback)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined{_client_reason(req)}")

    def _replace_static_member(
        self, group: Group, new_id: str, req: JoinRequest, callback: JoinCallback
    ) -> None:
        instance = req.group_instance_id
        assert instance is not None
        old_id = group.static_members[instance]
        member = group.members.pop(old_id)
        # whoever still waits under the old id is a duplicate instance now
        self._invoke_join(member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        self._invoke_sync(member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        current_leader = group.leader_id
        member.member_id = new_id
        member.client_id = req.client_id
        member.client_host = req.client_host
        group.members[new_id] = member
        group.static_members[instance] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        log.info(
            "group %s: static member %s rejoined, member id %s replaces %s",
            group.group_id,
            instance,
            new_id,
            old_id,
        )
        self._touch(group, member)
        self._update_member(member, req, callback)
        if group.is_(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                self._prepare_rebalance(group, f"static member {instance} rejoined with other protocols")
                return
            generation = group.generation_id
            protocol = group.protocol_name or ""

            def stored(code: ErrorCode) -> None:
                # v9+ (KIP-814): a rejoining leader is told it leads, with the members, and to skip
                # the assignment (the group keeps the current one), so it still watches every topic
                # the group subscribes to. Before v9 the old leader id goes back (even if it was this
                # member's old id), so the leader does not compute an assignment nobody would get.
                if code != ErrorCode.NONE:
                    result = JoinResult(group_store_error(code), new_id)
                elif req.skip_assignment_supported:
                    leads = group.leader_id == new_id
                    members = group.current_member_metadata() if leads else ()
                    result = JoinResult(
                        ErrorCode.NONE, new_id, generation, protocol, group.leader_id or "", members, leads
                    )
                else:
                    result = JoinResult(ErrorCode.NONE, new_id, generation, protocol, current_leader or "")
                self._invoke_join(member, result)

            self._store_group(group, {m.member_id: m.assignment for m in group.members.values()}, stored)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            # the leader may be assigning for the old id: start over so the new id gets an assignment
            self._prepare_rebalance(group, f"static member {instance} rejoined during CompletingRebalance")
        # PreparingRebalance: it simply waits for the join to complete like everyone else

    def _expire_pending(self, group: Group, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is None:
            return
        log.info("group %s: pending member %s did not rejoin in time", group.group_id, member_id)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    # -- rebalance ---------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync = set()
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.join_timer is not None:
            group.join_timer.cancel()
        was_empty = group.is_(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._clock.now_ms())
        log.info(
            "group %s: preparing to rebalance, old generation %d (%s)",
            group.group_id,
            group.generation_id,
            reason,
        )
        if was_empty:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.initial_join = True
            group.join_timer = self._clock.call_later(
                delay, lambda: self._initial_join_expired(group, remaining)
            )
        else:
            group.initial_join = False
            group.join_timer = self._clock.call_later(
                group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            self._maybe_complete_join(group)

    def _initial_join_expired(self, group: Group, remaining: int) -> None:
        group.join_timer = None
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, remaining)
            left = max(remaining - delay, 0)
            group.join_timer = self._clock.call_later(delay, lambda: self._initial_join_expired(group, left))
        else:
            self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and not group.initial_join
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_join = False
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:  # static members keep their place
                log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
                self._remove_member(group, member)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # only static members that have not rejoined are left: wait another rebalance timeout
            log.warning("group %s: no member rejoined; waiting another rebalance timeout", group.group_id)
            group.join_timer = self._clock.call_later(
                group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            return
        now = self._clock.now_ms()
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition_to(GroupState.COMPLETING_REBALANCE, now)
            log.info(
                "group %s: generation %d with %d members, protocol %s, leader %s",
                group.group_id,
                group.generation_id,
                len(group.members),
                group.protocol_name,
                group.leader_id,
            )
            for member in list(group.members.values()):
                self._invoke_join(member, self._join_result(group, member))
                member.is_new = False
                self._touch(group, member)
            self._await_syncs(group)
        else:
            group.protocol_name = None
            group.transition_to(GroupState.EMPTY, now)
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._store_group(group, {}, None)

    # -- SyncGroup ---------------------------------------------------------------------------
    def _await_syncs(self, group: Group) -> None:
        """Every member of the new generation has a rebalance timeout to send SyncGroup; those that
        do not are removed and the group rebalances (Kafka's pending sync expiry), so followers
        do not wait for ever on a leader that heartbeats but never assigns."""
        if group.sync_timer is not None:
            group.sync_timer.cancel()
        group.pending_sync = set(group.members)
        generation = group.generation_id
        group.sync_timer = self._clock.call_later(
            group.rebalance_timeout_ms, lambda: self._expire_pending_sync(group, generation)
        )

    def _expire_pending_sync(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if self.closed or group.generation_id != generation or not group.pending_sync:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        late = sorted(group.pending_sync)
        group.pending_sync = set()
        for member_id in late:
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member)
        self._prepare_rebalance(group, f"removing {late}: no SyncGroup within the rebalance timeout")

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: dict[str, bytes],
        callback: SyncCallback,
        protocol: tuple[str | None, str | None] = (None, None),
    ) -> None:
        """``protocol``: the (type, name) a v5+ request names; a member and generation that check out
        but a type or name that differs from the group's (both set) is INCONSISTENT_GROUP_PROTOCOL,
        in Kafka's order: member, then generation, then protocol."""
        error = self._check(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.REBALANCE_IN_PROGRESS  # the rebalance state was lost: rejoin
        group = self._groups.get(group_id) if error is None else None
        if error is None and group is not None and group.consumer is not None:
            if not group.consumer.members:
                callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            else:
                self.classic_members.sync(
                    group, generation_id, member_id, group_instance_id, protocol, callback
                )
            return
        if error is None:
            if group is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                error = self._validate_member(group, generation_id, member_id, group_instance_id)
                if error is None and (
                    _differs(protocol[0], group.protocol_type) or _differs(protocol[1], group.protocol_name)
                ):
                    error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is not None or group is None:
            callback(SyncResult(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.EMPTY:
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif state is GroupState.PREPARING_REBALANCE:
            callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif state is GroupState.STABLE:
            group.pending_sync.discard(member_id)
            callback(SyncResult(ErrorCode.NONE, member.assignment))
            self._touch(group, member)
        else:  # CompletingRebalance
            group.pending_sync.discard(member_id)
            if member.sync_callback is not None:
                self._invoke_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_callback = callback
            if group.leader_id == member_id:
                full = {mid: assignments.get(mid, b"") for mid in group.members}
                generation = group.generation_id
                self._store_group(
                    group, full, lambda code: self._assignment_stored(group, generation, full, code)
                )

    def _validate_member(
        self, group: Group, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode | None:
        """Kafka's order of checks for SyncGroup and Heartbeat."""
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def _assignment_stored(
        self, group: Group, generation: int, full: dict[str, bytes], code: ErrorCode
    ) -> None:
        # a member may have joined or left while the write was in flight: then this generation is over
        if self.closed or not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation_id != generation:
            return
        if code != ErrorCode.NONE:
            self._reset_and_propagate_assignment_error(group, group_store_error(code))
            self._maybe_prepare_rebalance(group, "storing the assignment failed")
            return
        group.transition_to(GroupState.STABLE, self._clock.now_ms())
        log.info("group %s: generation %d is stable", group.group_id, generation)
        for member in list(group.members.values()):
            member.assignment = full.get(member.member_id, b"")
            if member.sync_callback is not None:
                self._invoke_sync(member, SyncResult(ErrorCode.NONE, member.assignment))
                self._touch(group, member)

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in list(group.members.values()):
            member.assignment = b""
            if member.sync_callback is not None:
                self._invoke_sync(member, SyncResult(error))
                self._touch(group, member)

    # -- Heartbeat / LeaveGroup ----------------------------------------------------------------
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        error = self._check(group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE
        if error is not None:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.consumer is not None:
            return self.classic_members.heartbeat(group, generation_id, member_id, group_instance_id)
        error = self._validate_member(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return error
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._touch(group, group.members[member_id])
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE  # Stable, or CompletingRebalance (heartbeats may start after the join answer)

    def leave_group(self, group_id: str, member_id: str, reason: str | None = None) -> ErrorCode:
        """LeaveGroup v0-2: one dynamic member."""
        error, codes = self.leave_members(group_id, [(member_id, None)], reason)
        return error if error != ErrorCode.NONE else codes[0]

    def leave_members(
        self, group_id: str, members: Sequence[tuple[str, str | None]], reason: str | None = None
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup v3+: ``(group error, one code per (member id, group instance id))``.

        A static member (instance id given) is found by its instance id; a member id
        other than "" that is not the instance's current one is FENCED_INSTANCE_ID.
        """
        error = self._check(group_id)
        if error is not None:
            return error, []
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, []
        if group.consumer is not None:
            return ErrorCode.NONE, self.classic_members.leave(group, members)
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        why = f" ({reason})" if reason else ""
        return ErrorCode.NONE, [self._leave_one(group, m, i, why) for m, i in members]

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None, why: str) -> ErrorCode:
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id not in ("", current):
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = current
        pending = group.pending_members.pop(member_id, None)
        if pending is not None:
            pending.cancel()
            if group.is_(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join(group)
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("group %s: member %s left%s", group.group_id, member_id, why)
        self._remove_member_and_update_group(group, member, f"member {member_id} left{why}")
        return ErrorCode.NONE

    def _remove_member(self, group: Group, member: Member) -> None:
        if member.timer is not None:
            member.timer.cancel()
            member.timer = None
        self._invoke_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        self._invoke_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: Group, member: Member, reason: str) -> None:
        self._remove_member(group, member)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    # -- session timeouts --------------------------------------------------------------------
    def _timeout_ms(self, member: Member) -> int:
        return NEW_MEMBER_JOIN_TIMEOUT_MS if member.is_new else member.session_timeout_ms

    def _touch(self, group: Group, member: Member) -> None:
        """Record a sign of life and make sure a timer checks the member by its (new) deadline.

        Timers are lazy: a heartbeat only moves the deadline; the timer, when it fires,
        re-arms itself for the new deadline instead of being rescheduled on every heartbeat.
        """
        now = self._clock.now_ms()
        member.last_heartbeat_ms = now
        deadline = now + self._timeout_ms(member)
        if member.timer is not None and member.timer_deadline <= deadline:
            return
        self._arm(group, member, deadline)

    def _arm(self, group: Group, member: Member, deadline: int) -> None:
        if member.timer is not None:
            member.timer.cancel()
            member.timer = None
        if self.closed:
            return
        member.timer_deadline = deadline
        member.timer = self._clock.call_later(
            deadline - self._clock.now_ms(), lambda: self._member_timer_fired(group, member)
        )

    def _member_timer_fired(self, group: Group, member: Member) -> None:
        member.timer = None
        if group.members.get(member.member_id) is not member or group.is_(GroupState.DEAD):
            return
        now = self._clock.now_ms()
        deadline = member.last_heartbeat_ms + self._timeout_ms(member)
        if member.awaiting_join:
            keep = not member.is_new or deadline > now
        else:
            keep = member.awaiting_sync or deadline > now
        if keep:
            self._arm(group, member, deadline if deadline > now else now + member.session_timeout_ms)
            return
        log.info("group %s: member %s session timed out", group.group_id, member.member_id)
        self._remove_member_and_update_group(group, member, f"member {member.member_id} expired")

    # -- DescribeGroups / ListGroups / DeleteGroups ------------------------------------------
    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupSummary]:
        error = self._check(group_id, allow_empty_id=True)
        if error is not None:
            return error, NO_SUMMARY
        group = self._groups.get(group_id)
        if group is None or group.consumer is not None:
            return ErrorCode.NONE, DEAD_SUMMARY  # Kafka: a consumer-protocol group is not described here
        return ErrorCode.NONE, group.summary()

    def is_consumer_group(self, group_id: str) -> bool:
        """Whether ``group_id`` is a consumer-protocol (KIP-848) group, which DescribeGroups does not describe."""
        group = self._groups.get(group_id)
        return group is not None and group.consumer is not None

    def list_groups(self) -> tuple[ErrorCode, list[GroupOverview]]:
        if self.closed:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.loading else ErrorCode.NONE
        return error, [g.overview() for g in self._groups.values()]

    def delete_groups(
        self, group_ids: Iterable[str], callback: Callable[[dict[str, ErrorCode]], None]
    ) -> None:
        """Delete Empty groups with their offsets (tombstones); answered once the tombstones are durable."""
        results: dict[str, ErrorCode] = {}
        doomed: list[Group] = []
        for group_id in group_ids:
            error = self._check(group_id, allow_empty_id=True)
            group = self._groups.get(group_id) if error is None else None
            if error is not None:
                results[group_id] = error
            elif group is None or group.is_(GroupState.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.consumer is not None and group.consumer.members:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            elif group.is_(GroupState.EMPTY) and not group.pending_members:
                doomed.append(group)
            else:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
        waiting = len(doomed)
        if not waiting:
            callback(results)
            return

        def deleted(group_id: str, code: ErrorCode) -> None:
            nonlocal waiting
            results[group_id] = group_store_error(code)
            waiting -= 1
            if not waiting:
                callback(results)

        for group in doomed:
            tombstones = self._remove_group(group, set(group.offsets) | set(group.pending_commits))
            log.info("group %s deleted", group.group_id)
            self._log.append(
                self.partition_for(group.group_id),
                tombstones,
                lambda code, g=group.group_id: deleted(g, code),
            )

    def _remove_group(self, group: Group, offsets: set[TopicPartition]) -> list[RecordKV]:
        """Mark ``group`` Dead and forget it; the tombstones that say so on disk."""
        group.transition_to(GroupState.DEAD, self._clock.now_ms())
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.offsets.clear()
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
        records: list[RecordKV] = [
            (encode_offset_key(OffsetKey(group.group_id, topic, p)), None) for topic, p in sorted(offsets)
        ]
        if group.consumer is not None:
            group.consumer.cancel_timers()
            records += group_tombstones(group.group_id, group.consumer)
        records.append((encode_group_key(GroupKey(group.group_id)), None))
        return records

    def _classic_tombstone(self, group: Group) -> RecordKV:
        """An Empty classic group becomes a consumer-protocol group: forget its classic metadata."""
        group.generation_id = 0
        group.protocol_name = None
        group.leader_id = None
        return encode_group_key(GroupKey(group.group_id)), None

    def _end_classic_state(self, group: Group, error: ErrorCode) -> None:
        """A classic group changes protocol: answer waiting JoinGroup/SyncGroup calls with ``error``,
        stop every classic timer and forget the classic members."""
        self._stop_classic(group, error)
        group.pending_members.clear()
        group.pending_sync.clear()
        group.members.clear()
        group.static_members.clear()
        group.leader_id = None

    def _drop_consumer_state(self, group: Group) -> None:
        """An Empty consumer-protocol group joined with the classic protocol becomes a classic group."""
        assert group.consumer is not None
        group.consumer.cancel_timers()
        records = group_tombstones(group.group_id, group.consumer)
        group.consumer = None
        group.protocol_type = None
        self._log.append(self.partition_for(group.group_id), records, None)

    # -- persistence -------------------------------------------------------------------------
    def _add_group(self, group_id: str) -> Group:
        group = Group(group_id, state_timestamp_ms=self._clock.now_ms())
        self._groups[group_id] = group
        return group

    def _store_group(self, group: Group, assignment: dict[str, bytes], done: Done | None) -> None:
        protocol = group.protocol_name
        members: tuple[MemberValue, ...] = ()
        if protocol is not None:
            members = tuple(
                MemberValue(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(protocol),
                    assignment.get(m.member_id, b""),
                )
                for m in group.members.values()
            )
        value = GroupValue(
            group.protocol_type or "",
            group.generation_id,
            protocol,
            group.leader_id,
            group.state_timestamp_ms,
            members,
        )
        self._log.append(
            self.partition_for(group.group_id),
            [(encode_group_key(GroupKey(group.group_id)), encode_group_value(value))],
            done,
        )

    def _load_partition(self, partition: int) -> None:
        offsets: dict[tuple[str, TopicPartition], OffsetValue] = {}
        groups: dict[str, GroupValue] = {}
        consumer = ConsumerReplay()
        for key_bytes, value_bytes in self._log.read(partition):
            try:
                key = decode_key(key_bytes)
                if isinstance(key, ConsumerKey):
                    consumer.apply(key, value_bytes)
                elif isinstance(key, OffsetKey):
                    okey = (key.group, (key.topic, key.partition))
                    if value_bytes is None:
                        offsets.pop(okey, None)
                    else:
                        offsets[okey] = decode_offset_value(value_bytes)
                elif value_bytes is None:
                    groups.pop(key.group, None)
                else:
                    groups[key.group] = decode_group_value(value_bytes)
            except ProtocolError as exc:
                log.warning("__consumer_offsets-%d: skipping an unreadable record: %s", partition, exc)
        for group_id, value in groups.items():
            self._groups[group_id] = self._group_from_record(group_id, value)
        for group_id, cg in consumer.groups().items():
            group = self._groups.get(group_id)
            if group is None or not group.members:
                group = self._groups[group_id] = Group(group_id, state_timestamp_ms=self._clock.now_ms())
                group.consumer = cg
                group.protocol_type = "consumer"
                self.consumer.arm_loaded(group)
        for (group_id, tp), value in offsets.items():
            group = self._groups.get(group_id)
            if group is None:
                group = self._groups[group_id] = Group(group_id, state_timestamp_ms=None)
            group.offsets[tp] = value
        self._restore_open_transactions(partition, self._log.open_transactions.get(partition, {}))

    def _group_from_record(self, group_id: str, value: GroupValue) -> Group:
        group = Group(
            group_id,
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            state_timestamp_ms=value.current_state_timestamp,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
        )
        protocol = value.protocol or ""
        for mv in value.members:
            protocols: Protocols = ((protocol, mv.subscription),)
            member = Member(
                mv.member_id,
                mv.group_instance_id,
                mv.client_id,
                mv.client_host,
                mv.rebalance_timeout_ms,
                mv.session_timeout_ms,
                value.protocol_type,
                protocols,
                assignment=mv.assignment,
            )
            group.members[mv.member_id] = member
            if mv.group_instance_id is not None:
                group.static_members[mv.group_instance_id] = mv.member_id
            self._touch(group, member)  # loaded members get a full session timeout to come back
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members), None)
        return group

    # -- callbacks -----------------------------------------------------------------------------
    @staticmethod
    def _invoke_join(member: Member, result: JoinResult) -> None:
        callback, member.join_callback = member.join_callback, None
        if callback is not None:
            callback(result)

    @staticmethod
    def _invoke_sync(member: Member, result: SyncResult) -> None:
        callback, member.sync_callback = member.sync_callback, None
        if callback is not None:
            callback(result)


def _differs(asked: str | None, current: str | None) -> bool:
    """Kafka's isProtocolInconsistent: both known and not equal."""
    return asked is not None and current is not None and asked != current
