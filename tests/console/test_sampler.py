"""LagSampler against a real broker: lag rises as records arrive and falls as groups commit;
the run loop survives an unreachable broker and stops cleanly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from client.admin import AIOAdminClient, NewTopic
from client.consumer import AIOConsumer
from client.errors import KafkaError
from client.producer import AIOProducer
from client.types import OffsetAndMetadata, OffsetAndTimestamp, PartitionInfo, TopicInfo, TopicPartition
from console.lag_store import LagStore
from console.sampler import LagSampler
from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def admin(kafka: BrokerProcess) -> AsyncIterator[AIOAdminClient]:
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as a:
        yield a


async def produce(bootstrap: str, topic: str, per_partition: int, partitions: int = 2) -> None:
    async with AIOProducer(bootstrap_servers=bootstrap, linger_ms=1) as p:
        futures = [
            await p.send(topic, b"v", partition=part)
            for part in range(partitions)
            for _ in range(per_partition)
        ]
        await asyncio.gather(*futures)


async def consume(c: AIOConsumer, count: int) -> None:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < count:
        assert time.monotonic() < deadline, f"consumed {len(got)} of {count}"
        got.extend(await c.poll(1.0))
    assert len(got) == count
    await c.commit()


async def test_lag_rises_and_falls(kafka: BrokerProcess, admin: AIOAdminClient, topic: str) -> None:
    other = f"{topic}-nogroup"
    assert await admin.create_topics([NewTopic(topic, 2), NewTopic(other, 1)]) == {topic: None, other: None}
    await produce(kafka.bootstrap, topic, 10)
    ga, gb = f"ga-{topic}", f"gb-{topic}"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    assert await admin.alter_consumer_group_offsets(ga, {tp0: 0, tp1: 0}) == {tp0: None, tp1: None}
    store = LagStore(":memory:", retention_days=1)
    sampler = LagSampler(admin, store)
    t1 = time.time_ns() // 1_000_000
    t2, t3 = t1 + 10_000, t1 + 20_000
    async with AIOConsumer(
        bootstrap_servers=kafka.bootstrap,
        group_id=gb,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    ) as c:
        c.subscribe([topic])
        await consume(c, 20)  # gb: lag 0, ga: 10 per partition
        assert (await admin.list_groups())[gb] == "consumer"

        stats = await sampler.sample_once(t1)
        assert stats.ts_ms == t1 and stats.skipped == 0
        assert stats.groups >= 2 and stats.partitions >= 4

        await produce(kafka.bootstrap, topic, 5)  # 5 more per partition: both groups lag 5 more
        await produce(kafka.bootstrap, other, 7, partitions=1)
        await sampler.sample_once(t2)

        a = store.group_history(ga, t1, t3)
        b = store.group_history(gb, t1, t3)
        assert a.timestamps == b.timestamps == [t1, t2]
        assert a.partitions == {f"{topic}-0": [10, 15], f"{topic}-1": [10, 15]} and a.total == [20, 30]
        assert b.partitions == {f"{topic}-0": [0, 5], f"{topic}-1": [0, 5]} and b.total == [0, 10]

        await consume(c, 10)  # gb catches up
        assert await admin.alter_consumer_group_offsets(ga, {tp0: 12, tp1: 15}) == {tp0: None, tp1: None}
        await sampler.sample_once(t3)

    a = store.group_history(ga, t1, t3)
    b = store.group_history(gb, t1, t3)
    assert a.timestamps == b.timestamps == [t1, t2, t3]
    assert a.partitions == {f"{topic}-0": [10, 15, 3], f"{topic}-1": [10, 15, 0]} and a.total == [20, 30, 3]
    assert b.total == [0, 10, 0]
    assert store.group_history(ga, t1, t3, topic=topic, partition=0).total == [10, 15, 3]

    # Records in: 10 + 7 in the 10 s to t2, none after; consumed: 0, then gb 10 + ga 12 + 15 = 37.
    rates = store.cluster_rates(t1, t3)
    assert rates.timestamps == [t2, t3]
    assert rates.records_in == [1.7, 0.0]
    assert rates.records_out == [0.0, 3.7]
    assert rates.bytes_in[0] is not None and rates.bytes_in[0] > 0
    # Bytes consumed, estimated from the average record size of the partitions read: none, then
    # 37 records' worth (every record of the topic has the same size).
    assert rates.bytes_out[0] == 0.0
    per_record = rates.bytes_in[0] * 10 / 17  # bytes per second x 10 s / the 17 records appended
    assert rates.bytes_out[1] == pytest.approx(37 * per_record / 10, rel=0.25)
    store.close()


async def test_run_loop_samples_and_stops(kafka: BrokerProcess, admin: AIOAdminClient, topic: str) -> None:
    await produce(kafka.bootstrap, topic, 3, partitions=1)
    group = f"g-{topic}"
    tp = TopicPartition(topic, 0)
    await admin.alter_consumer_group_offsets(group, {tp: 1})
    store = LagStore(":memory:", retention_days=1)
    sampler = LagSampler(admin, store, interval_s=0.2)
    task = asyncio.create_task(sampler.run())
    deadline = time.monotonic() + 30
    while len(store.group_history(group, 0, 2**62).timestamps) < 2:
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.05)
    assert sampler.last_error is None and sampler.last_success_ms is not None
    assert sampler.last_stats is not None and sampler.last_stats.groups >= 1
    assert set(store.group_history(group, 0, 2**62).partitions[f"{topic}-0"]) == {2}
    sampler.stop()
    await asyncio.wait_for(task, 10)
    # A cancelled loop ends with CancelledError, nothing else.
    again = asyncio.create_task(LagSampler(admin, store, interval_s=0.2).run())
    await asyncio.sleep(0.3)
    again.cancel()
    with pytest.raises(asyncio.CancelledError):
        await again
    store.close()


async def test_unreachable_broker_is_recorded_not_fatal() -> None:
    store = LagStore(":memory:", retention_days=1)
    async with AIOAdminClient(
        bootstrap_servers=f"127.0.0.1:{free_port()}",
        default_api_timeout_ms=300,
        request_timeout_ms=300,
        retry_backoff_ms=50,
    ) as admin:
        sampler = LagSampler(admin, store, interval_s=0.1)
        task = asyncio.create_task(sampler.run())
        deadline = time.monotonic() + 30
        seen: set[int] = set()
        while len(seen) < 2:  # two failed samples: the loop went on after the first
            assert time.monotonic() < deadline and not task.done()
            if sampler.last_error_ms is not None:
                seen.add(sampler.last_error_ms)
            await asyncio.sleep(0.02)
        assert sampler.last_error and sampler.last_success_ms is None and not task.done()
        sampler.stop()
        await asyncio.wait_for(task, 10)
    assert store.group_names() == []
    store.close()


class FakeAdmin:
    """An admin client answering from dicts: one group's offsets error, one committed topic is gone,
    a partition has no leader, another's end offset errors, log sizes fail."""

    def __init__(self) -> None:
        self.tp = TopicPartition("t", 0)
        self.offset_calls: list[list[str]] = []
        self.list_offsets_calls = 0

    async def list_groups(self) -> dict[str, str]:
        return {"ok": "consumer", "bad": "", "connect-workers": "connect"}

    async def list_topics(self) -> dict[str, TopicInfo]:
        return {
            "t": TopicInfo("t", {0: PartitionInfo("t", 0, 1)}),
            "u": TopicInfo(
                "u", {0: PartitionInfo("u", 0, 1), 1: PartitionInfo("u", 1, -1)}
            ),  # u-1: no leader
        }

    async def list_consumer_groups_offsets(
        self, group_ids: Iterable[str]
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata] | KafkaError]:
        ids = list(group_ids)
        self.offset_calls.append(ids)
        return {
            "ok": {self.tp: OffsetAndMetadata(4), TopicPartition("gone", 0): OffsetAndMetadata(1)},
            "bad": KafkaError("coordinator not available"),
        }

    async def list_offsets(self, specs: dict[TopicPartition, str]) -> dict[TopicPartition, Any]:
        self.list_offsets_calls += 1
        # Neither the deleted topic "gone" that a group still has offsets for, nor the leaderless u-1.
        which = next(iter(specs.values()))
        assert specs == {self.tp: which, TopicPartition("u", 0): which} and which in ("latest", "earliest")
        found = 10 if which == "latest" else 0
        return {self.tp: OffsetAndTimestamp(found, -1), TopicPartition("u", 0): KafkaError("not leader")}

    async def describe_log_dirs(self) -> dict[TopicPartition, int]:
        raise KafkaError("not supported")


async def test_errored_groups_are_skipped_and_sizes_optional() -> None:
    admin = FakeAdmin()
    store = LagStore(":memory:", retention_days=1)
    sampler = LagSampler(admin, store)  # type: ignore[arg-type]
    stats = await sampler.sample_once(1000)
    assert (stats.groups, stats.partitions, stats.skipped) == (1, 1, 1)
    assert admin.offset_calls == [["bad", "ok"]] and admin.list_offsets_calls == 2  # ends and starts
    assert store.group_history("ok", 0, 2000).partitions == {"t-0": [6]}
    assert store.group_names() == ["ok"]
    await sampler.sample_once(2000)
    rates = store.cluster_rates(0, 3000)
    assert rates.timestamps == [2000] and rates.records_in == [0.0]
    assert rates.bytes_in == rates.bytes_out == [None]  # no sizes: no byte estimates
    store.close()
