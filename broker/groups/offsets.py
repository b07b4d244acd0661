"""Committed offsets of the group coordinator: OffsetCommit, OffsetFetch, OffsetDelete and expiry.

`GroupOffsets` is a part of `broker.groups.coordinator.GroupCoordinator` (which
inherits it) holding what concerns offsets rather than membership; it uses the
coordinator's groups, log, clock and configuration, declared below. The rules
are in the coordinator's module docstring (who may commit, durability, expiry).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.groups.model import Group, GroupState, Member, TopicPartition
from broker.groups.records import OffsetKey, OffsetValue, encode_offset_key, encode_offset_value
from broker.groups.store_errors import offset_store_error
from protocol.consumer_subscription import subscribed_topics
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.groups.clock import Clock, TimerHandle
    from broker.groups.offsets_log import CoordinatorConfig, OffsetsLog, RecordKV

log = logging.getLogger("minikafka.groups")

DEFAULT_RETENTION_TIME = -1  # OffsetCommit retention_time_ms meaning "the broker's retention"


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One partition of an OffsetCommit request (null metadata is stored as "")."""

    offset: int
    metadata: str | None
    leader_epoch: int = -1


def _utf16_length(s: str) -> int:
    """Java's String.length(), which `offset.metadata.max.bytes` is compared with."""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def offset_records(group_id: str, values: dict[TopicPartition, OffsetValue]) -> list[RecordKV]:
    """The `__consumer_offsets` records committing ``values`` for ``group_id``."""
    return [
        (encode_offset_key(OffsetKey(group_id, topic, p)), encode_offset_value(value))
        for (topic, p), value in values.items()
    ]


