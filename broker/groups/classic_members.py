"""Classic-protocol members inside consumer-protocol groups, and groups changing protocol (KIP-848 migration).

Kafka 4 lets a group move between the protocols while its consumers are
restarted one by one (``group.consumer.migration.policy``: bidirectional by
default, or upgrade, downgrade, disabled). The facts are Kafka's
GroupMetadataManager (classicGroup*ToConsumerGroup, convertToConsumerGroup,
convertToClassicGroup):

- **Classic members of a consumer group.** JoinGroup, SyncGroup, Heartbeat and
  LeaveGroup from a consumer (protocol type "consumer") reach a consumer group
  that has members. The subscription is the first protocol's
  ConsumerProtocolSubscription (topics, owned partitions, rack); the member is
  updated and reconciled exactly like a heartbeating KIP-848 member, and the
  JoinGroup is answered at once: generation = member epoch, protocol name = its
  first protocol's, no leader (every classic member is a follower). SyncGroup
  returns its current assignment (ConsumerProtocolAssignment at its
  subscription's version, at most 3). Heartbeat answers REBALANCE_IN_PROGRESS
  while the member is behind the group epoch, still has to revoke, or can pick
  up partitions that were released: the client rejoins, reporting what it still
  owns, which is how a classic member revokes and receives. A member that does
  not rejoin (or sync) within its rebalance timeout is removed, as is one whose
  classic session times out. Generations are member epochs for OffsetCommit too.
- **Upgrade.** The first ConsumerGroupHeartbeat (epoch 0) into a classic group
  with members converts it, if the policy allows, its protocol type is
  "consumer" and it fits ``group.consumer.max.size``: each member keeps its
  current assignment at epoch = the generation, and the group epoch starts at
  the generation; pending JoinGroup/SyncGroup calls are answered
  REBALANCE_IN_PROGRESS. Otherwise the heartbeat gets GROUP_ID_NOT_FOUND.
- **Downgrade.** When the last consumer-protocol member is removed (leave,
  session or rebalance timeout) and classic members remain, the group becomes a
  classic group at generation = the group epoch, every member holding its
  target assignment, and it starts a rebalance at once.

  A classic static member taking over the instance id of the last
  consumer-protocol member turns the group classic too, without a rebalance: it
  keeps that member's target assignment.

Differences from Kafka: a member whose classic assignment is empty (it joined
but had not synced yet) is converted with an empty assignment, where Kafka
refuses the upgrade; a LeaveGroup of several classic members bumps the group
epoch once per member (Kafka: once).
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from broker.groups.clock import TimerHandle
from broker.groups.consumer_model import (
    Assignment,
    ClassicMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from broker.groups.consumer_records import (
    RecordKV,
    assignment_record,
    epoch_record,
    group_tombstones,
    member_record,
    target_epoch_record,
    target_member_record,
)
from broker.groups.model import (
    Group,
    GroupState,
    JoinCallback,
    JoinRequest,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from protocol.errors import ErrorCode, ProtocolError
from protocol.member_data import (
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)

if TYPE_CHECKING:
    from broker.cluster.view import TopicState

log = logging.getLogger("minikafka.groups")

CONSUMER = "consumer"
_MAX_ASSIGNMENT_VERSION = 3


class ClassicMembers:
    """The classic protocol's requests against consumer groups, and the conversions between them."""

    def __init__(self, coordinator: Any, consumer: Any) -> None:
        # the GroupCoordinator and its ConsumerProtocol, both of which call into this module
        # (typed loosely: naming them here would make an import cycle)
        self._co = coordinator
        self._cp = consumer

    # -- JoinGroup -----------------------------------------------------------------------------
    def join(self, group: Group, req: JoinRequest, callback: JoinCallback) -> None:
        cg = group.consumer
        assert cg is not None
        new_id = req.member_id or _new_member_id()
        if len(cg.members) >= self._cp.settings.max_size and req.member_id not in cg.members:
            callback(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, req.member_id))
            return
        known = cg.members.get(req.member_id)
        if req.protocol_type != CONSUMER or not _supported(cg, known, req):
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        if req.group_instance_id is None and not req.member_id and req.require_known_member_id:
            callback(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
            return
        try:
            subscription = decode_subscription(req.protocols[0][1])
        except ProtocolError as exc:
            log.info("group %s: JoinGroup metadata is not a consumer subscription: %s", group.group_id, exc)
            callback(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
            return
        records: list[RecordKV] = []
        member, is_new, error = self._joining_member(group, cg, req, new_id, records)
        if member is None:
            callback(JoinResult(error, req.member_id))
            return
        topics = self._cp.topics()
        updated = member.with_(
            instance_id=req.group_instance_id or member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            client_id=req.client_id,
            client_host=req.client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            classic=ClassicMetadata(req.session_timeout_ms, req.protocols),
        )
        if updated == member and not is_new:
            updated = member
        owned = _by_topic_id(subscription.owned_partitions, topics)
        reconciled = self._cp.update_member(group, member, updated, is_new, owned, records)
        if records:
            self._co._log.append(self._co.partition_for(group.group_id), records, None)
        self._cp._arm_session(group, reconciled.member_id)
        # it rejoined; it must now send SyncGroup within its rebalance timeout
        _cancel(cg.rebalance_timers, reconciled.member_id)
        self._arm(cg.sync_timers, group, reconciled, "it did not send SyncGroup in time")
        callback(
            JoinResult(
                ErrorCode.NONE,
                reconciled.member_id,
                reconciled.member_epoch,
                req.protocols[0][0],
                "",
            )
        )

    def _joining_member(
        self, group: Group, cg: ConsumerGroup, req: JoinRequest, new_id: str, records: list[RecordKV]
    ) -> tuple[ConsumerMember | None, bool, ErrorCode]:
        """(the member the JoinGroup speaks for, whether it is new, the error if there is none)."""
        instance = req.group_instance_id
        if instance is None:
            existing = cg.members.get(req.member_id) if req.member_id else None
            if existing is None:
                return ConsumerMember(new_id), True, ErrorCode.NONE
            return existing, False, ErrorCode.NONE
        held = cg.static_members.get(instance)
        existing = cg.members.get(held) if held is not None else None
        if not req.member_id:
            if existing is None:
                return ConsumerMember(new_id), True, ErrorCode.NONE
            return self._cp._replace(group, cg, existing, new_id, records), True, ErrorCode.NONE
        if existing is None:
            return None, False, ErrorCode.UNKNOWN_MEMBER_ID
        if existing.member_id != req.member_id:
            return None, False, ErrorCode.FENCED_INSTANCE_ID
        return existing, False, ErrorCode.NONE

    # -- SyncGroup / Heartbeat / LeaveGroup ------------------------------------------------------
    def _validated(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> tuple[ConsumerMember | None, ErrorCode]:
        cg = group.consumer
        assert cg is not None
        if instance_id is not None:
            held = cg.static_members.get(instance_id)
            if held is None:
                return None, ErrorCode.UNKNOWN_MEMBER_ID
            if held != member_id:
                return None, ErrorCode.FENCED_INSTANCE_ID
        member = cg.members.get(member_id)
        if member is None or member.classic is None:
            return None, ErrorCode.UNKNOWN_MEMBER_ID
        if generation != member.member_epoch:
            return None, ErrorCode.ILLEGAL_GENERATION
        return member, ErrorCode.NONE

    def sync(
        self,
        group: Group,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol: tuple[str | None, str | None],
        callback: SyncCallback,
    ) -> None:
        cg = group.consumer
        assert cg is not None
        member, error = self._validated(group, member_id, instance_id, generation)
        if member is None:
            callback(SyncResult(error))
            return
        assert member.classic is not None
        kind, name = protocol
        if (kind is not None and kind != CONSUMER) or (
            name is not None and name != member.classic.protocol_name
        ):
            callback(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if cg.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._arm(cg.rebalance_timers, group, member, "it did not rejoin in time", only_if_absent=True)
            callback(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            return
        _cancel(cg.sync_timers, member_id)
        self._cp._arm_session(group, member_id)
        callback(
            SyncResult(ErrorCode.NONE, self._assignment_bytes(member, member.assigned, self._topic_names()))
        )

    def heartbeat(self, group: Group, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        cg = group.consumer
        assert cg is not None
        member, error = self._validated(group, member_id, instance_id, generation)
        if member is None:
            return error
        self._cp._arm_session(group, member_id)
        if (
            member.member_epoch < cg.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not _waiting_on_others(cg, member))
        ):
            self._arm(cg.rebalance_timers, group, member, "it did not rejoin in time", only_if_absent=True)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group: Group, members: Sequence[tuple[str, str | None]]) -> list[ErrorCode]:
        cg = group.consumer
        assert cg is not None
        codes: list[ErrorCode] = []
        records: list[RecordKV] = []
        for member_id, instance_id in members:
            if instance_id is not None:
                held = cg.static_members.get(instance_id)
                if held is None:
                    codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id not in ("", held):
                    codes.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = held
            member = cg.members.get(member_id)
            if member is None or member.classic is None:
                codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            log.info("group %s: classic member %s left", group.group_id, member_id)
            records.extend(self._cp.fence(group, member_id))
            codes.append(ErrorCode.NONE)
        if records:
            self._co._log.append(self._co.partition_for(group.group_id), records, None)
        return codes

    # -- timers ----------------------------------------------------------------------------------
    def _arm(
        self,
        timers: dict[str, TimerHandle],
        group: Group,
        member: ConsumerMember,
        why: str,
        *,
        only_if_absent: bool = False,
    ) -> None:
        """The join timer (``rebalance_timers``) or the sync timer (``sync_timers``) of a classic
        member: ``why`` removes it after its rebalance timeout."""
        old = timers.get(member.member_id)
        if old is not None:
            if only_if_absent:
                return
            old.cancel()
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300_000
        timers[member.member_id] = self._co._clock.call_later(
            timeout, lambda: self._cp._fence_later(group, member.member_id, None, why)
        )

    # -- assignments as classic members see them ---------------------------------------------------
    def _topic_names(self) -> dict[uuid.UUID, str]:
        return {state.topic_id: name for name, state in self._cp.topics().items()}

    def _assignment_bytes(
        self, member: ConsumerMember, assignment: Assignment, names: Mapping[uuid.UUID, str]
    ) -> bytes:
        """``assignment`` as a ConsumerProtocolAssignment (``names``: `_topic_names`), at the
        version of the member's first subscription (at most 3)."""
        assert member.classic is not None
        partitions = [
            TopicPartition(names[tid], p) for tid, parts in assignment.items() if tid in names for p in parts
        ]
        metadata = member.classic.protocols[0][1]
        version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
        return encode_assignment(partitions, None, min(max(version, 0), _MAX_ASSIGNMENT_VERSION))

    # -- conversions -----------------------------------------------------------------------------
    def can_upgrade(self, group: Group) -> bool:
        return (
            self._cp.settings.upgrades
            and group.protocol_type == CONSUMER
            and len(group.members) <= self._cp.settings.max_size
        )

    def upgrade(self, group: Group) -> None:
        """Turn a classic group with members into a consumer group (`can_upgrade` said yes) and
        append the records that say so, whatever becomes of the heartbeat that asked; raises
        `NotUpgradable` before changing anything if a member's data cannot be read."""
        generation, protocol = group.generation_id, group.protocol_name
        topics = self._cp.topics()
        members: list[ConsumerMember] = []
        records: list[RecordKV] = []
        for m in group.members.values():
            # (a member rejoining during PreparingRebalance may have dropped the chosen protocol)
            chosen = protocol if protocol in m.protocol_names else None
            metadata = m.metadata(chosen) if chosen is not None else m.protocols[0][1]
            try:
                subscription = decode_subscription(metadata)
                assigned = (
                    _by_topic_id(decode_assignment(m.assignment).partitions, topics) if m.assignment else {}
                )
            except ProtocolError as exc:
                log.info("group %s: not upgraded, member %s: %s", group.group_id, m.member_id, exc)
                raise NotUpgradable from None
            members.append(
                ConsumerMember(
                    m.member_id,
                    instance_id=m.group_instance_id,
                    rack_id=subscription.rack_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    assigned=assigned,
                    classic=ClassicMetadata(m.session_timeout_ms, m.protocols),
                )
            )
        self._co._end_classic_state(group, ErrorCode.REBALANCE_IN_PROGRESS)
        records.append(self._co._classic_tombstone(group))
        cg = ConsumerGroup(group_epoch=generation, assignment_epoch=generation)
        for member in members:
            cg.set_member(member)
            cg.target[member.member_id] = member.assigned
            records.append(member_record(group.group_id, member))
        records.append(epoch_record(group.group_id, generation))
        for member in members:
            records.append(target_member_record(group.group_id, member.member_id, member.assigned))
        records.append(target_epoch_record(group.group_id, generation))
        records.extend(assignment_record(group.group_id, member) for member in members)
        group.consumer = cg
        group.protocol_type = CONSUMER
        group.state = GroupState.EMPTY  # the classic state machine no longer applies
        for member in members:
            self._cp._arm_session(group, member.member_id)
        self._co._log.append(self._co.partition_for(group.group_id), records, None)
        log.info("group %s: upgraded to the consumer protocol at epoch %d", group.group_id, generation)

    def should_downgrade(self, group: Group, leaving: str, *, replaced: bool = False) -> bool:
        """Whether removing ``leaving`` (or, ``replaced``, a classic static member taking its
        instance id over) turns the group classic: it is the last consumer-protocol member, the
        others have a protocol in common, and the group fits ``group.max.size``."""
        cg = group.consumer
        assert cg is not None
        member = cg.members.get(leaving)
        others = [m for mid, m in cg.members.items() if mid != leaving]
        if any(m.classic is None for m in others):
            return False
        common = _common_protocols(others)
        return (
            self._cp.settings.downgrades
            and member is not None
            and member.classic is None
            and (replaced or bool(others))
            and (common is None or bool(common))
            and len(others) + int(replaced) <= self._cp.settings.classic_max_size
        )

    def downgrade_for_static_join(self, group: Group, req: JoinRequest) -> bool:
        """A classic static member (new member id) taking over the instance id of the last
        consumer-protocol member turns the group classic, with no rebalance: the old member becomes
        a classic one holding its target assignment, and the JoinGroup then replaces it as any
        static rejoin does (Kafka's validateOnlineDowngradeWithReplacedMemberId). False if not."""
        cg = group.consumer
        assert cg is not None
        if (
            req.group_instance_id is None
            or req.member_id
            or req.protocol_type != CONSUMER
            or not req.protocols
        ):
            return False
        held = cg.static_members.get(req.group_instance_id)
        if held is None or not self.should_downgrade(group, held, replaced=True):
            return False
        old = cg.members[held]
        if not _supported(cg, old, req):
            return False
        cg.set_member(old.with_(classic=ClassicMetadata(req.session_timeout_ms, req.protocols)))
        self.downgrade(group, held, keep=True)
        return True

    def downgrade(self, group: Group, leaving: str, *, keep: bool = False) -> None:
        """Remove the last consumer-protocol member ``leaving`` and turn the group into a classic
        group of the others, which then rebalances (`should_downgrade` said yes). ``keep``: the
        member is being replaced by a classic static member and stays, classic, with no rebalance."""
        cg = group.consumer
        assert cg is not None
        records = group_tombstones(group.group_id, cg)
        cg.cancel_timers()
        group.consumer = None
        group.protocol_type = CONSUMER
        group.generation_id = cg.group_epoch
        group.leader_id = None
        names = self._topic_names()
        for mid, m in cg.members.items():
            if (mid == leaving and not keep) or m.classic is None:
                continue
            member = Member(
                mid,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                CONSUMER,
                m.classic.protocols,
                assignment=self._assignment_bytes(m, cg.target.get(mid, {}), names),
            )
            group.add(member, None)
            if m.instance_id is not None:
                group.static_members[m.instance_id] = mid
        group.protocol_name = group.select_protocol()
        group.state = GroupState.STABLE
        group.state_timestamp_ms = self._co._clock.now_ms()
        self._co._log.append(self._co.partition_for(group.group_id), records, None)
        self._co._store_group(group, {m.member_id: m.assignment for m in group.members.values()}, None)
        for member in group.members.values():
            self._co._touch(group, member)
        log.info(
            "group %s: downgraded to the classic protocol at generation %d",
            group.group_id,
            group.generation_id,
        )
        if not keep:
            self._co._prepare_rebalance(group, f"the last consumer-protocol member {leaving} left")


class NotUpgradable(Exception):
    """A member's classic metadata or assignment could not be read."""


def _cancel(timers: dict[str, TimerHandle], member_id: str) -> None:
    handle = timers.pop(member_id, None)
    if handle is not None:
        handle.cancel()


def _new_member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()  # as Kafka's Uuid


def _supported(cg: ConsumerGroup, known: ConsumerMember | None, req: JoinRequest) -> bool:
    """Kafka's supportsClassicProtocols: some protocol of the request is one every classic member
    (this one's old entry aside) supports; anything goes while there are none."""
    names = {name for name, _ in req.protocols}
    common = _common_protocols(m for m in cg.members.values() if m is not known)
    return bool(names if common is None else names & common)


def _common_protocols(members: Iterable[ConsumerMember]) -> set[str] | None:
    """The protocol names every classic one of ``members`` supports; None if none is classic."""
    common: set[str] | None = None
    for m in members:
        if m.classic is not None:
            names = {name for name, _ in m.classic.protocols}
            common = names if common is None else common & names
    return common


def _by_topic_id(partitions: Sequence[TopicPartition], topics: Mapping[str, TopicState]) -> Assignment:
    """Topic-name partitions as an assignment by topic id; topics that do not exist are dropped."""
    out: dict[uuid.UUID, set[int]] = {}
    for tp in partitions:
        state = topics.get(tp.topic)
        if state is not None:
            out.setdefault(state.topic_id, set()).add(tp.partition)
    return {tid: frozenset(parts) for tid, parts in out.items()}


def _waiting_on_others(cg: ConsumerGroup, member: ConsumerMember) -> bool:
    """Whether a partition of the member's target is still owned by another member."""
    target = cg.target.get(member.member_id, {})
    for tid, parts in target.items():
        have = member.assigned.get(tid, frozenset())
        for p in parts - have:
            if cg.partition_epoch(tid, p) != -1:
                return True
    return False
