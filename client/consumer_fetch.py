"""Fetching for the consumer, and decoding what was fetched: the `ConsumerFetching` mixin.

A task on the loop (`_fetch_loop`) keeps one Fetch (API 1, no fetch session:
session id 0, epoch -1) in flight per leader for every assigned, unpaused
partition that has a position, no pending error, no backoff and less than
``_prefetch_limit`` bytes buffered. A response is kept raw: each partition's
record set is appended to its state as a `_Completed` and ``fetch_offset``
moves past it; an answer for a partition reassigned or seeked meanwhile (its
epoch moved on) is dropped. OFFSET_OUT_OF_RANGE resets the position by
auto.offset.reset (``none``: the error reaches poll); metadata errors refresh
metadata and back off ``retry.backoff.ms``.

Decoding happens in poll: `_drain` decodes a partition's next record set only
when it has handed out the last one (`_decode_columns`, one vectorized pass of
`client.records.decode_record_columns` from the position on) and returns at
most ``limit`` records, starting one partition further round the assignment
each call, deserialized with key.deserializer/value.deserializer.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from client.consumer_state import ConsumerBase, _Completed, _PartitionState
from client.errors import (
    METADATA_CODES,
    KafkaConnectionError,
    KafkaError,
    NoOffsetForPartitionError,
    error_for,
)
from client.records import RecordColumns, columns_to_records, decode_record_columns, next_fetch_offset
from client.types import ConsumerRecord, TopicPartition
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("client.consumer")

FETCH = 1


class ConsumerRecords(list[ConsumerRecord]):
    """What poll returns: a list of records (partition by partition, each in offset order)."""

    def partitions(self) -> set[TopicPartition]:
        return {TopicPartition(r.topic, r.partition) for r in self}

    def records(self, tp: TopicPartition) -> list[ConsumerRecord]:
        return [r for r in self if r.topic == tp.topic and r.partition == tp.partition]


class ConsumerFetching(ConsumerBase):
    """Mixin of `client.consumer_aio.AIOConsumer`: the fetch loop, and decoding for poll."""

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

    # -- decoding ------------------------------------------------------------------------------------

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
