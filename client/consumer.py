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
assigned, unpaused partition whose raw buffer is below twice
max.partition.fetch.bytes, so the next fetch travels while the caller works on
the last one. Responses are kept raw; `poll` decodes a partition's record set
only when it needs its records (`client.records.decode_record_columns`: the whole
set in one vectorized pass, skipping control batches and, with
isolation.level=read_committed, aborted transactions), and hands out at most
max_records per call, round-robin over partitions.

Groups: `subscribe` (topic list or regex) makes the consumer a group member
(`client.group`, or `client.group_consumer` with group.protocol=consumer, Kafka 4's
protocol where the coordinator assigns): rebalances run inside `poll`, where the rebalance listener is
called; enable.auto.commit commits the positions every auto.commit.interval.ms
from poll, before each rebalance and on close. `assign` takes partitions by
hand (commits still go to group.id when there is one).

This module is the consumer's public face; the code lives in:

- `client.consumer_aio`: `AIOConsumer`, its settings, lifecycle and poll loop;
- `client.consumer_subscription`: subscribe/assign, the group glue and
  `ConsumerRebalanceListener`;
- `client.consumer_positions`: positions, seeks, ListOffsets look-ups, pausing;
- `client.consumer_commits`: commits, auto-commit and committed offsets;
- `client.consumer_fetch`: the fetch loop, decoding and `ConsumerRecords`;
- `client.consumer_state`: the per-partition state and the mixins' base;
- `client.consumer_sync`: `Consumer`, the synchronous wrapper.
"""

from __future__ import annotations

from client.consumer_aio import AIOConsumer
from client.consumer_fetch import ConsumerRecords
from client.consumer_subscription import ConsumerRebalanceListener
from client.consumer_sync import Consumer

__all__ = ["AIOConsumer", "Consumer", "ConsumerRebalanceListener", "ConsumerRecords"]
