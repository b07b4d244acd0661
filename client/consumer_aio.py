"""`AIOConsumer`, the asyncio consumer: its settings, lifecycle and poll loop.

The class is made of mixins, one a concern: `client.consumer_subscription`
(subscribe/assign and the group glue), `client.consumer_positions`
(positions, seeks, offset look-ups), `client.consumer_commits` (commits) and
`client.consumer_fetch` (the fetch loop and decoding). What is here: the
settings read from the config, `start`/`close`, `poll` and `poll_columns`
(each round: group poll, auto-commit, metadata refresh when stale, positions,
then what was fetched; else wait, woken by a fetch answer or a group event),
and background metadata refreshes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from client.cluster import Cluster
from client.config import consumer_config
from client.consumer_commits import ConsumerCommits
from client.consumer_fetch import ConsumerFetching, ConsumerRecords
from client.consumer_positions import ConsumerPositions
from client.consumer_state import _PartitionState
from client.consumer_subscription import ConsumerRebalanceListener, ConsumerSubscription
from client.errors import ClientClosedError, IllegalStateError, KafkaError
from client.group import GroupMember
from client.records import RecordColumns
from client.types import ConsumerRecord, TopicPartition

log = logging.getLogger("client.consumer")


class AIOConsumer(ConsumerSubscription, ConsumerPositions, ConsumerCommits, ConsumerFetching):
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

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            for record in await self.poll(1.0):
                yield record

    async def topics(self) -> dict[str, int]:
        """Every topic in the cluster and its partition count."""
        self._ensure_open()
        seen = await self.cluster.refresh(all_topics=True)
        return {name: len(info.partitions) for name, info in sorted(seen.items()) if not info.error}

    async def partitions_for(self, topic: str) -> set[int]:
        self._ensure_open()
        n = await self.cluster.wait_for_topic(topic, self._api_timeout, fail_unknown=True)
        return set(range(n))

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
