"""Our producer, consumer and admin client against a real broker process."""

from __future__ import annotations

import asyncio
import time

import pytest

from client import (
    AdminClient,
    AIOAdminClient,
    AIOConsumer,
    AIOProducer,
    Consumer,
    ConsumerRebalanceListener,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    NewTopic,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    Producer,
    RecordTooLargeError,
    TopicPartition,
)
from client.partitioner import partition_for_key
from protocol.errors import ErrorCode
from tests.broker_process import BrokerProcess
from tests.compat.clients import BASE_TS, sample_messages

pytestmark = pytest.mark.timeout(120)


def consume_all(bootstrap: str, tps: list[TopicPartition], count: int, **config: object) -> list:
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **config) as c:
        c.assign(tps)
        out: list = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            out.extend(c.poll(0.5))
        return out


def create(bootstrap: str, name: str, partitions: int, **configs: str) -> None:
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.create_topics([NewTopic(name, partitions, configs=configs)]) == {name: None}


@pytest.mark.parametrize("acks", ["all", "1", "0"])
def test_round_trip_keys_nulls_headers_timestamps(kafka: BrokerProcess, topic: str, acks: str) -> None:
    """What we produce (every acks level) comes back identically, in order, from our consumer."""
    sent = sample_messages(30)
    with Producer(bootstrap_servers=kafka.bootstrap, acks=acks, linger_ms=2) as p:
        futures = [
            p.send(topic, m.value, m.key, partition=0, headers=list(m.headers), timestamp_ms=m.timestamp)
            for m in sent
        ]
        p.flush()
        metadata = [f.get(10) for f in futures]
    if acks == "0":
        assert all(md.offset == -1 for md in metadata)
    else:
        assert [md.offset for md in metadata] == list(range(30))
    assert [md.timestamp for md in metadata] == [m.timestamp for m in sent]
    got = consume_all(kafka.bootstrap, [TopicPartition(topic, 0)], 30)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (i, m.key, m.value, m.headers, m.timestamp) for i, m in enumerate(sent)
    ]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_codecs_round_trip(kafka: BrokerProcess, topic: str, codec: str) -> None:
    with Producer(bootstrap_servers=kafka.bootstrap, compression_type=codec) as p:
        for i in range(200):
            p.send(topic, b"compressible " * 20 + str(i).encode(), partition=0)
    got = consume_all(kafka.bootstrap, [TopicPartition(topic, 0)], 200)
    assert [r.value for r in got] == [b"compressible " * 20 + str(i).encode() for i in range(200)]


def test_keys_go_to_the_murmur2_partition_and_null_keys_stick(kafka: BrokerProcess, topic: str) -> None:
    create(kafka.bootstrap, topic, 7)
    with Producer(bootstrap_servers=kafka.bootstrap, batch_size=2000, linger_ms=50) as p:
        keyed = [(f"key-{i}".encode(), p.send(topic, b"v", f"key-{i}".encode())) for i in range(50)]
        unkeyed = [p.send(topic, b"x" * 100) for _ in range(100)]
        p.flush()
    for key, f in keyed:
        assert f.get().partition == partition_for_key(key, 7)
    parts = [f.get().partition for f in unkeyed]
    runs = sum(1 for a, b in zip(parts, parts[1:], strict=False) if a != b) + 1
    # Sticky: runs of one partition, switching when a batch (2000 bytes, about 16 records) fills.
    assert 3 <= runs <= 15, parts
    assert len(set(parts)) > 1


def test_delivery_callbacks_errors_and_limits(kafka: BrokerProcess, topic: str) -> None:
    create(kafka.bootstrap, topic, 2, **{"max.message.bytes": "2000"})
    reports: list = []
    with Producer(bootstrap_servers=kafka.bootstrap, max_request_size=50_000) as p:
        ok = p.send(topic, b"small", partition=0, on_delivery=lambda e, md: reports.append((e, md)))
        too_big_for_topic = p.send(topic, b"x" * 5000, partition=1)
        with pytest.raises(RecordTooLargeError):
            p.send(topic, b"x" * 60_000)
        with pytest.raises(KafkaError, match="partition 9"):
            p.send(topic, b"v", partition=9)
        p.flush()
        md = ok.get(10)
        assert reports == [(None, md)]
        late: list = []
        ok.add_callback(lambda e, m: late.append(m))
        assert late == [md]
        with pytest.raises(KafkaResponseError) as info:
            too_big_for_topic.get(10)
        assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
        assert isinstance(too_big_for_topic.exception(), KafkaResponseError)
        # The producer keeps working after a failed batch (new producer id, renumbered sequences).
        assert p.send(topic, b"after", partition=1).get(10).offset >= 0


