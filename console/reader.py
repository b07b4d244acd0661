"""Reading records for the messages page: bounded ranges of partitions, through a fresh consumer.

`read_ranges` assigns the partitions (no group: nothing is committed), seeks each to its start,
and polls until every partition has reached its stop offset or yielded ``limit`` matching
records, or ``timeout`` passes. At most ``scan`` records per partition are examined, so a
search over a huge topic costs a bounded amount of reading.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from client.consumer import AIOConsumer
from client.types import ConsumerRecord, TopicPartition


@dataclass(frozen=True)
class Span:
    """Offsets ``[start, stop)`` of one partition to read."""

    start: int
    stop: int


@dataclass
class ReadResult:
    records: list[ConsumerRecord]
    scanned: int  # records examined (matching or not)
    complete: bool  # False when the timeout cut the reading short


@contextlib.asynccontextmanager
async def browsing_consumer(client_config: Mapping[str, Any]) -> AsyncIterator[AIOConsumer]:
    """A started consumer of no group (nothing committed, short fetch waits), closed on leaving
    within 2 s whatever happened (the page or the stream it served is already done)."""
    settings = {**client_config, "group.id": None, "enable.auto.commit": False, "fetch.max.wait.ms": 100}
    consumer = AIOConsumer(config=settings)
    await consumer.start()
    try:
        yield consumer
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2):
                await consumer.close(autocommit=False)


async def read_ranges(
    client_config: Mapping[str, Any],
    topic: str,
    spans: Mapping[int, Span],
    *,
    limit: int,
    scan: int,
    match: Callable[[ConsumerRecord], bool] | None = None,
    keep_last: bool = False,
    timeout: float = 5.0,
) -> ReadResult:
    """Up to ``limit`` matching records per partition from its span (the last ``limit`` when
    ``keep_last``), examining at most ``scan`` records per partition."""
    spans = {p: s for p, s in spans.items() if s.stop > s.start}
    if not spans:
        return ReadResult([], 0, True)
    found: dict[int, list[ConsumerRecord]] = {p: [] for p in spans}
    examined = dict.fromkeys(spans, 0)
    done: set[int] = set()
    async with browsing_consumer(client_config) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in spans])
        for p, span in spans.items():
            consumer.seek(TopicPartition(topic, p), span.start)
        deadline = time.monotonic() + timeout
        while len(done) < len(spans) and time.monotonic() < deadline:
            batch = await consumer.poll(timeout=min(0.5, max(deadline - time.monotonic(), 0.01)))
            for record in batch:
                p = record.partition
                if p in done or record.offset < spans[p].start:
                    continue
                if record.offset >= spans[p].stop or examined[p] >= scan:
                    _finish(consumer, topic, p, done)
                    continue
                examined[p] += 1
                if match is None or match(record):
                    found[p].append(record)
                    if keep_last and len(found[p]) > limit:
                        del found[p][0]
                if (not keep_last and len(found[p]) >= limit) or record.offset + 1 >= spans[p].stop:
                    _finish(consumer, topic, p, done)
            for p in spans:  # a partition whose span ends in a gap (compacted, aborted) is done too
                if p not in done and await consumer.position(TopicPartition(topic, p)) >= spans[p].stop:
                    _finish(consumer, topic, p, done)
    records = [r for rs in found.values() for r in rs]
    return ReadResult(records, sum(examined.values()), len(done) == len(spans))


def _finish(consumer: AIOConsumer, topic: str, partition: int, done: set[int]) -> None:
    done.add(partition)
    consumer.pause(TopicPartition(topic, partition))
