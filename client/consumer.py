"""The consumer: `AIOConsumer` (asyncio) and `Consumer` (synchronous, on a background loop).

Positions: each assigned partition has a *position* (the next offset `poll`
returns) and a *fetch offset* (the next offset to ask the broker for, ahead of
the position by whatever is buffered). A partition without a position gets one
before fetching: from the group's committed offset when there is a group.id,
else (or when nothing is committed) from auto.offset.reset via ListOffsets
(earliest/latest; ``none`` raises `NoOffsetForPartitionError` from poll).
`seek*` replace the position and discard what was buffered or in flight for
the partition (an epoch per partition tells stale fetch answers apart).

Fetching: a task on the loop keeps one Fetch in flight per broker for every
assigned, unpaused partition whose raw buffer is below
max.partition.fetch.bytes, so the next fetch travels while the caller works on
the last one. Responses are kept raw; `poll` decodes a partition's record set
only when it needs its records (`client.records.decode_record_set`: the whole
set in one vectorized pass, skipping control batches and, with
isolation.level=read_committed, aborted transactions), and hands out at most
max_records per call, round-robin over partitions.

Groups: `subscribe` (topic list or regex) makes the consumer a group member
(`client.group`, or `client.group_consumer` with group.protocol=consumer, Kafka 4's
protocol where the coordinator assigns): rebalances run inside `poll`, where the rebalance listener is
called; enable.auto.commit commits the positions every auto.commit.interval.ms
from poll, before each rebalance and on close. `assign` takes partitions by
hand (commits still go to group.id when there is one).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from client._loop import LoopThread, call_in_caller
from client.cluster import Cluster, list_offsets_body
from client.config import consumer_config
from client.errors import (
    METADATA_CODES,
    ClientClosedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    error_for,
)
from client.group import GroupMember
from client.group_consumer import new_group_member
from client.records import RecordColumns, columns_to_records, decode_record_columns, next_fetch_offset
from client.types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("client.consumer")

FETCH = 1
LIST_OFFSETS = 2
EARLIEST = -2
LATEST = -1


class ConsumerRebalanceListener:
    """Override to act on rebalances; the methods get sets of `TopicPartition`.

    ``on_partitions_revoked`` runs before partitions are taken away (commit
    here), ``on_partitions_assigned`` after new ones arrive (seek here), and
    ``on_partitions_lost`` when they were already reassigned (defaults to
    revoked). They run inside poll, in the thread that called it; with
    `AIOConsumer` they may be coroutines.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        return self.on_partitions_revoked(lost)


class ConsumerRecords(list[ConsumerRecord]):
    """What poll returns: a list of records (partition by partition, each in offset order)."""

    def partitions(self) -> set[TopicPartition]:
        return {TopicPartition(r.topic, r.partition) for r in self}

    def records(self, tp: TopicPartition) -> list[ConsumerRecord]:
        return [r for r in self if r.topic == tp.topic and r.partition == tp.partition]


class _Completed:
    __slots__ = ("raw", "aborted", "epoch")

    def __init__(self, raw: bytes, aborted: list[tuple[int, int]], epoch: int) -> None:
        self.raw = raw
        self.aborted = aborted
        self.epoch = epoch


class _PartitionState:
    __slots__ = (
        "position",
        "reset",
        "paused",
        "epoch",
        "fetch_offset",
        "fetching",
        "completed",
        "buffered",
        "records",
        "index",
        "next_after",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "error",
        "backoff_until",
    )

    def __init__(self, reset: str) -> None:
        self.position: int | None = None
        self.reset: str | None = reset  # committed | earliest | latest | none, while position is None
        self.paused = False
        self.epoch = 0
        self.fetch_offset = 0
        self.fetching = False
        self.completed: collections.deque[_Completed] = collections.deque()
        self.buffered = 0
        self.records: list[ConsumerRecord] = []
        self.index = 0
        self.next_after = 0
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.error: BaseException | None = None
        self.backoff_until = 0.0

    def set_position(self, offset: int) -> None:
        self.position = offset
        self.fetch_offset = offset
        self.reset = None
        self.error = None
        self.discard()

    def discard(self) -> None:
        self.epoch += 1
        self.completed.clear()
        self.buffered = 0
        self.records = []
        self.index = 0