def test_consumer_positioning(kafka: BrokerProcess, topic: str) -> None:
    """seek, seek_to_beginning/end, position, offsets_for_times, pause/resume, beginning/end offsets."""
    tp = TopicPartition(topic, 0)
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        for i in range(10):
            p.send(topic, f"v{i}".encode(), partition=0, timestamp_ms=BASE_TS + i * 1000)
    with Consumer(bootstrap_servers=kafka.bootstrap, auto_offset_reset="latest") as c:
        c.assign([tp])
        assert c.position(tp) == 10  # latest
        assert c.beginning_offsets([tp]) == {tp: 0} and c.end_offsets([tp]) == {tp: 10}
        c.seek_to_beginning(tp)
        assert [r.offset for r in c.poll(5, max_records=4)] == [0, 1, 2, 3]
        assert c.position(tp) == 4
        c.seek(tp, 7)
        assert [r.value for r in c.poll(5)] == [b"v7", b"v8", b"v9"]
        found = c.offsets_for_times({tp: BASE_TS + 4500})
        assert found[tp] is not None and found[tp].offset == 5 and found[tp].timestamp == BASE_TS + 5000
        assert c.offsets_for_times({tp: BASE_TS + 10**9}) == {tp: None}
        c.seek(tp, found[tp].offset)
        c.pause(tp)
        assert c.paused() == {tp}
        assert c.poll(0.5) == []
        c.resume(tp)
        assert [r.offset for r in c.poll(5)] == [5, 6, 7, 8, 9]
        c.seek_to_end()
        assert c.poll(0.3) == [] and c.position(tp) == 10
        assert c.highwater(tp) == 10


def test_auto_offset_reset_none_raises(kafka: BrokerProcess, topic: str) -> None:
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        p.send(topic, b"v").get(10)
    with Consumer(bootstrap_servers=kafka.bootstrap, auto_offset_reset="none", group_id=f"g-{topic}") as c:
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError):
            c.poll(2)
        c.seek(TopicPartition(topic, 0), 0)
        assert [r.value for r in c.poll(5)] == [b"v"]


