"""Resetting a consumer group's committed offsets, as ``kafka-consumer-groups --reset-offsets`` does:
plan first (a dry run), then commit the plan while the group has no members.

Shared by the ``minikafka groups reset-offsets`` command and the web console. The functions
take an `AIOAdminClient`; with the synchronous `AdminClient` run them through
``admin.run(plan_offset_reset, ...)``.

- `plan_offset_reset`: the new offset of each partition under a `ResetStrategy`
  (earliest, latest, an offset, a shift of the committed offset, or the first
  offset at or after a timestamp), clamped to the partition's log
  ``[log start offset, end offset]`` as Kafka's tool does. Changes nothing.
- `execute_offset_reset`: refuses unless the group is Empty or Dead (an
  active group's members would overwrite the offsets, and what they committed
  is still moving), then commits the plan.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from client.errors import KafkaError, KafkaResponseError
from client.types import OffsetAndTimestamp, TopicPartition
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from client.admin import AIOAdminClient

ResetKind = Literal["earliest", "latest", "offset", "shift", "timestamp"]
INACTIVE_STATES = ("Empty", "Dead")


class OffsetResetError(KafkaError):
    """An offset reset that cannot be planned or executed; the message says why."""


@dataclass(frozen=True)
class ResetStrategy:
    """Where to move each partition's committed offset; build with the class methods.

    ``kind``: "earliest", "latest", "offset" (``value`` is the offset), "shift"
    (``value`` is added to the committed offset; negative moves back) or
    "timestamp" (``value`` in ms since the epoch: the first offset whose record
    is at or after it, the end offset when there is none).
    """

    kind: ResetKind
    value: int = 0

    @classmethod
    def earliest(cls) -> ResetStrategy:
        return cls("earliest")

    @classmethod
    def latest(cls) -> ResetStrategy:
        return cls("latest")

    @classmethod
    def to_offset(cls, offset: int) -> ResetStrategy:
        return cls("offset", offset)

    @classmethod
    def shift_by(cls, delta: int) -> ResetStrategy:
        return cls("shift", delta)

    @classmethod
    def to_timestamp(cls, ms: int) -> ResetStrategy:
        """``ValueError`` for a negative timestamp."""
        if ms < 0:
            raise ValueError(f"a timestamp to reset to must be >= 0 ms, not {ms}")
        return cls("timestamp", ms)


@dataclass(frozen=True)
class ResetRow:
    """One partition of a plan: its committed offset (None: nothing committed) and the new one."""

    partition: TopicPartition
    current_offset: int | None
    new_offset: int


async def plan_offset_reset(
    admin: AIOAdminClient,
    group_id: str,
    partitions: Iterable[TopicPartition] | None,
    strategy: ResetStrategy,
) -> list[ResetRow]:
    """The reset plan of ``group_id``: a row per partition, in the order given (``partitions`` None:
    every partition the group committed, sorted; none committed gives an empty plan).

    The new offset is clamped to the partition's ``[log start, end]``. Raises
    `OffsetResetError` for a "shift" of a partition without a committed offset,
    and the broker's error for a partition whose offsets cannot be listed
    (UNKNOWN_TOPIC_OR_PARTITION, ...). Commits nothing.
    """
    committed = await admin.list_consumer_group_offsets(group_id)
    tps = sorted(committed) if partitions is None else list(dict.fromkeys(partitions))
    if not tps:
        return []
    if strategy.kind == "shift":
        for tp in tps:
            if tp not in committed:
                raise OffsetResetError(f"{tp} has no committed offset to shift")
    lookups = [
        admin.list_offsets(dict.fromkeys(tps, "earliest")),
        admin.list_offsets(dict.fromkeys(tps, "latest")),
    ]
    if strategy.kind == "timestamp":
        lookups.append(admin.list_offsets(dict.fromkeys(tps, strategy.value)))
    earliest, latest, *by_time = await asyncio.gather(*lookups)
    rows = []
    for tp in tps:
        lo, hi = _bound(tp, earliest), _bound(tp, latest)
        current = committed.get(tp)
        if strategy.kind == "earliest":
            target = lo
        elif strategy.kind == "latest":
            target = hi
        elif strategy.kind == "offset":
            target = strategy.value
        elif strategy.kind == "shift":
            assert current is not None  # checked above
            target = current.offset + strategy.value
        else:
            found = by_time[0].get(tp)
            target = found.offset if isinstance(found, OffsetAndTimestamp) else hi
        rows.append(ResetRow(tp, current.offset if current is not None else None, min(max(target, lo), hi)))
    return rows


def _bound(tp: TopicPartition, answers: dict[TopicPartition, OffsetAndTimestamp | KafkaError | None]) -> int:
    """The offset ListOffsets answered for ``tp`` (0 when none); its error raises."""
    answer = answers.get(tp)
    if isinstance(answer, KafkaError):
        raise answer
    return answer.offset if answer is not None else 0


async def ensure_group_inactive(admin: AIOAdminClient, group_id: str) -> str:
    """The group's state if it is Empty or Dead (unknown groups are Dead); else `OffsetResetError`.

    An error describing the group (GROUP_AUTHORIZATION_FAILED, ...) raises as it
    is, except GROUP_ID_NOT_FOUND (what newer brokers answer for an unknown group): Dead.
    """
    description = (await admin.describe_groups([group_id])).get(group_id)
    error = description.error if description is not None else None
    if isinstance(error, KafkaResponseError) and error.code == ErrorCode.GROUP_ID_NOT_FOUND:
        return "Dead"
    if error is not None:
        raise error
    state = description.state if description is not None else "Dead"
    if state not in INACTIVE_STATES:
        raise OffsetResetError(
            f"assignments can only be reset if the group {group_id!r} is inactive, but its state is {state}"
        )
    return state


async def execute_offset_reset(admin: AIOAdminClient, group_id: str, rows: Iterable[ResetRow]) -> None:
    """Commit the plan's new offsets for ``group_id`` (metadata "").

    Refuses first with `OffsetResetError` unless the group is Empty or Dead
    (`ensure_group_inactive`); partitions the commit failed for raise one
    `OffsetResetError` naming each error, "; "-separated.
    """
    plan = {row.partition: row.new_offset for row in rows}
    await ensure_group_inactive(admin, group_id)
    if not plan:
        return
    result = await admin.alter_consumer_group_offsets(group_id, plan)
    errors = [str(e) for e in result.values() if e is not None]
    if errors:
        raise OffsetResetError("; ".join(errors))
