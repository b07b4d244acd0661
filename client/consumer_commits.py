"""Committed offsets of the consumer: the `ConsumerCommits` mixin.

Commits go to group.id's coordinator through the group member
(`client.group` or `client.group_consumer`); without a group.id they raise
`IllegalStateError`. An offset is the next offset to read: ``{tp: int}`` or
``{tp: OffsetAndMetadata}``, by default every assigned partition's position
(metadata ""). `commit` waits, `commit_async` returns the task and calls
``callback(offsets, error)`` when it completes. With enable.auto.commit,
`_maybe_auto_commit` (from poll) starts an asynchronous commit of the
positions every auto.commit.interval.ms, and `_commit_quietly` commits before
revocation and on close, logging failures instead of raising them.
`committed` reads the group's offsets; `group_metadata` gives the member's
identity for a transactional producer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client.consumer_state import ConsumerBase, _as_tp
from client.errors import IllegalStateError, KafkaError
from client.types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

log = logging.getLogger("client.consumer")


class ConsumerCommits(ConsumerBase):
    """Mixin of `client.consumer_aio.AIOConsumer`: commits, auto-commits and committed offsets."""

    # -- commits ---------------------------------------------------------------------------------------

    def _positions(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        tps = self._assigned if partitions is None else partitions
        out = {}
        for tp in tps:
            st = self._assigned.get(tp)
            if st is not None and st.position is not None:
                out[tp] = OffsetAndMetadata(st.position, "")
        return out

    def _commit_offsets(
        self, offsets: Mapping[Any, int | OffsetAndMetadata] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if self._group is None:
            raise IllegalStateError("commit needs a group.id")
        if offsets is None:
            return self._positions()
        out = {}
        for tp, om in offsets.items():
            out[_as_tp(tp)] = om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(int(om), "")
        return out

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for a transactional producer's `send_offsets_to_transaction`.

        Generation and member id are those commits carry now (-1 and "" while
        the member is not in the group).
        """
        group_id = self.config["group.id"]
        if group_id is None:
            raise IllegalStateError("group_metadata() needs a group.id")
        generation, member_id = self._group._commit_identity() if self._group is not None else (-1, "")
        return ConsumerGroupMetadata(group_id, generation, member_id, self.config["group.instance.id"])

    async def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        self._ensure_open()
        if self._group is None:
            raise IllegalStateError("committed() needs a group.id")
        tps = [_as_tp(tp) for tp in partitions]
        return await self._group.fetch_committed(tps, self._api_timeout)

    async def commit(self, offsets: Mapping[Any, int | OffsetAndMetadata] | None = None) -> None:
        """Commit ``offsets`` ({tp: next offset to read, or OffsetAndMetadata}), default every position."""
        self._ensure_open()
        to_commit = self._commit_offsets(offsets)
        assert self._group is not None
        await self._group.commit(to_commit, self._api_timeout)

    def commit_async(
        self,
        offsets: Mapping[Any, int | OffsetAndMetadata] | None = None,
        callback: Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], Any]
        | None = None,
    ) -> asyncio.Future[None]:
        """Start a commit and return at once; ``callback(offsets, error)`` runs when it completes."""
        self._ensure_open()
        to_commit = self._commit_offsets(offsets)
        assert self._group is not None
        task = asyncio.ensure_future(self._group.commit(to_commit, self._api_timeout))

        def done(t: asyncio.Future[None]) -> None:
            exc = None if t.cancelled() else t.exception()
            if exc is not None and callback is None:
                log.warning("async commit failed: %s", exc)
            if callback is not None:
                try:
                    callback(to_commit, exc)
                except Exception:
                    log.exception("commit callback raised")

        task.add_done_callback(done)
        return task

    async def _commit_quietly(self, partitions: Iterable[TopicPartition]) -> None:
        offsets = self._positions(partitions)
        if not offsets or self._group is None:
            return
        try:
            await self._group.commit(offsets, self._api_timeout)
        except KafkaError as exc:
            log.warning("auto-commit of %d partitions failed: %s", len(offsets), exc)

    def _maybe_auto_commit(self) -> None:
        now = time.monotonic()
        if now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self._auto_commit_interval
        offsets = self._positions()
        if offsets:
            self.commit_async(offsets, callback=lambda _o, e: e and log.debug("auto-commit failed: %s", e))
