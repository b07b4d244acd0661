"""Offset-reset planning and execution (`client.offset_reset`) against a real broker: every strategy,
clamping to the log, and the refusal to touch an active group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from client import AdminClient, AIOAdminClient, AIOProducer, Consumer, KafkaResponseError
from client.admin import NewTopic
from client.offset_reset import (
    OffsetResetError,
    ResetRow,
    ResetStrategy,
    ensure_group_inactive,
    execute_offset_reset,
    plan_offset_reset,
)
from client.types import OffsetAndMetadata, TopicPartition
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def admin(kafka: BrokerProcess) -> AsyncIterator[AIOAdminClient]:
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        yield a


async def setup_group(
    kafka: BrokerProcess, admin: AIOAdminClient, topic: str
) -> tuple[str, TopicPartition, TopicPartition, TopicPartition]:
    """Partition 0: offsets 2..9 (0-1 deleted), record i at (i + 1) * 1000 ms; partition 1: offsets
    0..2 at 1000..3000 ms; partition 2: empty. The group committed 5 on partition 0 and 1 on
    partition 1, nothing on partition 2."""
    assert (await admin.create_topics([NewTopic(topic, 3)]))[topic] is None
    p0, p1, p2 = (TopicPartition(topic, p) for p in range(3))
    async with AIOProducer(bootstrap_servers=kafka.bootstrap) as producer:
        for i in range(10):
            await producer.send_and_wait(topic, b"x", partition=0, timestamp_ms=(i + 1) * 1000)
        for i in range(3):
            await producer.send_and_wait(topic, b"y", partition=1, timestamp_ms=(i + 1) * 1000)
    assert await admin.delete_records({p0: 2}) == {p0: 2}
    group = f"{topic}-g"
    assert set((await admin.alter_consumer_group_offsets(group, {p0: 5, p1: 1})).values()) == {None}
    return group, p0, p1, p2


def new_offsets(rows: list[ResetRow]) -> dict[TopicPartition, int]:
    return {r.partition: r.new_offset for r in rows}


async def test_every_strategy_clamped_to_the_log(
    kafka: BrokerProcess, admin: AIOAdminClient, topic: str
) -> None:
    group, p0, p1, p2 = await setup_group(kafka, admin, topic)
    every = [p0, p1, p2]

    async def plan(
        strategy: ResetStrategy, partitions: list[TopicPartition] | None = every
    ) -> dict[TopicPartition, int]:
        return new_offsets(await plan_offset_reset(admin, group, partitions, strategy))

    assert await plan(ResetStrategy.earliest()) == {p0: 2, p1: 0, p2: 0}
    assert await plan(ResetStrategy.latest()) == {p0: 10, p1: 3, p2: 0}
    assert await plan(ResetStrategy.to_offset(7)) == {p0: 7, p1: 3, p2: 0}  # above the end: the end
    assert await plan(ResetStrategy.to_offset(0)) == {p0: 2, p1: 0, p2: 0}  # below the log start: the start
    assert await plan(ResetStrategy.to_offset(-5)) == {p0: 2, p1: 0, p2: 0}
    assert await plan(ResetStrategy.shift_by(2), [p0, p1]) == {p0: 7, p1: 3}
    assert await plan(ResetStrategy.shift_by(-4), [p0, p1]) == {p0: 2, p1: 0}
    assert await plan(ResetStrategy.shift_by(100), [p0, p1]) == {p0: 10, p1: 3}
    # the first record at or after the time; none that late: the end
    assert await plan(ResetStrategy.to_timestamp(4500)) == {p0: 4, p1: 3, p2: 0}
    assert await plan(ResetStrategy.to_timestamp(2000)) == {p0: 2, p1: 1, p2: 0}
    assert await plan(ResetStrategy.to_timestamp(0)) == {p0: 2, p1: 0, p2: 0}
    with pytest.raises(ValueError, match=">= 0"):
        ResetStrategy.to_timestamp(-1)
    # nothing was committed by planning
    assert await admin.list_consumer_group_offsets(group) == {
        p0: OffsetAndMetadata(5),
        p1: OffsetAndMetadata(1),
    }


async def test_plan_rows_and_scope(kafka: BrokerProcess, admin: AIOAdminClient, topic: str) -> None:
    group, p0, p1, p2 = await setup_group(kafka, admin, topic)
    # None: every partition the group committed, sorted
    assert await plan_offset_reset(admin, group, None, ResetStrategy.latest()) == [
        ResetRow(p0, 5, 10),
        ResetRow(p1, 1, 3),
    ]
    # given partitions: in the order given, once each; an uncommitted partition's current is None
    assert await plan_offset_reset(admin, group, [p2, p0, p2], ResetStrategy.earliest()) == [
        ResetRow(p2, None, 0),
        ResetRow(p0, 5, 2),
    ]
    assert await plan_offset_reset(admin, "nobody-committed", None, ResetStrategy.earliest()) == []
    with pytest.raises(OffsetResetError, match=f"{topic}-2 has no committed offset to shift"):
        await plan_offset_reset(admin, group, [p0, p2], ResetStrategy.shift_by(1))
    with pytest.raises(KafkaResponseError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        await plan_offset_reset(admin, group, [TopicPartition(topic, 9)], ResetStrategy.earliest())


async def test_execute_commits_the_plan(kafka: BrokerProcess, admin: AIOAdminClient, topic: str) -> None:
    group, p0, p1, p2 = await setup_group(kafka, admin, topic)
    rows = await plan_offset_reset(admin, group, [p0, p1, p2], ResetStrategy.to_offset(3))
    assert await ensure_group_inactive(admin, group) == "Empty"
    assert await ensure_group_inactive(admin, "never-seen") == "Dead"
    await execute_offset_reset(admin, group, rows)
    assert await admin.list_consumer_group_offsets(group) == {
        p0: OffsetAndMetadata(3),
        p1: OffsetAndMetadata(3),
        p2: OffsetAndMetadata(0),
    }
    await execute_offset_reset(admin, group, [])  # nothing to commit


async def test_execute_refuses_an_active_group(
    kafka: BrokerProcess, admin: AIOAdminClient, topic: str
) -> None:
    group, p0, p1, _ = await setup_group(kafka, admin, topic)
    consumer = Consumer(
        topic,
        bootstrap_servers=kafka.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        assert await asyncio.to_thread(consumer.poll, 5)
        rows = await plan_offset_reset(admin, group, None, ResetStrategy.earliest())  # a dry run is fine
        assert new_offsets(rows) == {p0: 2, p1: 0}
        message = f"can only be reset if the group {group!r} is inactive, but its state is Stable"
        with pytest.raises(OffsetResetError, match=message):
            await execute_offset_reset(admin, group, rows)
    finally:
        await asyncio.to_thread(consumer.close)
    assert await admin.list_consumer_group_offsets(group) == {
        p0: OffsetAndMetadata(5),
        p1: OffsetAndMetadata(1),
    }


def test_sync_admin_runs_the_helpers(kafka: BrokerProcess, topic: str) -> None:
    with AdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        group = f"{topic}-g"
        tp = TopicPartition(topic, 0)
        assert admin.create_topics([NewTopic(topic, 1)])[topic] is None
        admin.alter_consumer_group_offsets(group, {tp: 0})
        rows = admin.run(plan_offset_reset, group, None, ResetStrategy.latest())
        assert rows == [ResetRow(tp, 0, 0)]
        admin.run(execute_offset_reset, group, rows)
        with pytest.raises(OffsetResetError, match="no committed offset"):
            admin.run(plan_offset_reset, "other", [tp], ResetStrategy.shift_by(1))
