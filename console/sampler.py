"""The lag sampler: every few seconds, the committed and end offsets of every consumer group.

One sample makes a handful of requests whatever the number of groups: ListGroups, the
topic metadata, the committed offsets of every group at once
(``list_consumer_groups_offsets``), ``list_offsets`` for the end and the start offset of every
partition of every topic (which covers the partitions groups committed), and the log sizes
(``describe_log_dirs``, optional), with which it estimates the bytes consumed. It stores per (group, partition) the committed and
end offsets, and for the cluster the sums that the overview turns into rates, in a
`LagStore` (through `asyncio.to_thread`: SQLite blocks).

`LagSampler.run` samples until stopped; failures (an unreachable broker) are logged and
kept in ``last_error`` / ``last_error_ms`` for the console's banner, and never end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.admin import AIOAdminClient
from client.errors import KafkaError
from client.types import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from console.lag_store import LagStore

log = logging.getLogger(__name__)

# Groups of these protocol types are consumer groups: "consumer" for subscribing members,
# "" for groups that only commit offsets (assign mode, offsets reset by a tool).
CONSUMER_PROTOCOL_TYPES = frozenset({"consumer", ""})


@dataclass(frozen=True)
class SampleStats:
    """What one sample stored: ``ts_ms`` (ms since the epoch) it is stored under, ``groups``
    whose offsets were stored, ``partitions`` the (group, partition) rows stored,
    ``skipped`` groups whose offsets came back as an error, ``duration_s`` (wall clock)."""

    ts_ms: int
    groups: int
    partitions: int
    skipped: int
    duration_s: float


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def _nothing() -> dict[TopicPartition, Any]:
    return {}


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class LagSampler:
    """Samples consumer-group lag into ``store`` every ``interval_s`` seconds.

    ``admin`` is an `AIOAdminClient` already started by the caller (and closed by it).
    State for the console: ``last_success_ms`` (ms of the last stored sample, None
    before the first), ``last_stats``, ``last_error`` (one line, None once a sample
    succeeds again) and ``last_error_ms`` (when it happened).
    """

    def __init__(
        self,
        admin: AIOAdminClient,
        store: LagStore,
        interval_s: float = 10.0,
        *,
        purge_interval_s: float = 3600.0,
        sample_timeout_s: float | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, not {interval_s}")
        self.admin = admin
        self.store = store
        self.interval_s = interval_s
        self.purge_interval_s = purge_interval_s
        # A sample that hangs (a broker that accepts but never answers) is abandoned after this.
        self.sample_timeout_s = (
            sample_timeout_s if sample_timeout_s is not None else max(60.0, 3 * interval_s)
        )
        self.last_success_ms: int | None = None
        self.last_stats: SampleStats | None = None
        self.last_error: str | None = None
        self.last_error_ms: int | None = None
        self._stop = asyncio.Event()
        self._last_committed: dict[tuple[str, TopicPartition], int] = {}
        self._consumed_total = 0  # bytes, see _consumed_bytes

    async def sample_once(self, now_ms: int | None = None) -> SampleStats:
        """Take one sample and store it under ``now_ms`` (default: now); raises when the cluster
        cannot be read (no group is then stored). Groups whose offsets errored are skipped."""
        started = time.monotonic()
        ts_ms = _now_ms() if now_ms is None else now_ms
        listed = await self.admin.list_groups()
        group_ids = sorted(g for g, ptype in listed.items() if ptype in CONSUMER_PROTOCOL_TYPES)
        topics = await self.admin.list_topics()
        fetched: Mapping[str, Mapping[TopicPartition, OffsetAndMetadata] | KafkaError] = (
            await self.admin.list_consumer_groups_offsets(group_ids) if group_ids else {}
        )
        committed: dict[str, Mapping[TopicPartition, OffsetAndMetadata]] = {}
        skipped = 0
        for gid in group_ids:
            result = fetched.get(gid)
            if isinstance(result, Mapping):
                committed[gid] = result
            else:
                skipped += 1
                log.debug("lag sample: offsets of group %r: %s", gid, result)
        # End offsets of every partition that has a leader: a superset of the partitions groups
        # committed that still exist. A committed partition of a deleted topic, or one without a
        # leader (the client would retry it until its timeout and fail the whole sample), is left
        # out of the request and has no row in this sample.
        wanted = sorted(
            TopicPartition(name, p)
            for name, info in topics.items()
            for p, pinfo in info.partitions.items()
            if pinfo.leader >= 0
        )
        answers, starts = await asyncio.gather(
            self.admin.list_offsets(dict.fromkeys(wanted, "latest")) if wanted else _nothing(),
            self.admin.list_offsets(dict.fromkeys(wanted, "earliest")) if wanted else _nothing(),
        )
        ends = {tp: a.offset for tp, a in answers.items() if isinstance(a, OffsetAndTimestamp)}
        firsts = {tp: a.offset for tp, a in starts.items() if isinstance(a, OffsetAndTimestamp)}

        rows: list[tuple[str, str, int, int, int]] = []
        committed_sum = 0
        for gid, offsets in committed.items():
            for tp, om in offsets.items():
                committed_sum += om.offset
                end = ends.get(tp)
                if end is not None:
                    rows.append((gid, tp.topic, tp.partition, om.offset, end))
        end_sum = sum(ends.values())
        sizes = await self._sizes()
        names = set(topics)
        size = None if sizes is None else sum(n for tp, n in sizes.items() if tp.topic in names)
        consumed = self._consumed_bytes(committed, sizes, ends, firsts)

        await asyncio.to_thread(self.store.add_lag, ts_ms, rows)
        await asyncio.to_thread(self.store.add_cluster, ts_ms, end_sum, committed_sum, size, consumed)
        return SampleStats(
            ts_ms=ts_ms,
            groups=len(committed),
            partitions=len(rows),
            skipped=skipped,
            duration_s=time.monotonic() - started,
        )

    async def _sizes(self) -> Mapping[TopicPartition, int] | None:
        """Bytes of each partition's log, None when the cluster cannot tell."""
        try:
            sizes: Mapping[TopicPartition, int] = await self.admin.describe_log_dirs()
        except Exception as exc:  # an old broker, no permission: the plot goes without bytes
            log.debug("lag sample: describe_log_dirs: %s", _describe(exc))
            return None
        return sizes

    def _consumed_bytes(
        self,
        committed: Mapping[str, Mapping[TopicPartition, OffsetAndMetadata]],
        sizes: Mapping[TopicPartition, int] | None,
        ends: Mapping[TopicPartition, int],
        firsts: Mapping[TopicPartition, int],
    ) -> int | None:
        """The running estimate of bytes consumed: since the last sample, each group's committed
        offsets moved by so many records, times its partition's average record size (bytes on
        disk / records in the log). None without sizes. Kafka's protocol shows no client the bytes
        a broker sends, so this stands in for "bytes out"; it starts at 0 with the sampler."""
        if sizes is None:
            self._last_committed = {}
            return None
        added = 0.0
        now: dict[tuple[str, TopicPartition], int] = {}
        for gid, offsets in committed.items():
            for tp, om in offsets.items():
                now[(gid, tp)] = om.offset
                before = self._last_committed.get((gid, tp))
                records = ends.get(tp, 0) - firsts.get(tp, 0)
                if before is not None and om.offset > before and records > 0 and tp in sizes:
                    added += (om.offset - before) * sizes[tp] / records
        self._last_committed = now
        self._consumed_total += int(added)
        return self._consumed_total

    async def run(self) -> None:
        """Sample every ``interval_s`` (the first at once) and purge old history every
        ``purge_interval_s``, until `stop` or cancellation. Errors are logged and recorded in
        ``last_error``; they do not end the loop."""
        next_purge = time.monotonic()
        tick = time.monotonic()
        while not self._stop.is_set():
            await self._sample_recording_errors()
            if time.monotonic() >= next_purge:
                next_purge = time.monotonic() + self.purge_interval_s
                try:
                    deleted = await asyncio.to_thread(self.store.purge, _now_ms())
                    log.debug("lag history: purged %d rows", deleted)
                except Exception:
                    log.exception("lag history: purge failed")
            # Fixed rate: the next tick after now (ticks a slow sample overran are skipped).
            now = time.monotonic()
            tick += self.interval_s
            if tick < now:
                tick += ((now - tick) // self.interval_s + 1) * self.interval_s
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(tick - now):
                    await self._stop.wait()

    async def _sample_recording_errors(self) -> None:
        try:
            async with asyncio.timeout(self.sample_timeout_s):
                stats = await self.sample_once()
        except Exception as exc:
            self.last_error = _describe(exc)
            self.last_error_ms = _now_ms()
            if isinstance(exc, KafkaError | TimeoutError):
                log.warning("lag sample failed: %s", self.last_error)
            else:
                log.exception("lag sample failed")
            return
        self.last_stats = stats
        self.last_success_ms = stats.ts_ms
        self.last_error = None
        log.debug("lag sample: %s", stats)

    def stop(self) -> None:
        """Make `run` return (after the sample in progress, if any); final: a later `run` returns at once."""
        self._stop.set()