class GroupOffsets:
    """The offsets half of the group coordinator."""

    config: CoordinatorConfig
    closed: bool
    loading: bool
    _groups: dict[str, Group]
    _log: OffsetsLog
    _clock: Clock
    _expiry_timer: TimerHandle | None

    if TYPE_CHECKING:  # provided by GroupCoordinator

        def _check(self, group_id: str, *, allow_empty_id: bool = False) -> ErrorCode | None: ...

        def partition_for(self, group_id: str) -> int: ...

        def _add_group(self, group_id: str) -> Group: ...

        def _touch(self, group: Group, member: Member) -> None: ...

        def _remove_group(self, group: Group, offsets: set[TopicPartition]) -> list[RecordKV]: ...

    # -- offsets -----------------------------------------------------------------------------
    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        offsets: dict[TopicPartition, OffsetCommit],
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
        missing_group: ErrorCode = ErrorCode.ILLEGAL_GENERATION,
        api_version: int | None = None,
    ) -> None:
        """Validate membership, then persist; ``callback`` gets one error code per partition.

        ``missing_group``: the answer to a generation >= 0 for a group that does not
        exist (OffsetCommit v9+ says GROUP_ID_NOT_FOUND). In a consumer-protocol group
        ``generation_id`` is the member epoch, and ``api_version`` (the OffsetCommit
        version) must be 9 or more for its members, as in Kafka.
        """

        def fail(code: ErrorCode) -> None:
            callback({tp: code for tp in offsets})

        error = self._check(group_id, allow_empty_id=True)
        if error is not None:
            fail(error)
            return
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                fail(missing_group)  # a member of a group that no longer exists
                return
            group = self._add_group(group_id)  # a standalone consumer using Kafka only for offsets
        if group.consumer is not None:
            error = self._consumer_commit_error(group, member_id, generation_id, api_version)
            if error is None:
                self._store_offsets(group, retention_time_ms, offsets, callback)
            else:
                fail(error)
        elif group.is_(GroupState.DEAD):
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        elif group.is_static_member_fenced(member_id, group_instance_id):
            fail(ErrorCode.FENCED_INSTANCE_ID)
        elif generation_id < 0 and group.is_(GroupState.EMPTY):
            self._store_offsets(group, retention_time_ms, offsets, callback)
        elif member_id not in group.members:
            fail(ErrorCode.UNKNOWN_MEMBER_ID)
        elif generation_id != group.generation_id:
            fail(ErrorCode.ILLEGAL_GENERATION)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            fail(ErrorCode.REBALANCE_IN_PROGRESS)
        else:  # Stable or PreparingRebalance: the generation is still the current one
            self._touch(group, group.members[member_id])
            self._store_offsets(group, retention_time_ms, offsets, callback)

    @staticmethod
    def _consumer_commit_error(
        group: Group, member_id: str, member_epoch: int, api_version: int | None
    ) -> ErrorCode | None:
        cg = group.consumer
        assert cg is not None
        if member_epoch < 0 and not cg.members:
            return None  # an admin or a consumer outside the group, while the group is empty
        member = cg.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is not None:  # a classic member commits with its generation: the member epoch
            return ErrorCode.ILLEGAL_GENERATION if member_epoch != member.member_epoch else None
        if api_version is not None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def _store_offsets(
        self,
        group: Group,
        retention_time_ms: int,
        offsets: dict[TopicPartition, OffsetCommit],
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        now = self._clock.now_ms()
        expire = None if retention_time_ms == DEFAULT_RETENTION_TIME else now + retention_time_ms
        results, accepted = self._accept(offsets, now, expire)
        if not accepted:
            callback(results)
            return
        records = offset_records(group.group_id, accepted)
        for tp in accepted:
            group.pending_commits[tp] = group.pending_commits.get(tp, 0) + 1

        def done(code: ErrorCode) -> None:
            for tp, value in accepted.items():
                left = group.pending_commits.get(tp, 1) - 1
                if left:
                    group.pending_commits[tp] = left
                else:
                    group.pending_commits.pop(tp, None)
                if code == ErrorCode.NONE and not group.is_(GroupState.DEAD):
                    group.offsets[tp] = value
                results[tp] = offset_store_error(code)
            callback(results)

        self._log.append(self.partition_for(group.group_id), records, done)

    def _accept(
        self, offsets: dict[TopicPartition, OffsetCommit], now: int, expire: int | None = None
    ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, OffsetValue]]:
        """(OFFSET_METADATA_TOO_LARGE per refused partition, the values to store for the others)."""
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetValue] = {}
        for tp, commit in offsets.items():
            metadata = commit.metadata or ""
            if _utf16_length(metadata) > self.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = OffsetValue(commit.offset, metadata, now, commit.leader_epoch, expire)
        return results, accepted

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetValue | None]]:
        """Committed offsets (None where nothing is committed); ``partitions`` None: all of them.

        OffsetFetch v9's member id and epoch are checked for consumer-protocol groups
        (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a classic member) unless
        both are unset (None, < 0).
        """
        error = self._check(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        group = self._groups.get(group_id)
        if group is not None and group.consumer is not None and (member_id is not None or member_epoch >= 0):
            member = group.consumer.members.get(member_id or "")
            if member is None:
                return ErrorCode.UNKNOWN_MEMBER_ID, {}
            if member.member_epoch != member_epoch:
                stale = (
                    ErrorCode.ILLEGAL_GENERATION
                    if member.classic is not None
                    else ErrorCode.STALE_MEMBER_EPOCH
                )
                return stale, {}
        committed = group.offsets if group is not None and not group.is_(GroupState.DEAD) else {}
        if partitions is None:
            return ErrorCode.NONE, dict(committed)
        return ErrorCode.NONE, {tp: committed.get(tp) for tp in partitions}

    def delete_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetDelete: forget committed offsets; ``callback(group error, code per partition)``.

        As Kafka: an Empty group loses every one asked for; a consumer group with
        members keeps those of topics a member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC);
        any other group with members is NON_EMPTY_GROUP. Answered once the tombstones are stored.
        """
        error = self._check(group_id)
        if error is not None:
            callback(error, {})
            return
        group = self._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            callback(ErrorCode.GROUP_ID_NOT_FOUND, {})
            return
        codes = dict.fromkeys(partitions, ErrorCode.NONE)
        if group.consumer is not None:
            consumed = set(group.consumer.subscription_metadata)
            for tp in codes:
                if tp[0] in consumed:
                    codes[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        elif not group.is_(GroupState.EMPTY):
            if group.protocol_type != "consumer":
                callback(ErrorCode.NON_EMPTY_GROUP, {})
                return
            consumed = self._subscribed_topics(group)
            for tp in codes:
                if consumed is None or tp[0] in consumed:
                    codes[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        gone = sorted(tp for tp, code in codes.items() if code == ErrorCode.NONE and tp in group.offsets)
        if not gone:
            callback(ErrorCode.NONE, codes)
            return
        records: list[RecordKV] = [(encode_offset_key(OffsetKey(group_id, t, p)), None) for t, p in gone]

        def stored(code: ErrorCode) -> None:
            for tp in gone:
                if code != ErrorCode.NONE:
                    codes[tp] = offset_store_error(code)
                else:
                    group.offsets.pop(tp, None)
            callback(ErrorCode.NONE, codes)

        self._log.append(self.partition_for(group_id), records, stored)

    @staticmethod
    def _subscribed_topics(group: Group) -> set[str] | None:
        """Every topic a member of a consumer group subscribes to; None if unknown (no protocol chosen
        yet, or a subscription that cannot be read): then every topic counts as subscribed, as in Kafka."""
        if group.protocol_name is None:
            return None
        topics: set[str] = set()
        chosen = group.protocol_name
        for member in group.members.values():
            metadata = next((data for name, data in member.protocols if name == chosen), None)
            if metadata is None:
                continue  # joined the coming generation with other protocols: not subscribed in this one
            found = subscribed_topics(metadata)
            if found is None:
                return None
            topics |= found
        return topics

    def remove_offsets_of_topic(self, topic: str) -> None:
        """Forget committed offsets of a deleted topic (tombstones, not awaited), as Kafka does."""
        if self.closed or self.loading:
            return
        for group in list(self._groups.values()):
            gone = sorted(tp for tp in group.offsets if tp[0] == topic)
            if not gone:
                continue
            for tp in gone:
                del group.offsets[tp]
            records: list[RecordKV] = [
                (encode_offset_key(OffsetKey(group.group_id, t, p)), None) for t, p in gone
            ]
            if self._removable(group):
                records += self._remove_group(group, set())
            self._log.append(self.partition_for(group.group_id), records, None)

    # -- offset expiry -----------------------------------------------------------------------
    def _schedule_expiry(self) -> None:
        self._expiry_timer = self._clock.call_later(
            self.config.offsets_retention_check_interval_ms, self._expiry_fired
        )

    def _expiry_fired(self) -> None:
        self._expiry_timer = None
        if self.closed:
            return
        self.expire_offsets()
        self._schedule_expiry()

    def expire_offsets(self) -> int:
        """Drop expired offsets and then-empty groups (writing tombstones); returns offsets removed."""
        now = self._clock.now_ms()
        removed = 0
        for group in list(self._groups.values()):
            expired = self._expired_offsets(group, now)
            for tp in expired:
                del group.offsets[tp]
            records: list[RecordKV] = [
                (encode_offset_key(OffsetKey(group.group_id, t, p)), None) for t, p in sorted(expired)
            ]
            removed += len(expired)
            if self._removable(group):
                log.info("group %s: empty without offsets, removing it", group.group_id)
                records += self._remove_group(group, set())
            if records:
                self._log.append(self.partition_for(group.group_id), records, None)
        if removed:
            log.info("expired %d committed offsets", removed)
        return removed

    @staticmethod
    def _removable(group: Group) -> bool:
        return (
            group.is_(GroupState.EMPTY)
            and (group.consumer is None or not group.consumer.members)
            and not group.offsets
            and not group.pending_commits
            and not group.pending_members
        )

    def _expired_offsets(self, group: Group, now: int) -> list[TopicPartition]:
        if not group.is_(GroupState.EMPTY) or (group.consumer is not None and group.consumer.members):
            return []  # (Kafka also expires unsubscribed topics of Stable consumer groups; we do not)
        retention = self.config.offsets_retention_ms
        out = []
        for tp, value in group.offsets.items():
            if tp in group.pending_commits:
                continue
            if value.expire_timestamp is not None:
                if now >= value.expire_timestamp:
                    out.append(tp)
                continue
            # a group that had members counts from when it became Empty; a standalone one from the commit
            base = value.commit_timestamp
            if group.protocol_type is not None and group.state_timestamp_ms is not None:
                base = group.state_timestamp_ms
            if now - base >= retention:
                out.append(tp)
        return out
