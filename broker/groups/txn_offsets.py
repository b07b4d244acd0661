"""Transactional offset commits (TxnOffsetCommit) in the group coordinator.

`GroupTxnOffsets` is a part of `broker.groups.coordinator.GroupCoordinator`
(which inherits it), as `broker.groups.offsets.GroupOffsets` is.

- A commit is written to the group's `__consumer_offsets` partition as a
  transactional batch of the producer (id, epoch), in the same record format
  as plain commits, and answered once durable; an older producer epoch than
  the partition knows is INVALID_PRODUCER_EPOCH (the producer was fenced).
- Until the transaction ends the offsets are pending: OffsetFetch does not
  show them, and with require_stable a partition with a pending commit
  answers UNSTABLE_OFFSET_COMMIT.
- The transaction's marker on that partition (`complete_transaction`, called
  once the marker is written) makes them the committed offsets (COMMIT) or
  drops them (ABORT). On replay the log's markers do the same, and commits of
  transactions still open at the end of the log are pending again.
- Who may commit: as OffsetCommit, except that a commit with no member id
  and generation -1 (TxnOffsetCommit v0-2, or a producer outside any group)
  is always accepted, and a group that does not exist is created.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.groups.model import Group, GroupState, Member, TopicPartition
from broker.groups.offsets import offset_records
from broker.groups.records import OffsetKey, OffsetValue, decode_key, decode_offset_value
from broker.groups.store_errors import offset_store_error
from protocol.errors import ErrorCode, ProtocolError

if TYPE_CHECKING:
    from broker.groups.clock import Clock
    from broker.groups.offsets import OffsetCommit
    from broker.groups.offsets_log import CoordinatorConfig, OffsetsLog, RecordKV

log = logging.getLogger("minikafka.groups")


class GroupTxnOffsets:
    """The transactional-offsets part of the group coordinator."""

    config: CoordinatorConfig
    _groups: dict[str, Group]
    _log: OffsetsLog
    _clock: Clock

    if TYPE_CHECKING:  # provided by GroupCoordinator

        def _check(self, group_id: str, *, allow_empty_id: bool = False) -> ErrorCode | None: ...

        def partition_for(self, group_id: str) -> int: ...

        def _add_group(self, group_id: str) -> Group: ...

        def _touch(self, group: Group, member: Member) -> None: ...

        def _validate_member(
            self, group: Group, generation_id: int, member_id: str, group_instance_id: str | None
        ) -> ErrorCode | None: ...

        def _accept(
            self, offsets: dict[TopicPartition, OffsetCommit], now: int, expire: int | None = None
        ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, OffsetValue]]: ...

    def commit_txn_offsets(
        self,
        group_id: str,
        producer: tuple[int, int],
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, OffsetCommit],
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """Validate, write as a transactional batch of ``producer`` (id, epoch), keep pending."""

        def fail(code: ErrorCode) -> None:
            callback({tp: code for tp in offsets})

        error = self._check(group_id)
        if error is not None:
            fail(error)
            return
        group = self._groups.get(group_id) or self._add_group(group_id)
        error = self._txn_commit_error(group, member_id, generation_id, group_instance_id)
        if error is not None:
            fail(error)
            return
        results, accepted = self._accept(offsets, self._clock.now_ms())
        if not accepted:
            callback(results)
            return
        records = offset_records(group.group_id, accepted)

        def done(code: ErrorCode) -> None:
            if code == ErrorCode.NONE and not group.is_(GroupState.DEAD):
                group.pending_txn_offsets.setdefault(producer[0], {}).update(accepted)
            for tp in accepted:
                results[tp] = code if code == ErrorCode.INVALID_PRODUCER_EPOCH else offset_store_error(code)
            callback(results)

        self._log.append(self.partition_for(group.group_id), records, done, producer)

    def _txn_commit_error(
        self, group: Group, member_id: str, generation_id: int, instance_id: str | None
    ) -> ErrorCode | None:
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not member_id and generation_id < 0:
            return None
        if group.consumer is not None:
            member = group.consumer.members.get(member_id)
            if member is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member.member_epoch != generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return None
        error = self._validate_member(group, generation_id, member_id, instance_id)
        if error is None:
            self._touch(group, group.members[member_id])
        return error

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """The marker of ``producer_id`` was written on ``__consumer_offsets-<partition>``."""
        for group in self._groups.values():
            if (
                producer_id not in group.pending_txn_offsets
                or self.partition_for(group.group_id) != partition
            ):
                continue
            pending = group.pending_txn_offsets.pop(producer_id)
            if commit and not group.is_(GroupState.DEAD):
                group.offsets.update(pending)

    def unstable(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether an open transaction has committed an offset for ``tp`` (OffsetFetch require_stable)."""
        group = self._groups.get(group_id)
        return group is not None and any(tp in p for p in group.pending_txn_offsets.values())

    def _restore_open_transactions(self, partition: int, open_txns: dict[int, list[RecordKV]]) -> None:
        """After a replay: the offset commits of transactions still open are pending again."""
        for producer_id, records in open_txns.items():
            for key_bytes, value_bytes in records:
                try:
                    key = decode_key(key_bytes)
                    if not isinstance(key, OffsetKey) or value_bytes is None:
                        continue
                    value = decode_offset_value(value_bytes)
                except ProtocolError as exc:
                    log.warning("__consumer_offsets-%d: skipping an unreadable record: %s", partition, exc)
                    continue
                group = self._groups.get(key.group) or self._add_group(key.group)
                group.pending_txn_offsets.setdefault(producer_id, {})[(key.topic, key.partition)] = value