def _as_tp(tp: Any) -> TopicPartition:
    if isinstance(tp, TopicPartition):
        return tp
    topic, partition = tp
    return TopicPartition(topic, partition)


class AIOConsumer:
    """Asyncio consumer. ``AIOConsumer("topic", group_id="g", bootstrap_servers=...)``; ``await start()``."""

    def __init__(self, *topics: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if topics and isinstance(
            topics[0], Mapping
        ):  # Consumer({"bootstrap.servers": ...}), as confluent-kafka
            config = {**topics[0], **(config or {})}
            topics = topics[1:]
        self.config = consumer_config(config, **kwargs)
        c = self.config
        self._initial_topics = list(topics)
        self._auto_reset: str = c["auto.offset.reset"]
        self._max_poll_records: int = c["max.poll.records"]
        self._read_committed = c["isolation.level"] == "read_committed"
        self._check_crcs: bool = c["check.crcs"]
        self._request_timeout = c["request.timeout.ms"] / 1000
        self._api_timeout = c["default.api.timeout.ms"] / 1000
        self._retry_backoff = c["retry.backoff.ms"] / 1000
        self._auto_commit: bool = c["enable.auto.commit"]
        self._auto_commit_interval = c["auto.commit.interval.ms"] / 1000
        self._key_deserializer: Callable[[bytes | None], Any] | None = c["key.deserializer"]
        self._value_deserializer: Callable[[bytes | None], Any] | None = c["value.deserializer"]
        # A partition is fetched again while at most one full fetch of it waits to be decoded, so the
        # next response travels while poll decodes the last one.
        self._prefetch_limit = 2 * max(c["max.partition.fetch.bytes"], 1)
        self._cluster: Cluster | None = None
        self._group: GroupMember | None = None
        self._assigned: dict[TopicPartition, _PartitionState] = {}
        self._topics: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._manual = False
        self._listener: ConsumerRebalanceListener | None = None
        self._last_poll = time.monotonic()
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        self._nodes_fetching: set[int] = set()
        self._fetcher: asyncio.Task[None] | None = None
        self._fetch_waiter: asyncio.Future[None] | None = None
        self._fetch_woken = False
        self._poll_waiter: asyncio.Future[None] | None = None
        self._metadata_task: asyncio.Task[None] | None = None
        self._rotate = 0
        self._closed = False
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._cluster = Cluster(
            self.config, allow_auto_topic_creation=self.config["allow.auto.create.topics"]
        )
        self._cluster.add_listener(self._on_metadata)
        self._fetcher = asyncio.ensure_future(self._fetch_loop())
        if self._initial_topics:
            self.subscribe(self._initial_topics)

    async def __aenter__(self) -> AIOConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            raise IllegalStateError("consumer not started: await start() first")
        return self._cluster

    def _ensure_open(self) -> None:
        if self._closed:
            raise ClientClosedError("consumer is closed")
        if not self._started:
            raise IllegalStateError("consumer not started: await start() first")

    async def close(self, autocommit: bool = True) -> None:
        """Commit (if enable.auto.commit and ``autocommit``), leave the group and close connections."""
        if self._closed or not self._started:
            self._closed = True
            return
        try:
            if self._group is not None:
                if self._auto_commit and autocommit and self._group.owned:
                    await self._commit_quietly(self._group.owned)
                if not self._manual:
                    await self._group.close()
            elif self._auto_commit and autocommit:
                await self._commit_quietly(set(self._assigned))
        finally:
            self._closed = True
            self._wake()
            for task in (self._fetcher, self._metadata_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            await self.cluster.close()

    # -- subscription --------------------------------------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join group.id to consume ``topics`` (or every topic matching ``pattern``).

        A single string starting with ``^`` is taken as a pattern, as in
        librdkafka. Replaces any earlier subscription; not allowed after `assign`.
        """
        self._ensure_open()
        if self.config["group.id"] is None:
            raise IllegalStateError("subscribe() needs a group.id; use assign() without one")
        if self._manual and self._assigned:
            raise IllegalStateError("subscribe() and assign() cannot be mixed; unsubscribe() first")
        if isinstance(topics, re.Pattern) or (isinstance(topics, str) and topics.startswith("^")):
            pattern, topics = topics, ()
        elif isinstance(topics, str):
            topics = [topics]
        topic_list = list(topics)
        if pattern is not None and topic_list:
            raise IllegalStateError("subscribe() takes topics or a pattern, not both")
        if pattern is None and not topic_list:
            raise IllegalStateError("subscribe() needs topics or a pattern")
        self._manual = False
        self._listener = listener
        if pattern is not None:
            self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
            self.cluster.want_all_topics = True
            self._topics = self._match_pattern()
            self._refresh_metadata_bg()
        else:
            self._pattern = None
            self.cluster.want_all_topics = False
            self._topics = set(topic_list)
        self.cluster.track(self._topics)
        if self._group is None:
            self._group = new_group_member(self)
        self._group.request_rejoin()

    def _match_pattern(self) -> set[str]:
        assert self._pattern is not None
        exclude_internal = self.config["exclude.internal.topics"]
        return {
            name
            for name, info in self.cluster.topics.items()
            if self._pattern.fullmatch(name) and not (exclude_internal and info.internal)
        }

    def _subscribed_topics(self) -> set[str]:
        return set(self._topics)

    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: the matching topics known so far)."""
        return set(self._topics)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly ``partitions`` (no group membership); replaces any earlier assignment."""
        self._ensure_open()
        if self._topics and not self._manual:
            raise IllegalStateError("assign() and subscribe() cannot be mixed; unsubscribe() first")
        tps = {_as_tp(tp) for tp in partitions}
        self._manual = True
        self._topics = set()
        self.cluster.track(tp.topic for tp in tps)
        if self.config["group.id"] is not None and self._group is None:
            self._group = GroupMember(self)
        self._set_assignment(tps)

    async def unsubscribe(self) -> None:
        """Drop the subscription or assignment (revoking and leaving the group first)."""
        self._ensure_open()
        if self._group is not None and not self._manual:
            if self._auto_commit and self._group.owned:
                await self._commit_quietly(self._group.owned)
            await self._group.close()
            self._group = None
        self._topics = set()
        self._pattern = None
        self._manual = False
        self._set_assignment(set())

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def _set_assignment(self, partitions: set[TopicPartition]) -> None:
        reset = "committed" if self.config["group.id"] is not None else self._auto_reset
        for tp in list(self._assigned):
            if tp not in partitions:
                self._assigned.pop(tp).discard()
        for tp in sorted(partitions):
            if tp not in self._assigned:
                self._assigned[tp] = _PartitionState(reset)
        self.cluster.track(tp.topic for tp in partitions)
        self._wake_fetcher()

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        listener = self._listener
        if listener is None:
            return
        fn = getattr(listener, method, None)
        if fn is None and method == "on_partitions_lost":
            fn = getattr(listener, "on_partitions_revoked", None)
        if fn is None:
            return
        try:
            await call_in_caller(fn, set(partitions))
        except Exception:
            log.exception("rebalance listener %s raised", method)

    # -- polling -------------------------------------------------------------------------------------

    async def poll(self, timeout: float = 0.0, max_records: int | None = None) -> ConsumerRecords:
        """Records fetched for the assigned partitions, waiting up to ``timeout`` s for some.

        Returns at most ``max_records`` (default max.poll.records). Runs group
        rebalances and auto-commits; raises `NoOffsetForPartitionError` for a
        partition without a valid offset under auto.offset.reset=none.
        """
        self._ensure_open()
        limit = max_records or self._max_poll_records
        deadline = time.monotonic() + timeout
        while True:
            self._last_poll = time.monotonic()
            if self._group is not None and not self._manual and (self._topics or self._pattern is not None):
                await self._group.poll()
            if self._auto_commit and self._group is not None:
                self._maybe_auto_commit()
            if self.cluster.stale:
                self._refresh_metadata_bg()
            await self._update_positions()
            for st in self._assigned.values():
                if st.error is not None:
                    err, st.error = st.error, None
                    raise err
            records = self._drain(limit)
            self._wake_fetcher()
            if records:
                return records
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                return ConsumerRecords()
            await self._wait(left)

    async def _wait(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        self._poll_waiter = loop.create_future()
        handle = loop.call_later(timeout, self._wake)
        try:
            await self._poll_waiter
        finally:
            handle.cancel()
            self._poll_waiter = None

    def _wake(self) -> None:
        w = self._poll_waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _drain(self, limit: int) -> ConsumerRecords:
        out = ConsumerRecords()
        tps = list(self._assigned)
        if not tps:
            return out
        self._rotate = (self._rotate + 1) % len(tps)
        for tp in tps[self._rotate :] + tps[: self._rotate]:
            st = self._assigned[tp]
            if st.paused or st.position is None:
                continue
            while len(out) < limit:
                if st.index < len(st.records):
                    take = st.records[st.index : st.index + (limit - len(out))]
                    st.index += len(take)
                    out.extend(take)
                    st.position = take[-1].offset + 1
                    if st.index >= len(st.records):
                        st.records = []
                        st.index = 0
                        st.position = max(st.position, st.next_after)
                    continue
                if not st.completed:
                    break
                done = st.completed.popleft()
                st.buffered -= len(done.raw)
                if done.epoch != st.epoch:
                    continue
                cols, nxt = self._decode_columns(tp, st, done)
                records = [] if cols is None else columns_to_records(cols, tp.topic, tp.partition)
                st.records = records
                st.index = 0
                st.next_after = nxt
                if not records:
                    st.position = max(st.position, nxt)
            if len(out) >= limit:
                break
        if out and (self._key_deserializer is not None or self._value_deserializer is not None):
            kd = self._key_deserializer
            vd = self._value_deserializer
            out = ConsumerRecords(
                r._replace(
                    key=kd(r.key) if kd is not None else r.key,
                    value=vd(r.value) if vd is not None else r.value,
                )
                for r in out
            )
        return out

    async def poll_columns(self, timeout: float = 0.0) -> list[tuple[TopicPartition, RecordColumns]]:
        """Fetched records as columns, one `RecordColumns` per fetched record set, waiting up to ``timeout`` s.

        The columnar twin of `poll` for bulk readers (the Spark data source):
        each assigned partition gives at most one record set per call, decoded
        in one vectorised pass and never turned into per-record objects;
        positions advance past everything returned. Records that an earlier
        `poll` decoded but did not return are fetched again. Raises what
        `poll` raises.
        """
        self._ensure_open()
        deadline = time.monotonic() + timeout
        while True:
            if self.cluster.stale:
                self._refresh_metadata_bg()
            await self._update_positions()
            out: list[tuple[TopicPartition, RecordColumns]] = []
            for tp, st in self._assigned.items():
                if st.error is not None:
                    err, st.error = st.error, None
                    raise err
                if st.paused or st.position is None:
                    continue
                if st.index < len(st.records):
                    st.discard()
                    st.fetch_offset = st.position
                    continue
                while st.completed:
                    done = st.completed.popleft()
                    st.buffered -= len(done.raw)
                    if done.epoch != st.epoch:
                        continue
                    cols, nxt = self._decode_columns(tp, st, done)
                    st.position = max(st.position, nxt)
                    if cols is not None:
                        out.append((tp, cols))
                        break
            self._wake_fetcher()
            if out:
                return out
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                return out
            await self._wait(left)

    def _decode_columns(
        self, tp: TopicPartition, st: _PartitionState, done: _Completed
    ) -> tuple[RecordColumns | None, int]:
        """Decode a fetched record set from ``st.position`` on; None when nothing at or past it."""
        assert st.position is not None
        try:
            cols, nxt = decode_record_columns(
                done.raw,
                tp.topic,
                tp.partition,
                min_offset=st.position,
                check_crcs=self._check_crcs,
                read_committed=self._read_committed,
                aborted=done.aborted,
            )
        except ProtocolError as exc:
            st.discard()
            st.fetch_offset = st.position  # fetch it again (and fail again) until the caller seeks
            raise KafkaError(
                f"corrupt record set fetched for {tp} at offset {st.position}: {exc} "
                "(seek past it to continue)"
            ) from None
        if cols is not None:
            lo = cols.index_of(st.position)
            cols = cols.select(lo, len(cols)) if lo < len(cols) else None
        return cols, nxt

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            for record in await self.poll(1.0):
                yield record

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
            last_error: object = None
            for node, tps in by_node.items():
                body = list_offsets_body(tps, left, self._read_committed)
                try:
                    resp = await self.cluster.send(node, LIST_OFFSETS, body)
                except KafkaError as exc:
                    last_error = exc
                    missing = True
                    continue
                for t in resp.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
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

    async def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        self._ensure_open()
        if self._group is None:
            raise IllegalStateError("committed() needs a group.id")
        tps = [_as_tp(tp) for tp in partitions]
        return await self._group.fetch_committed(tps, self._api_timeout)

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

    async def topics(self) -> dict[str, int]:
        """Every topic in the cluster and its partition count."""
        self._ensure_open()
        seen = await self.cluster.refresh(all_topics=True)
        return {name: len(info.partitions) for name, info in sorted(seen.items()) if not info.error}

    async def partitions_for(self, topic: str) -> set[int]:
        self._ensure_open()
        n = await self.cluster.wait_for_topic(topic, self._api_timeout, fail_unknown=True)
        return set(range(n))

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

    # -- metadata ------------------------------------------------------------------------------------

    def _refresh_metadata_bg(self) -> None:
        if self._metadata_task is None or self._metadata_task.done():
            self._metadata_task = asyncio.ensure_future(self._refresh_metadata())

    async def _refresh_metadata(self) -> None:
        try:
            await self.cluster.refresh()
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)
            await asyncio.sleep(self._retry_backoff)
        finally:
            self._wake_fetcher()

    def _on_metadata(self) -> None:
        if self._pattern is not None and not self._manual:
            matched = self._match_pattern()
            if matched != self._topics:
                self._topics = matched
                self.cluster.track(matched)
                if self._group is not None:
                    self._group.request_rejoin()
        if self._group is not None and not self._manual:
            self._group.metadata_changed()

    # -- fetching --------------------------------------------------------------------------------------

    def _wake_fetcher(self) -> None:
        self._fetch_woken = True
        w = self._fetch_waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _fetch_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed:
            self._fetch_woken = False
            now = time.monotonic()
            by_node: dict[int, list[TopicPartition]] = collections.defaultdict(list)
            need_metadata = False
            next_retry: float | None = None
            for tp, st in self._assigned.items():
                if st.paused or st.position is None or st.fetching or st.error is not None:
                    continue
                if st.buffered >= self._prefetch_limit:
                    continue
                if st.backoff_until > now:
                    d = st.backoff_until - now
                    next_retry = d if next_retry is None else min(next_retry, d)
                    continue
                leader = self.cluster.leader(tp)
                if leader is None:
                    need_metadata = True
                    continue
                if leader in self._nodes_fetching:
                    continue
                by_node[leader].append(tp)
            if need_metadata:
                self._refresh_metadata_bg()
                next_retry = (
                    self._retry_backoff if next_retry is None else min(next_retry, self._retry_backoff)
                )
            for node, tps in by_node.items():
                self._nodes_fetching.add(node)
                states = [(tp, self._assigned[tp]) for tp in tps]
                for _, st in states:
                    st.fetching = True
                asyncio.ensure_future(self._fetch(node, states))
            if self._fetch_woken:
                continue
            self._fetch_waiter = loop.create_future()
            handle = loop.call_later(next_retry, self._wake_fetcher) if next_retry is not None else None
            try:
                await self._fetch_waiter
            finally:
                self._fetch_waiter = None
                if handle is not None:
                    handle.cancel()

    async def _fetch(self, node: int, states: list[tuple[TopicPartition, _PartitionState]]) -> None:
        c = self.config
        epochs = {tp: (st, st.epoch, st.fetch_offset) for tp, st in states}
        by_topic: dict[str, list[dict[str, int]]] = collections.defaultdict(list)
        for tp, st in states:
            by_topic[tp.topic].append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": -1,
                    "fetch_offset": st.fetch_offset,
                    "log_start_offset": -1,
                    "partition_max_bytes": c["max.partition.fetch.bytes"],
                }
            )
        body = {
            "replica_id": -1,
            "max_wait_ms": c["fetch.max.wait.ms"],
            "min_bytes": c["fetch.min.bytes"],
            "max_bytes": c["fetch.max.bytes"],
            "isolation_level": 1 if self._read_committed else 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        refresh = False
        try:
            try:
                conn = await self.cluster.node(node)
                resp = await conn.send(
                    FETCH, body, timeout=self._request_timeout + c["fetch.max.wait.ms"] / 1000
                )
            except KafkaError as exc:
                log.debug("fetch from node %s failed: %s", node, exc)
                refresh = isinstance(exc, KafkaConnectionError)
                backoff = time.monotonic() + self._retry_backoff
                for _, st in states:
                    st.backoff_until = backoff
                return
            if resp.get("error_code", 0):
                log.debug("fetch from node %s: %s", node, ErrorCode(resp.error_code).name)
                backoff = time.monotonic() + self._retry_backoff
                for _, st in states:
                    st.backoff_until = backoff
                return
            got_data = False
            for t in resp.responses:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition_index)
                    entry = epochs.get(tp)
                    if entry is None:
                        continue
                    st, epoch, fetch_offset = entry
                    if self._assigned.get(tp) is not st or st.epoch != epoch:
                        continue  # reassigned or seeked meanwhile
                    code = p.error_code
                    if code == ErrorCode.NONE:
                        st.high_watermark = p.high_watermark
                        st.last_stable_offset = p.last_stable_offset
                        st.log_start_offset = p.get("log_start_offset", -1)
                        raw = p.records
                        if raw:
                            nxt = next_fetch_offset(raw, fetch_offset)
                            if nxt > fetch_offset:
                                aborted = [
                                    (a.producer_id, a.first_offset) for a in (p.aborted_transactions or [])
                                ]
                                st.completed.append(_Completed(raw, aborted, epoch))
                                st.buffered += len(raw)
                                st.fetch_offset = nxt
                                got_data = True
                    elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        if self._auto_reset == "none":
                            st.error = NoOffsetForPartitionError(
                                f"offset {fetch_offset} is out of range for {tp} and auto.offset.reset=none"
                            )
                        else:
                            log.info(
                                "offset %s out of range for %s: resetting to %s",
                                fetch_offset,
                                tp,
                                self._auto_reset,
                            )
                            st.position = None
                            st.reset = self._auto_reset
                            st.discard()
                        got_data = True
                    elif code in METADATA_CODES:
                        refresh = True
                        st.backoff_until = time.monotonic() + self._retry_backoff
                    elif code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TOPIC_EXCEPTION):
                        st.error = error_for(code, context=f"fetch {tp}")
                        got_data = True
                    else:
                        log.debug("fetch %s: %s", tp, code)
                        st.backoff_until = time.monotonic() + self._retry_backoff
            if got_data:
                self._wake()
        finally:
            self._nodes_fetching.discard(node)
            for _, st in states:
                st.fetching = False
            if refresh:
                self._refresh_metadata_bg()
            self._wake_fetcher()


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class Consumer:
    """Synchronous consumer; I/O, heartbeats and prefetching run on a background event loop thread.

    ``Consumer("topic", group_id="g", bootstrap_servers="localhost:9092")``
    subscribes at once; ``Consumer(bootstrap_servers=...)`` then `assign`.
    Iterating yields records forever (until `close`).
    """

    def __init__(self, *topics: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOConsumer(*topics, config=config, **kwargs)
        self.config = self._core.config
        self._lt = LoopThread("minikafka-consumer")
        self._closed = False
        try:
            self._lt.run(self._core.start())
        except BaseException:
            self._lt.stop()
            raise

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(_call(lambda: fn(*args, **kwargs)))

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        self._run(self._core.subscribe, topics, pattern=pattern, listener=listener)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._run(self._core.assign, list(partitions))

    def unsubscribe(self) -> None:
        self._lt.run(self._core.unsubscribe())

    def assignment(self) -> set[TopicPartition]:
        return self._run(self._core.assignment)

    def subscription(self) -> set[str]:
        return self._run(self._core.subscription)

    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> ConsumerRecords:
        """Records for the assigned partitions, waiting up to ``timeout`` s (see `AIOConsumer.poll`)."""
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(self._core.poll(timeout, max_records))

    def poll_columns(self, timeout: float = 0.0) -> list[tuple[TopicPartition, RecordColumns]]:
        """Fetched records as columns (see `AIOConsumer.poll_columns`)."""
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(self._core.poll_columns(timeout))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while not self._closed:
            yield from self.poll(1.0)

    def commit(
        self, offsets: Mapping[Any, int | OffsetAndMetadata] | None = None, *, asynchronous: bool = False
    ) -> None:
        """Commit ``offsets`` (default: every position); ``asynchronous=True`` returns at once."""
        if asynchronous:
            self.commit_async(offsets)
            return
        self._lt.run(self._core.commit(offsets))

    def commit_async(
        self,
        offsets: Mapping[Any, int | OffsetAndMetadata] | None = None,
        callback: Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], Any]
        | None = None,
    ) -> None:
        """Start a commit; ``callback(offsets, error)`` runs on the I/O thread when it completes."""
        self._run(self._core.commit_async, offsets, callback)

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return self._lt.run(self._core.committed(list(partitions)))

    def group_metadata(self) -> ConsumerGroupMetadata:
        """See `AIOConsumer.group_metadata`."""
        return self._run(self._core.group_metadata)  # type: ignore[no-any-return]

    def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        return self._lt.run(self._core.position(partition))

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        self._run(self._core.seek, partition, offset)

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.seek_to_beginning, *partitions)

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.seek_to_end, *partitions)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._lt.run(self._core.offsets_for_times(dict(timestamps)))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.beginning_offsets(list(partitions)))

    def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.end_offsets(list(partitions)))

    def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.pause, *partitions)

    def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.resume, *partitions)

    def paused(self) -> set[TopicPartition]:
        return self._run(self._core.paused)

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        return self._run(self._core.highwater, partition)

    def topics(self) -> dict[str, int]:
        return self._lt.run(self._core.topics())

    def partitions_for(self, topic: str) -> set[int]:
        return self._lt.run(self._core.partitions_for(topic))

    def close(self, autocommit: bool = True) -> None:
        """Commit (when auto-committing), leave the group, close connections and stop the I/O thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._core.close(autocommit))
        finally:
            self._lt.stop()