def test_commits_in_assign_mode_with_metadata(kafka: BrokerProcess, topic: str) -> None:
    tp = TopicPartition(topic, 0)
    group = f"g-{topic}"
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        for i in range(6):
            p.send(topic, f"v{i}".encode(), partition=0)
    with Consumer(bootstrap_servers=kafka.bootstrap, group_id=group, auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert c.committed([tp]) == {tp: None}
        assert len(c.poll(5, max_records=2)) == 2
        c.commit()  # the position: 2
        assert c.committed([tp]) == {tp: OffsetAndMetadata(2, "")}
        c.commit({tp: OffsetAndMetadata(4, "checkpoint")})
        assert c.committed([tp]) == {tp: OffsetAndMetadata(4, "checkpoint")}
        done: list = []
        c.commit_async({tp: 5}, callback=lambda offsets, err: done.append((offsets, err)))
        deadline = time.monotonic() + 10
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done == [({tp: OffsetAndMetadata(5, "")}, None)]
    with Consumer(bootstrap_servers=kafka.bootstrap, group_id=group, auto_offset_reset="earliest") as c:
        c.assign([tp])
        assert [r.value for r in c.poll(5)] == [b"v5"]  # resumes from the committed offset


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", assigned))


def test_group_subscribe_pattern_listener_and_auto_commit(kafka: BrokerProcess, topic: str) -> None:
    """A regex subscription, two members (eager range), listener calls, auto-commit on close."""
    create(kafka.bootstrap, f"{topic}-a", 2)
    create(kafka.bootstrap, f"{topic}-b", 2)
    create(kafka.bootstrap, f"other-{topic}", 1)
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        for i in range(40):
            p.send(f"{topic}-{'ab'[i % 2]}", str(i).encode(), partition=i % 4 // 2)
    group = f"g-{topic}"
    conf = dict(
        bootstrap_servers=kafka.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        partition_assignment_strategy="range",
        heartbeat_interval_ms=200,
        session_timeout_ms=3000,
        auto_commit_interval_ms=100,
    )
    first, second = Recorder(), Recorder()
    c1 = Consumer(**conf)
    c1.subscribe(f"^{topic}-[ab]$", listener=first)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 40 and time.monotonic() < deadline:
        got.extend(c1.poll(0.5))
    assert sorted(int(r.value) for r in got) == list(range(40))
    assert c1.subscription() == {f"{topic}-a", f"{topic}-b"}
    assert first.events[0] == ("assigned", {TopicPartition(f"{topic}-{t}", p) for t in "ab" for p in (0, 1)})
    c2 = Consumer(**conf)
    c2.subscribe(f"^{topic}-[ab]$", listener=second)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (c2.assignment() and len(c1.assignment()) == 2):
        c1.poll(0.2)
        c2.poll(0.2)
    assert len(c1.assignment()) == 2 and len(c2.assignment()) == 2
    assert c1.assignment().isdisjoint(c2.assignment())
    assert ("revoked", {TopicPartition(f"{topic}-{t}", p) for t in "ab" for p in (0, 1)}) in first.events
    c1.close()
    c2.close()
    with AdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        committed = admin.list_consumer_group_offsets(group)
    assert sum(om.offset for om in committed.values()) == 40  # auto-committed positions


def test_unreachable_broker_fails_clearly() -> None:
    admin = AdminClient(bootstrap_servers="127.0.0.1:1", socket_connection_setup_timeout_ms=2000)
    with admin, pytest.raises(KafkaConnectionError, match="127.0.0.1:1"):
        admin.check_connection()
    producer = Producer(bootstrap_servers="127.0.0.1:1", max_block_ms=500)
    with producer, pytest.raises((KafkaTimeoutError, KafkaConnectionError)):
        producer.send("t", b"v")


def test_admin_topics_configs_offsets_and_records(kafka: BrokerProcess, topic: str) -> None:
    with AdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        assert admin.create_topics([NewTopic(topic, 3, configs={"retention.ms": "123456"})]) == {topic: None}
        again = admin.create_topics([NewTopic(topic, 3)])[topic]
        assert isinstance(again, KafkaResponseError) and again.code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert topic in admin.list_topics()
        info = admin.describe_topics([topic, "no-such-topic"])
        assert sorted(info[topic].partitions) == [0, 1, 2]
        assert info["no-such-topic"].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        configs = admin.describe_configs([(2, topic)])[(2, topic)]
        assert configs["retention.ms"].value == "123456" and not configs["retention.ms"].is_default
        admin.alter_configs((2, topic), {"retention.bytes": "1000000"}, ["retention.ms"])
        configs = admin.describe_configs([(2, topic)])[(2, topic)]
        assert configs["retention.bytes"].value == "1000000" and configs["retention.ms"].is_default

        with Producer(bootstrap_servers=kafka.bootstrap) as p:
            for i in range(10):
                p.send(topic, b"v", b"k", partition=0, timestamp_ms=BASE_TS + i)
        tp = TopicPartition(topic, 0)
        offsets = admin.list_offsets({tp: "earliest"})
        assert offsets[tp].offset == 0
        assert admin.list_offsets({tp: "latest"})[tp].offset == 10
        assert admin.list_offsets({tp: BASE_TS + 3})[tp].offset == 3
        assert admin.delete_records({tp: 4}) == {tp: 4}
        assert admin.list_offsets({tp: "earliest"})[tp].offset == 4
        got = consume_all(kafka.bootstrap, [tp], 6)
        assert [r.offset for r in got] == [4, 5, 6, 7, 8, 9]
        assert admin.delete_topics([topic]) == {topic: None}
        assert topic not in admin.list_topics()


def test_admin_groups(kafka: BrokerProcess, topic: str) -> None:
    group = f"g-{topic}"
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        for _ in range(5):
            p.send(topic, b"v", partition=0)
    c = Consumer(topic, bootstrap_servers=kafka.bootstrap, group_id=group, auto_offset_reset="earliest")
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        got.extend(c.poll(0.5, max_records=3))
    c.commit({TopicPartition(topic, 0): 3})
    with AdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        assert admin.list_groups()[group] == "consumer"
        desc = admin.describe_groups([group])[group]
        assert desc.state == "Stable" and len(desc.members) == 1
        assert desc.members[0].assignment == {TopicPartition(topic, 0)}
        (lag,) = admin.consumer_group_lag(group)
        assert (lag.committed, lag.end_offset, lag.lag, lag.member_id) == (3, 5, 2, desc.members[0].member_id)
        deleted = admin.delete_groups([group])[group]
        assert isinstance(deleted, KafkaResponseError) and deleted.code == ErrorCode.NON_EMPTY_GROUP
        c.close(autocommit=False)
        assert admin.alter_consumer_group_offsets(group, {TopicPartition(topic, 0): 1}) == {
            TopicPartition(topic, 0): None
        }
        assert admin.list_consumer_group_offsets(group) == {
            TopicPartition(topic, 0): OffsetAndMetadata(1, "")
        }
        assert admin.delete_groups([group]) == {group: None}
        assert group not in admin.list_groups()


async def test_asyncio_clients(kafka: BrokerProcess, topic: str) -> None:
    async with AIOAdminClient(bootstrap_servers=kafka.bootstrap) as admin:
        assert await admin.create_topics([NewTopic(topic, 2)]) == {topic: None}
    async with AIOProducer(bootstrap_servers=kafka.bootstrap, linger_ms=1) as p:
        futures = [await p.send(topic, f"v{i}".encode(), partition=i % 2) for i in range(20)]
        md = await p.send_and_wait(topic, b"last", partition=0)
        results = await asyncio.gather(*futures)
    assert md.offset == 10 and sorted(r.offset for r in results if r.partition == 1) == list(range(10))
    seen: list[set[TopicPartition]] = []

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            seen.append(assigned)

    async with AIOConsumer(
        bootstrap_servers=kafka.bootstrap, group_id=f"g-{topic}", auto_offset_reset="earliest"
    ) as c:
        c.subscribe([topic], listener=Listener())
        got: list = []
        while len(got) < 21:
            got.extend(await c.poll(1.0))
        await c.commit()
        assert await c.committed([TopicPartition(topic, 0)]) == {
            TopicPartition(topic, 0): OffsetAndMetadata(11, "")
        }
    assert seen == [{TopicPartition(topic, 0), TopicPartition(topic, 1)}]
    assert sorted(r.value for r in got) == sorted([f"v{i}".encode() for i in range(20)] + [b"last"])


def test_serializers(kafka: BrokerProcess, topic: str) -> None:
    import json

    with Producer(
        bootstrap_servers=kafka.bootstrap,
        key_serializer=lambda k: k.encode() if k is not None else None,
        value_serializer=lambda v: json.dumps(v).encode(),
    ) as p:
        p.send(topic, {"a": 1}, "key", partition=0).get(10)
    with Consumer(
        bootstrap_servers=kafka.bootstrap,
        auto_offset_reset="earliest",
        key_deserializer=lambda b: b.decode() if b is not None else None,
        value_deserializer=lambda b: json.loads(b),
    ) as c:
        c.assign([TopicPartition(topic, 0)])
        (r,) = c.poll(5)
        assert (r.key, r.value) == ("key", {"a": 1})


def test_a_rejected_batch_does_not_disturb_the_ones_behind_it(kafka: BrokerProcess, topic: str) -> None:
    """Idempotent, 5 in flight: a batch the broker refuses (too large) fails alone; the rest land in order."""
    create(kafka.bootstrap, topic, 1, **{"max.message.bytes": "3000"})
    with Producer(bootstrap_servers=kafka.bootstrap, batch_size=1000, linger_ms=1) as p:
        sent = []
        for i in range(300):
            if i == 150:
                big = p.send(topic, b"B" * 3500, partition=0)
            sent.append((f"v{i}".encode(), p.send(topic, f"v{i}".encode(), partition=0)))
        p.flush()
    with pytest.raises(KafkaResponseError, match="MESSAGE_TOO_LARGE"):
        big.get(10)
    offsets = [f.get(10).offset for _, f in sent]
    assert offsets == sorted(offsets) and len(set(offsets)) == 300
    got = consume_all(kafka.bootstrap, [TopicPartition(topic, 0)], 300)
    assert [r.value for r in got] == [v for v, _ in sent]


def test_iterating_a_consumer_yields_records(kafka: BrokerProcess, topic: str) -> None:
    with Producer(bootstrap_servers=kafka.bootstrap) as p:
        for i in range(5):
            p.send(topic, str(i).encode(), partition=0)
    with Consumer(bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(topic, 0)])
        seen = []
        for record in c:
            seen.append(record.value)
            if len(seen) == 5:
                break
    assert seen == [b"0", b"1", b"2", b"3", b"4"]
