"""Driver-side planning: which partitions, which offsets, how many Spark partitions.

Everything here runs on the Spark driver with one bundled `Consumer` (no
group membership): topic discovery for assign/subscribe/subscribePattern,
turning the starting and ending `Bound`s into offsets with ListOffsets
(earliest, latest, by timestamp), Spark's range splitting (`split_ranges`)
and the streaming rate limit (`rate_limit`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from client.spark.options import EARLIEST, LATEST, Bound, MiniKafkaOptionError, ReadOptions
from client.types import TopicPartition

Range = tuple[str, int, int, int]  # topic, partition, start offset, end offset (exclusive)
Offsets = dict[tuple[str, int], int]


class DataLossError(RuntimeError):
    """Offsets the query needs were deleted (retention, DeleteRecords) while failOnDataLoss=true."""


def open_consumer(ro: ReadOptions, client_id: str) -> Any:
    """A bundled consumer for planning or reading: no auto commit, no offset reset, no group."""
    from client.consumer import Consumer

    config: dict[str, Any] = {
        "client.id": client_id,
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        "fetch.max.bytes": 64 * 1024 * 1024,
        **ro.consumer,
        "bootstrap.servers": ro.bootstrap,
        "enable.auto.commit": False,
        "auto.offset.reset": "none",
    }
    return Consumer(config)


def topic_partitions(ro: ReadOptions, consumer: Any) -> list[tuple[str, int]]:
    """The (topic, partition) pairs the options select, sorted; subscribe fails on a missing topic."""
    if ro.strategy == "assign":
        return list(ro.strategy_value)
    topics = consumer.topics()
    if ro.strategy == "subscribe":
        missing = [t for t in ro.strategy_value if t not in topics]
        if missing:
            raise MiniKafkaOptionError(
                f"subscribed topic(s) not found on {ro.bootstrap}: {', '.join(missing)}"
            )
        names = ro.strategy_value
    else:
        names = [t for t in topics if ro.strategy_value.fullmatch(t) and not t.startswith("__")]
    return sorted((t, p) for t in names for p in range(topics[t]))


class OffsetTable:
    """Earliest and latest offsets of a set of partitions, read once, plus timestamp lookups."""

    def __init__(self, consumer: Any, tps: Iterable[tuple[str, int]], bootstrap: str) -> None:
        self.consumer = consumer
        self.keys = [TopicPartition(t, p) for t, p in tps]
        latest = consumer.end_offsets(self.keys) if self.keys else {}
        self.latest: Offsets = {(tp.topic, tp.partition): latest.get(tp, -1) for tp in self.keys}
        missing = [f"{t}-{p}" for (t, p), off in self.latest.items() if off < 0]
        if missing:
            raise MiniKafkaOptionError(f"partition(s) {', '.join(missing)} not found on {bootstrap}")

    @functools.cached_property
    def earliest(self) -> Offsets:
        """Log start offsets, asked for on first use (a streaming trigger rarely needs them)."""
        earliest = self.consumer.beginning_offsets(self.keys) if self.keys else {}
        return {(tp.topic, tp.partition): earliest.get(tp, -1) for tp in self.keys}

    def by_timestamp(self, timestamps: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int | None]:
        """First offset with a timestamp >= the given ms, per partition (None: no such record)."""
        found = self.consumer.offsets_for_times(
            {TopicPartition(t, p): ts for (t, p), ts in timestamps.items()}
        )
        return {(tp.topic, tp.partition): (None if v is None else v.offset) for tp, v in found.items()}


def resolve(
    bound: Bound, table: OffsetTable, *, starting: bool, timestamp_strategy: str = "error"
) -> Offsets:
    """Offsets for every partition of ``table`` from a starting or ending ``Bound``.

    Specific offsets (JSON) and per-partition timestamps must name every
    partition, as in Spark. A starting timestamp past a partition's last record
    fails (strategy ``error``) or starts at latest; an ending one ends at latest.
    """
    parts = [(tp.topic, tp.partition) for tp in table.keys]
    if bound.kind == "earliest":
        return dict(table.earliest)
    if bound.kind == "latest":
        return dict(table.latest)
    if bound.kind in ("offsets", "timestamps") and set(bound.value) != set(parts):
        listed = ", ".join(f"{t}-{p}" for t, p in parts)
        extra = " (use -2 for earliest, -1 for latest)" if bound.kind == "offsets" else ""
        raise MiniKafkaOptionError(
            f"{bound.option} must name every assigned/subscribed partition{extra}; partitions: {listed}"
        )
    if bound.kind == "offsets":
        return {
            key: table.earliest[key] if off == EARLIEST else table.latest[key] if off == LATEST else off
            for key, off in bound.value.items()
        }
    wanted = dict.fromkeys(parts, bound.value) if bound.kind == "timestamp" else dict(bound.value)
    found = table.by_timestamp(wanted)
    out: Offsets = {}
    for key in parts:
        off = found.get(key)
        if off is None:
            if starting and timestamp_strategy == "error":
                raise MiniKafkaOptionError(
                    f"{bound.option}: no record of {key[0]}-{key[1]} has a timestamp at or after "
                    f"{wanted[key]} (set startingOffsetsByTimestampStrategy=latest to start at its end)"
                )
            off = table.latest[key]
        out[key] = off
    return out


def check_start(key: tuple[str, int], start: int, earliest: int, fail_on_data_loss: bool) -> int:
    """``start``, or ``earliest`` when records before it were deleted and failOnDataLoss=false."""
    if start >= earliest:
        return start
    if fail_on_data_loss:
        raise DataLossError(
            f"data loss: offsets {start}..{earliest - 1} of {key[0]}-{key[1]} were deleted (retention or "
            f"DeleteRecords) before they could be read; set failOnDataLoss=false to skip them"
        )
    return earliest


def batch_ranges(ro: ReadOptions, table: OffsetTable) -> list[Range]:
    """The offset range of every partition for a batch query (before splitting)."""
    starts = resolve(ro.starting, table, starting=True, timestamp_strategy=ro.timestamp_strategy)
    ends = resolve(ro.ending, table, starting=False)
    ranges = []
    for tp in table.keys:
        key = (tp.topic, tp.partition)
        start, end = starts[key], ends[key]
        if end > table.latest[key]:
            raise MiniKafkaOptionError(
                f"endingOffsets {end} for {tp} is beyond its latest offset {table.latest[key]}"
            )
        if start < table.earliest[key]:
            start = min(check_start(key, start, table.earliest[key], ro.fail_on_data_loss), end)
        if start > end:
            raise MiniKafkaOptionError(f"starting offset {start} is after ending offset {end} for {tp}")
        ranges.append((tp.topic, tp.partition, start, end))
    return ranges


def _split(r: Range, parts: int) -> list[Range]:
    topic, part, start, end = r
    size = end - start
    out = []
    for i in range(parts):
        lo = start + size * i // parts
        hi = start + size * (i + 1) // parts
        if hi > lo:
            out.append((topic, part, lo, hi))
    return out


def split_ranges(
    ranges: list[Range], min_partitions: int | None, max_records_per_partition: int | None = None
) -> list[Range]:
    """Spark's rule: drop empty ranges; cut each range into pieces of at most
    maxRecordsPerPartition records; then, while fewer than minPartitions,
    split each range into max(round_half_up(size / total * minPartitions), 1)
    near-equal parts."""
    ranges = [r for r in ranges if r[3] > r[2]]
    if max_records_per_partition is not None:
        ranges = [
            piece for r in ranges for piece in _split(r, math.ceil((r[3] - r[2]) / max_records_per_partition))
        ]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(end - start for _, _, start, end in ranges)
    out = []
    for r in ranges:
        parts = max(int((r[3] - r[2]) * min_partitions / total + 0.5), 1)
        out.extend(_split(r, parts))
    return out


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """End offsets taking at most about ``limit`` records, shared across partitions by their lag.

    Spark's Kafka source rule: each partition gets ``limit * lag / total``
    records, rounded down, except that a share below one record rounds up so
    that no partition with data starves.
    """
    lags = {key: max(latest[key] - start.get(key, latest[key]), 0) for key in latest}
    total = sum(lags.values())
    if total <= limit:
        return dict(latest)
    out = {}
    for key, end in latest.items():
        begin = start.get(key, end)
        share = limit * lags[key] / total
        take = math.ceil(share) if share < 1 else math.floor(share)
        out[key] = min(end, begin + take)
    return out
