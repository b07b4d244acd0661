"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: the consumer group protocol of Kafka 4 (KIP-848).

Members heartbeat their subscription; the coordinator computes the target
assignment with a server-side assignor (`broker.groups.assignors`) and moves
each member towards it incrementally (`broker.groups.reconciliation`): a
partition changes hands only after its previous owner stopped reporting it.

Contract (as `broker.groups.coordinator`): methods run to completion without
awaiting; `heartbeat` calls its callback once: before returning when the
heartbeat changed nothing that is stored, else once the records it appended
to `__consumer_offsets` are stored as an offset commit is (on the in-sync
replicas, `broker.groups.store`), as Kafka's coordinator runtime answers a
write only once it is committed. A write that fails answers Kafka's mapping
(`store_errors.group_store_error`: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)
while the group keeps its new state; the member retries with its previous
epoch, which the epoch checks below accept and answer with the assignment
again, or, on another coordinator, is fenced and rejoins.

Behaviour follows Kafka's GroupMetadataManager:

- Epoch 0 joins (creating the group; an Empty classic group with only offsets
  becomes a consumer group); -1 leaves; -2 is a static member's temporary
  leave (it keeps its partitions until its session expires or it rejoins
  under the same instance id). A full request (epoch 0, or rebalance timeout,
  subscription and owned partitions all set) and any change of the member's
  assignment get the assignment in the answer.
- Epoch checks: a larger epoch than the member's, or a smaller one other than
  its previous epoch with owned partitions within its assignment (the answer
  that bumped it was lost), is FENCED_MEMBER_EPOCH; an unknown member id
  UNKNOWN_MEMBER_ID; an instance id held by a member that did not leave
  UNRELEASED_INSTANCE_ID; an old member id for an instance id FENCED_INSTANCE_ID.
- The group epoch is bumped when a member joins or leaves or changes its
  subscription, and when a subscribed topic appears, disappears or changes its
  partition count (checked on every heartbeat); the target is then recomputed
  with the assignor most members ask for (else the first of
  ``group.consumer.assignors``).
- A member that does not heartbeat within ``group.consumer.session.timeout.ms``
  is removed (fenced); one that keeps a partition it must revoke for longer than
  its rebalance timeout too.
- A classic group with members is upgraded by a joining member, and the group
  downgraded when its last consumer-protocol member goes, as
  ``group.consumer.migration.policy`` allows; classic members of a consumer group
  are served by `broker.groups.classic_members`. A classic group that cannot be
  upgraded answers GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.groups.assignors import ASSIGNORS, DEFAULT_ASSIGNORS, MemberSpec
from broker.groups.classic_members import ClassicMembers, NotUpgradable
from broker.groups.consumer_model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from broker.groups.consumer_records import (
    RecordKV,
    assignment_record,
    epoch_record,
    member_record,
    member_tombstones,
    partition_metadata_record,
    target_epoch_record,
    target_member_record,
)
from broker.groups.model import Group, GroupState
from broker.groups.reconciliation import reconcile
from broker.groups.store_errors import group_store_error
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.cluster.view import TopicState
    from broker.groups.clock import Clock
    from broker.groups.offsets_log import OffsetsLog

