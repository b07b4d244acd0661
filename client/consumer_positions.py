"""Positions of the consumer: the `ConsumerPositions` mixin.

A partition without a position gets one before it is fetched
(`_update_positions`, from poll and `position`): from the group's committed
offset when its reset is ``committed`` (falling back to auto.offset.reset when
nothing is committed), else by ListOffsets (API 2) with timestamp -2
(earliest) or -1 (latest, the last stable offset under read_committed);
``none`` leaves `NoOffsetForPartitionError` for poll to raise. `_list_offsets`
sends one ListOffsets per leader and retries stale-metadata errors and
OFFSET_NOT_AVAILABLE until default.api.timeout.ms; it returns {tp: (offset or
None, timestamp)}.

`seek` sets a position at once; `seek_to_beginning`/`seek_to_end` only set
the reset, resolved on the next poll or `position`. Either discards what was
buffered or in flight for the partition. Also here: `offsets_for_times`,
`beginning_offsets`/`end_offsets` (-1 where the broker has no offset), and
`pause`/`resume`/`highwater`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from client.consumer_state import ConsumerBase, _as_tp, _PartitionState
from client.errors import (
    METADATA_CODES,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    error_for,
)
from client.types import OffsetAndTimestamp, TopicPartition
from protocol.errors import ErrorCode

EARLIEST = -2
LATEST = -1


class ConsumerPositions(ConsumerBase):
    """Mixin of `client.consumer_aio.AIOConsumer`: positions, seeks, offset look-ups and pausing."""

    # -- positions -----------------------------------------------------------------------------------

    async def _update_positions(self) -> None:
        pending = [(tp, st) for tp, st in self._assigned.items() if st.position is None and st.error is None]
        if not pending:
            return
        committed = [tp for tp, st in pending if st.reset == "committed"]
        if committed:
            assert self._group is not None
            offsets = await self._group.fetch_committed(committed, self._api_timeout)
            for tp in committed:
                st = self._assigned.get(tp)
                if st is None or st.position is not None:
                    continue
                om = offsets.get(tp)
                if om is not None:
                    st.set_position(om.offset)
                else:
                    st.reset = self._auto_reset
        wanted: dict[TopicPartition, int] = {}
        for tp, st in self._assigned.items():
            if st.position is not None or st.error is not None:
                continue
            if st.reset == "none":
                st.error = NoOffsetForPartitionError(
                    f"no valid offset for {tp} and auto.offset.reset=none (seek to set one)"
                )
            elif st.reset in ("earliest", "latest"):
                wanted[tp] = EARLIEST if st.reset == "earliest" else LATEST
        if wanted:
            result = await self._list_offsets(wanted)
            for tp, (offset, _ts) in result.items():
                st = self._assigned.get(tp)
                if st is not None and st.position is None and offset is not None:
                    st.set_position(offset)
            self._wake_fetcher()

    async def _list_offsets(
        self, timestamps: dict[TopicPartition, int], timeout: float | None = None
    ) -> dict[TopicPartition, tuple[int | None, int]]:
        """ListOffsets per leader, retrying stale-metadata errors: {tp: (offset or None, timestamp)}."""
        deadline = time.monotonic() + (self._api_timeout if timeout is None else timeout)
        left = dict(timestamps)
        out: dict[TopicPartition, tuple[int | None, int]] = {}
        self.cluster.track(tp.topic for tp in left)
        while left:
            by_node: dict[int, list[TopicPartition]] = collections.defaultdict(list)
            missing = False
            for tp in left:
                leader = self.cluster.leader(tp)
                if leader is None:
                    missing = True
                else:
                    by_node[leader].append(tp)
            answers, failed = await self.cluster.list_offsets(
                by_node, left, self._read_committed, (KafkaError,)
            )
            last_error: object = failed
            missing = missing or failed is not None
            for tp, p in answers:
                if tp not in left:
                    continue
                if p.error_code == 0:
                    out[tp] = (p.offset if p.offset >= 0 else None, p.timestamp)
                    del left[tp]
                elif p.error_code in METADATA_CODES or p.error_code == ErrorCode.OFFSET_NOT_AVAILABLE:
                    last_error = error_for(p.error_code, context=str(tp))
                    missing = True
                else:
                    raise error_for(p.error_code, context=f"ListOffsets {tp}")
            if not left:
                break
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"ListOffsets did not complete for {sorted(left)}: {last_error}")
            if missing:
                with contextlib.suppress(KafkaError):
                    await self.cluster.refresh()
                await asyncio.sleep(self._retry_backoff)
        return out

    def _state(self, tp: Any) -> _PartitionState:
        tp = _as_tp(tp)
        st = self._assigned.get(tp)
        if st is None:
            raise IllegalStateError(f"{tp} is not assigned to this consumer")
        return st

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """Make the next poll return ``partition`` from ``offset``."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, not {offset}")
        self._state(partition).set_position(offset)
        self._wake_fetcher()

    def _seek_reset(self, partitions: Iterable[Any], strategy: str) -> None:
        tps = [_as_tp(tp) for tp in partitions] or list(self._assigned)
        for tp in tps:
            st = self._state(tp)
            st.position = None
            st.reset = strategy
            st.error = None
            st.discard()

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Seek to the log start offset (lazily, on the next poll/position); all partitions if none given."""
        self._seek_reset(partitions, "earliest")

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Seek to the end offset (LSO under read_committed), lazily; all partitions if none given."""
        self._seek_reset(partitions, "latest")

    async def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        """The offset the next poll returns from for ``partition`` (resolving a pending reset)."""
        st = self._state(partition)
        if st.position is None:
            await self._update_positions()
            if st.error is not None:
                err, st.error = st.error, None
                raise err
        assert st.position is not None
        return st.position

    async def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """Earliest offset whose timestamp is >= the given ms timestamp, per partition (None if none)."""
        self._ensure_open()
        query = {_as_tp(tp): ts for tp, ts in timestamps.items()}
        for ts in query.values():
            if ts < 0:
                raise ValueError(f"timestamps must be >= 0, not {ts}")
        result = await self._list_offsets(query)
        return {
            tp: (OffsetAndTimestamp(off, ts) if off is not None else None)
            for tp, (off, ts) in ((tp, result.get(tp, (None, -1))) for tp in query)
        }

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        self._ensure_open()
        result = await self._list_offsets({_as_tp(tp): EARLIEST for tp in partitions})
        return {tp: off if off is not None else -1 for tp, (off, _) in result.items()}

    async def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        self._ensure_open()
        result = await self._list_offsets({_as_tp(tp): LATEST for tp in partitions})
        return {tp: off if off is not None else -1 for tp, (off, _) in result.items()}

    def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        """Stop fetching and returning records for ``partitions`` until `resume`."""
        for tp in partitions:
            self._state(tp).paused = True

    def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        for tp in partitions:
            self._state(tp).paused = False
        self._wake_fetcher()

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, st in self._assigned.items() if st.paused}

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        """The high watermark seen in the last fetch of ``partition`` (None before one)."""
        hw = self._state(partition).high_watermark
        return hw if hw >= 0 else None