log = logging.getLogger("minikafka.groups")


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    """Kafka's settings for consumer-protocol groups (names in the comments)."""

    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS  # group.consumer.assignors
    max_size: int = 2**31 - 1  # group.consumer.max.size
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy
    classic_max_size: int = 2**31 - 1  # group.max.size (a downgraded group must fit)

    @property
    def upgrades(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrades(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")


@dataclass(slots=True)  # not frozen: built once per heartbeat, and frozen __init__ costs 5x
class Heartbeat:
    """One ConsumerGroupHeartbeat request, as the coordinator needs it."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Coordinator(Protocol):
    """What `ConsumerProtocol` uses of its `GroupCoordinator`."""

    closed: bool
    _groups: dict[str, Group]
    _log: OffsetsLog
    _clock: Clock

    def _check(self, group_id: str, *, allow_empty_id: bool = False) -> ErrorCode | None: ...

    def partition_for(self, group_id: str) -> int: ...

    def _add_group(self, group_id: str) -> Group: ...

    def _classic_tombstone(self, group: Group) -> RecordKV: ...

    @property
    def classic_members(self) -> ClassicMembers: ...


def _no_topics() -> Mapping[str, TopicState]:
    return {}


class ConsumerProtocol:
    """The consumer-protocol half of a `GroupCoordinator` (which owns the groups, the log and the clock)."""

    def __init__(self, coordinator: Coordinator, settings: ConsumerSettings) -> None:
        self._co = coordinator
        self.settings = settings
        self.topics: Callable[[], Mapping[str, TopicState]] = _no_topics

    # -- validation ----------------------------------------------------------------------------
    def _validate(self, req: Heartbeat) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if req.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if req.rack_id == "":
            raise invalid("RackId can't be empty.")
        if req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise HeartbeatError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular expression: {exc}.",
                ) from None
        epoch = req.member_epoch
        if epoch > 0 or epoch == LEAVE_EPOCH:
            if not req.member_id:
                raise invalid("MemberId can't be empty.")
        elif epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            # an empty list of names (or an empty regex) joins with no topics, as Kafka 4 allows: a
            # consumer subscribed to a pattern nothing matches yet
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
                )
        elif epoch == STATIC_LEAVE_EPOCH:
            if not req.member_id:
                raise invalid("MemberId can't be empty.")
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        else:
            raise invalid("MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.settings.assignors:
            raise HeartbeatError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self.settings.assignors)}.",
            )

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------------
    def heartbeat(self, req: Heartbeat, callback: Callable[[HeartbeatResult], None]) -> None:
        try:
            self._validate(req)
            error = self._co._check(req.group_id)
            if error is not None:
                callback(HeartbeatResult(error))
                return
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                records, result = self._leave(req)
            else:
                records, result = self._heartbeat(req)
        except HeartbeatError as exc:
            callback(HeartbeatResult(exc.code, exc.message))
            return

        def stored(code: ErrorCode) -> None:
            if code == ErrorCode.NONE:
                callback(result)
                return
            log.warning("consumer group %s: records not stored (%s)", req.group_id, code.name)
            callback(HeartbeatResult(group_store_error(code)))

        partition = self._co.partition_for(req.group_id)
        if records:
            self._co._log.append(partition, records, stored)
        else:  # answered from state earlier writes made: only once those are committed (Kafka's runtime)
            self._co._log.when_committed(partition, stored)

    def _group(self, group_id: str, create: bool, records: list[RecordKV]) -> Group:
        group = self._co._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = self._co._add_group(group_id)
        if group.consumer is None:
            if create and group.members and self._co.classic_members.can_upgrade(group):
                if len(group.members) >= self.settings.max_size:
                    raise HeartbeatError(
                        ErrorCode.GROUP_MAX_SIZE_REACHED,
                        f"The consumer group has reached its maximum capacity of {self.settings.max_size} "
                        "members.",
                    )
                try:
                    self._co.classic_members.upgrade(group)
                except NotUpgradable:
                    pass
                else:
                    return group
            if not create or group.members or group.pending_members or not group.is_(GroupState.EMPTY):
                raise HeartbeatError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
                )
            if group.protocol_type is not None:
                records.append(self._co._classic_tombstone(group))
            group.consumer = ConsumerGroup()
            group.protocol_type = "consumer"
        return group

    def _heartbeat(self, req: Heartbeat) -> tuple[list[RecordKV], HeartbeatResult]:
        records: list[RecordKV] = []
        joining = req.member_epoch == 0
        group = self._group(req.group_id, joining, records)
        cg = group.consumer
        assert cg is not None
        member_id = (
            req.member_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        )  # as Kafka's Uuid
        if len(cg.members) >= self.settings.max_size and member_id not in cg.members:
            raise HeartbeatError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.settings.max_size} members.",
            )
        member, is_new = self._member(group, cg, req, member_id, records)
        changes = _metadata_changes(member, req)
        updated = member.with_(**changes) if changes else member
        reconciled = self.update_member(group, member, updated, is_new, req.owned, records)
        self._arm_session(group, reconciled.member_id)
        full = joining or (
            req.rebalance_timeout_ms != -1
            and req.subscribed_topic_names is not None
            and req.owned is not None
        )
        changed = reconciled.assigned != member.assigned or is_new
        return records, HeartbeatResult(
            ErrorCode.NONE,
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.settings.heartbeat_interval_ms,
            assignment=reconciled.assigned if full or changed else None,
        )

    def update_member(
        self,
        group: Group,
        member: ConsumerMember,
        updated: ConsumerMember,
        is_new: bool,
        owned: Assignment | None,
        records: list[RecordKV],
    ) -> ConsumerMember:
        """Store ``updated`` (the member after this request's metadata), bump the group epoch if
        the subscriptions or their topics changed, recompute the target if it is behind, and
        reconcile the member (the same steps for a heartbeat and a classic JoinGroup)."""
        cg = group.consumer
        assert cg is not None
        bump = False
        changed = is_new or updated is not member
        if changed:
            records.append(member_record(group.group_id, updated))
            # only a subscription that changes moves the group to a new epoch (Kafka's
            # hasMemberSubscriptionChanged): a static member coming back with its old one does not
            bump = (
                updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex
            )
            cg.set_member(updated)
        topics = self.topics()
        # the metadata follows from the members' subscriptions and the topics: unchanged when
        # neither is (the cluster view is a new mapping whenever a topic changes)
        if changed or topics is not cg.metadata_topics:
            metadata = self._subscription_metadata(cg, topics)
            if metadata != cg.subscription_metadata:
                cg.subscription_metadata = metadata
                records.append(partition_metadata_record(group.group_id, metadata))
                bump = True
        if bump:
            cg.group_epoch += 1
            records.append(epoch_record(group.group_id, cg.group_epoch))
            log.info("group %s: epoch %d (member %s)", group.group_id, cg.group_epoch, updated.member_id)
        if cg.group_epoch > cg.assignment_epoch:
            self._compute_target(group, records)
        return self._reconcile(group, updated, owned, records, force=is_new)

    def _member(
        self, group: Group, cg: ConsumerGroup, req: Heartbeat, member_id: str, records: list[RecordKV]
    ) -> tuple[ConsumerMember, bool]:
        """The member the request speaks for, and whether it is new (joining)."""
        joining = req.member_epoch == 0
        if req.instance_id is not None:
            held = cg.static_members.get(req.instance_id)
            existing = cg.members.get(held) if held is not None else None
            if joining:
                if existing is None:
                    return ConsumerMember(member_id), True
                # a classic static member never leaves with -2: a consumer-protocol member taking
                # its instance id over is its rolling upgrade (Kafka checks only between KIP-848 members)
                if (
                    existing.member_id != member_id
                    and existing.member_epoch != STATIC_LEAVE_EPOCH
                    and existing.classic is None
                ):
                    raise HeartbeatError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {existing.member_id} with instance id {req.instance_id} "
                        "is not released yet.",
                    )
                return self._replace(group, cg, existing, member_id, records), True
            if existing is None:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
                )
            if existing.member_id != member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {req.instance_id} was fenced by "
                    f"member {existing.member_id}.",
                )
            self._check_epoch(existing, req)
            return existing, False
        existing = cg.members.get(member_id)
        if existing is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            return ConsumerMember(member_id), True
        if joining:
            # the member lost its state and rejoins under its id: it starts over with nothing owned
            fresh = existing.with_(
                member_epoch=0,
                previous_member_epoch=0,
                state=MemberState.STABLE,
                assigned={},
                pending_revocation={},
            )
            cg.set_member(fresh)
            return fresh, True
        self._check_epoch(existing, req)
        return existing, False

    def _replace(
        self,
        group: Group,
        cg: ConsumerGroup,
        old: ConsumerMember,
        member_id: str,
        records: list[RecordKV],
    ) -> ConsumerMember:
        """A static member rejoins under a new member id: it inherits the old one's assignment."""
        target = cg.target.get(old.member_id, {})
        if old.member_id != member_id:
            records.extend(member_tombstones(group.group_id, old.member_id))
            cg.remove_member(old.member_id)
            cg.target[member_id] = target
            records.append(target_member_record(group.group_id, member_id, target))
        new = old.with_(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        cg.set_member(new)
        log.info("group %s: static member %s rejoins as %s", group.group_id, old.instance_id or "", member_id)
        return new

    @staticmethod
    def _check_epoch(member: ConsumerMember, req: Heartbeat) -> None:
        epoch = req.member_epoch
        if epoch > member.member_epoch:
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )
        if epoch < member.member_epoch and (
            epoch != member.previous_member_epoch or not _within(req.owned, member.assigned)
        ):
            raise HeartbeatError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )

    def _reconcile(
        self,
        group: Group,
        member: ConsumerMember,
        owned: Assignment | None,
        records: list[RecordKV],
        *,
        force: bool = False,
    ) -> ConsumerMember:
        cg = group.consumer
        assert cg is not None
        target = cg.target.get(member.member_id, {})
        updated = member
        if not member.reconciled_to(cg.assignment_epoch):
            updated = reconcile(member, cg.assignment_epoch, target, cg.partition_epoch, owned)
        if updated is member and not force:
            return member
        if force or updated.assignment_changed(member):
            cg.set_member(updated)
            records.append(assignment_record(group.group_id, updated))
            if updated.classic is not None:
                pass  # a classic member revokes by rejoining: its join and sync timers watch it
            elif updated.state is MemberState.UNREVOKED_PARTITIONS:
                self._arm_rebalance(group, updated)
            else:
                handle = cg.rebalance_timers.pop(updated.member_id, None)
                if handle is not None:
                    handle.cancel()
        return updated

    # -- ConsumerGroupDescribe -------------------------------------------------------------------
    def describe(self, group_id: str) -> tuple[ErrorCode, str | None, ConsumerGroup | None]:
        """(error, its message, the group) for ConsumerGroupDescribe; do not mutate the group."""
        error = self._co._check(group_id)
        if error is not None:
            return error, None, None
        group = self._co._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        if group.consumer is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", None
        return ErrorCode.NONE, None, group.consumer

    # -- target assignment ----------------------------------------------------------------------
    def _subscription_metadata(
        self, cg: ConsumerGroup, topics: Mapping[str, TopicState]
    ) -> dict[str, tuple[uuid.UUID, int]]:
        """Name -> (topic id, partition count) of every existing topic a member subscribes to;
        remembers ``topics`` as what it was computed from."""
        cg.metadata_topics = topics
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for member in cg.members.values():
            for name in self.member_topics(member, topics):
                state = topics[name]
                out[name] = (state.topic_id, len(state.partitions))
        return dict(sorted(out.items()))

    @staticmethod
    def member_topics(member: ConsumerMember, topics: Mapping[str, TopicState]) -> set[str]:
        """The existing topics a member subscribes to: by name, and those its regex matches in full
        (internal topics only by name)."""
        found = {name for name in member.subscribed_topic_names if name in topics}
        if member.subscribed_topic_regex:
            pattern = _compiled(member.subscribed_topic_regex)
            found |= {n for n, t in topics.items() if not t.internal and pattern.fullmatch(n)}
        return found

    def assignor_of(self, cg: ConsumerGroup) -> str:
        asked = Counter(m.server_assignor for m in cg.members.values() if m.server_assignor is not None)
        if asked:
            best = max(asked.values())
            return min(name for name, n in asked.items() if n == best)
        return self.settings.assignors[0]

    def _compute_target(self, group: Group, records: list[RecordKV]) -> None:
        cg = group.consumer
        assert cg is not None
        ids = {name: tid for name, (tid, _) in cg.subscription_metadata.items()}
        counts = {tid: n for tid, n in cg.subscription_metadata.values()}
        topics = self.topics()
        specs = [
            MemberSpec(
                m.member_id,
                m.instance_id,
                frozenset(ids[t] for t in self.member_topics(m, topics) if t in ids),
                cg.target.get(m.member_id, {}),
            )
            for m in cg.members.values()
        ]
        name = self.assignor_of(cg)
        target = ASSIGNORS[name](specs, counts)
        for member_id, assignment in target.items():
            if cg.target.get(member_id) != assignment:
                records.append(target_member_record(group.group_id, member_id, assignment))
        cg.target = dict(target)
        cg.assignment_epoch = cg.group_epoch
        records.append(target_epoch_record(group.group_id, cg.assignment_epoch))
        log.info("group %s: target assignment for epoch %d (%s)", group.group_id, cg.assignment_epoch, name)

    # -- leaving and fencing ---------------------------------------------------------------------
    def _leave(self, req: Heartbeat) -> tuple[list[RecordKV], HeartbeatResult]:
        records: list[RecordKV] = []
        group = self._group(req.group_id, False, records)
        cg = group.consumer
        assert cg is not None
        if req.instance_id is None:
            member = cg.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {group.group_id}.",
                )
        else:
            held = cg.static_members.get(req.instance_id)
            member = cg.members.get(held) if held is not None else None
            if member is None:
                raise HeartbeatError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
                )
            if member.member_id != req.member_id:
                raise HeartbeatError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced.",
                )
            if req.member_epoch == STATIC_LEAVE_EPOCH:
                leaving = member.with_(member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                cg.set_member(leaving)
                records.append(assignment_record(group.group_id, leaving))
                log.info("group %s: static member %s left for now", group.group_id, member.member_id)
                return records, HeartbeatResult(
                    ErrorCode.NONE, member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH
                )
        log.info("group %s: member %s left", group.group_id, member.member_id)
        records.extend(self.fence(group, member.member_id))
        return records, HeartbeatResult(
            ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )

    def fence(self, group: Group, member_id: str) -> list[RecordKV]:
        """Remove a member and bump the group epoch; the records that say so. The last
        consumer-protocol member of a group whose other members are classic turns it into a
        classic group instead (`ClassicMembers.downgrade` writes its own records)."""
        cg = group.consumer
        assert cg is not None
        if self._co.classic_members.should_downgrade(group, member_id):
            self._co.classic_members.downgrade(group, member_id)
            return []
        records = member_tombstones(group.group_id, member_id)
        cg.remove_member(member_id)
        metadata = self._subscription_metadata(cg, self.topics())
        if metadata != cg.subscription_metadata:
            cg.subscription_metadata = metadata
            records.append(partition_metadata_record(group.group_id, metadata))
        cg.group_epoch += 1
        records.append(epoch_record(group.group_id, cg.group_epoch))
        if not cg.members:
            group.state_timestamp_ms = self._co._clock.now_ms()  # offsets expire from here
        return records

    def _still_ours(self, group: Group) -> bool:
        """Whether a timer of ``group`` still concerns this coordinator: the group is still a
        consumer group it coordinates (not replaced, resigned, downgraded or shut down)."""
        return (
            group.consumer is not None
            and self._co._groups.get(group.group_id) is group
            and not self._co.closed
        )

    def _fence_later(self, group: Group, member_id: str, epoch: int | None, why: str) -> None:
        cg = group.consumer
        if cg is None or not self._still_ours(group):
            return
        member = cg.members.get(member_id)
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return
        log.info("group %s: member %s removed: %s", group.group_id, member_id, why)
        records = self.fence(group, member_id)
        if records:
            self._co._log.append(self._co.partition_for(group.group_id), records, None)

    def _arm_session(self, group: Group, member_id: str) -> None:
        """The member's session now ends a session timeout from now. One timer per member, armed
        only when it has none: every heartbeat moves the deadline, and the timer, when it fires
        early, sleeps again until the deadline (a heartbeat no longer cancels and re-arms one)."""
        cg = group.consumer
        assert cg is not None
        member = cg.members.get(member_id)
        classic = member.classic if member is not None else None
        timeout = classic.session_timeout_ms if classic is not None else self.settings.session_timeout_ms
        cg.session_deadlines[member_id] = self._co._clock.now_ms() + timeout
        if member_id not in cg.session_timers:
            cg.session_timers[member_id] = self._co._clock.call_later(
                timeout, lambda: self._session_due(group, member_id)
            )

    def _session_due(self, group: Group, member_id: str) -> None:
        cg = group.consumer
        if cg is None or not self._still_ours(group):
            return
        cg.session_timers.pop(member_id, None)
        deadline = cg.session_deadlines.get(member_id)
        if deadline is None or member_id not in cg.members:
            return
        left = deadline - self._co._clock.now_ms()
        if left > 0:
            cg.session_timers[member_id] = self._co._clock.call_later(
                left, lambda: self._session_due(group, member_id)
            )
            return
        self._fence_later(group, member_id, None, "its session expired")

    def _arm_rebalance(self, group: Group, member: ConsumerMember) -> None:
        cg = group.consumer
        assert cg is not None
        old = cg.rebalance_timers.pop(member.member_id, None)
        if old is not None:
            old.cancel()
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300_000
        cg.rebalance_timers[member.member_id] = self._co._clock.call_later(
            timeout,
            lambda: self._fence_later(
                group, member.member_id, member.member_epoch, "it did not revoke its partitions in time"
            ),
        )

    def arm_loaded(self, group: Group) -> None:
        """Members replayed from the log get a full session to come back; those that still have to
        revoke partitions also a rebalance timeout to do it in (Kafka's onLoaded)."""
        assert group.consumer is not None
        for member_id, member in group.consumer.members.items():
            self._arm_session(group, member_id)
            if member.classic is None and member.state is MemberState.UNREVOKED_PARTITIONS:
                self._arm_rebalance(group, member)


def _metadata_changes(member: ConsumerMember, req: Heartbeat) -> dict[str, Any]:
    """The member-metadata fields the heartbeat changes (a field it leaves null keeps its value)."""
    changes: dict[str, Any] = {}
    if req.instance_id is not None and req.instance_id != member.instance_id:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None and req.rack_id != member.rack_id:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1 and req.rebalance_timeout_ms != member.rebalance_timeout_ms:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None and req.server_assignor != member.server_assignor:
        changes["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        names = tuple(sorted(set(req.subscribed_topic_names)))
        if names != member.subscribed_topic_names:
            changes["subscribed_topic_names"] = names
    if (
        req.subscribed_topic_regex is not None
        and (req.subscribed_topic_regex or None) != member.subscribed_topic_regex
    ):
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
    if req.client_id != member.client_id:
        changes["client_id"] = req.client_id
    if member.classic is not None:  # a classic member upgraded under its instance id
        changes["classic"] = None
    if req.client_host != member.client_host:
        changes["client_host"] = req.client_host
    return changes


@functools.lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


def _within(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(parts <= assigned.get(tid, frozenset()) for tid, parts in owned.items())
