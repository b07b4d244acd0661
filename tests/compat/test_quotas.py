"""Client quotas against a real broker subprocess, with clients we did not write.

- DescribeClientQuotas / AlterClientQuotas (v0 and v1) as kafka-python 3.0
  encodes them (its generated protocol classes; confluent-kafka 2.16 and
  kafka-python's admin have no quota calls): match types, strict filters,
  validate_only, Kafka's INVALID_REQUEST messages; and persistence across a
  broker restart, in Kafka's entity names.
- The issue's proof: confluent-kafka producers A (client-id with
  producer_byte_rate 1 MB/s) and B (no quota) producing as fast as they can
  at once for 10 s: A's rate after its first window is within 10% of the
  quota, B's is many times that and B sees no throttle event. The same for a
  consumer with consumer_byte_rate beside an unthrottled one.
- request_percentage through raw requests: answers carry throttle_time_ms;
  user quotas follow the principal (``User:ANONYMOUS`` falls under the
  default user) and Kafka's precedence.

The broker runs with ``quota.window.num=2`` (windows of 1 s): with Kafka's
default of 11 a new client may first burst ten seconds' worth of its quota and
is then throttled in 11 s cycles, too slow a rhythm to measure in a short
test (tests/unit/test_quotas.py covers the default window's arithmetic).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from client.admin import AdminClient, NewTopic
from client.admin_quotas import DEFAULT, QuotaEntity
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

MB = 1_000_000
QUOTA = 1 * MB
RUN_S = 10.0
STEADY_FROM_S = 2.0  # after the first (burst) window of quota.window.num=2 windows of 1 s
QUOTA_ENV = {
    "MINIKAFKA_QUOTA_WINDOW_NUM": "2",
    # B writes hundreds of MB/s: keep the disk it fills small
    "MINIKAFKA_LOG_SEGMENT_BYTES": str(32 * 1024 * 1024),
    "MINIKAFKA_LOG_RETENTION_BYTES": str(64 * 1024 * 1024),
    "MINIKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS": "1000",
    "MINIKAFKA_LOG_SEGMENT_DELETE_DELAY_MS": "0",
}
NULL = "(null)"  # a null entity name (a default entity) in the tables below
Entry = AlterClientQuotasRequest.EntryData
Component = DescribeClientQuotasRequest.ComponentData


@pytest.fixture
def qbroker(tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "data", env=QUOTA_ENV).start()
    try:
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()


# -- the admin APIs through kafka-python ---------------------------------------------------------
def _send(admin: KafkaAdminClient, request: Any) -> Any:
    return admin._manager.run(admin._manager.send, request)


def _alter(
    admin: KafkaAdminClient, entries: list[tuple[dict[str, str | None], dict[str, float | None]]], **kw: Any
) -> list[tuple[int, str | None]]:
    request = AlterClientQuotasRequest(
        entries=[
            Entry(
                entity=[Entry.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                ops=[Entry.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()],
            )
            for entity, ops in entries
        ],
        validate_only=kw.pop("validate_only", False),
        **kw,
    )
    return [(e.error_code, e.error_message) for e in _send(admin, request).entries]


def _describe(
    admin: KafkaAdminClient, components: list[tuple[str, int, str | None]], strict: bool = False, **kw: Any
) -> Any:
    request = DescribeClientQuotasRequest(
        components=[Component(entity_type=t, match_type=m, match=n) for t, m, n in components],
        strict=strict,
        **kw,
    )
    response = _send(admin, request)
    if response.error_code:
        return response.error_code, response.error_message
    return sorted(
        (
            tuple(
                sorted(
                    (e.entity_type, NULL if e.entity_name is None else e.entity_name) for e in entry.entity
                )
            ),
            {v.key: v.value for v in entry.values},
        )
        for entry in response.entries
    )


def test_alter_and_describe_with_kafka_python(qbroker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=qbroker.bootstrap)
    try:
        assert (
            _alter(
                admin,
                [
                    ({"user": "alice"}, {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0}),
                    ({"client-id": None}, {"request_percentage": 150.0}),
                    ({"user": "alice", "client-id": "app"}, {"controller_mutation_rate": 2.5}),
                    ({"user": None}, {"producer_byte_rate": 5.0}),
                ],
            )
            == [(0, None)] * 4
        )
        alice, default_client = (("user", "alice"),), (("client-id", NULL),)
        alice_app = (("client-id", "app"), ("user", "alice"))
        everything = _describe(admin, [])
        assert everything == [
            (default_client, {"request_percentage": 150.0}),
            (alice_app, {"controller_mutation_rate": 2.5}),
            ((("user", NULL),), {"producer_byte_rate": 5.0}),
            (alice, {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0}),
        ]
        assert _describe(admin, [("user", 0, "alice")]) == [everything[1], everything[3]]
        assert _describe(admin, [("user", 0, "alice")], strict=True) == [everything[3]]
        assert _describe(admin, [("user", 1, None)]) == [everything[2]]
        assert _describe(admin, [("user", 2, None)], strict=True) == [everything[2], everything[3]]
        assert _describe(admin, [("client-id", 2, None)], version=0) == [everything[0], everything[1]]
        assert _describe(admin, [("ip", 2, None)]) == []
        # remove one key, validate_only changes nothing, Kafka's refusals
        assert _alter(admin, [({"user": "alice"}, {"consumer_byte_rate": None})], version=0) == [(0, None)]
        assert _alter(admin, [({"user": "alice"}, {"producer_byte_rate": 7.0})], validate_only=True) == [
            (0, None)
        ]
        assert _describe(admin, [("user", 0, "alice")], strict=True) == [
            (alice, {"producer_byte_rate": 1048576.0})
        ]
        assert _alter(
            admin,
            [
                ({"user": "bob"}, {"producer_byte_rate": 1.5}),
                ({"user": "bob"}, {"bogus_rate": 1.0}),
                ({"client-id": "c"}, {"consumer_byte_rate": -1.0}),
                ({"group": "g"}, {"producer_byte_rate": 1.0}),
                ({}, {"producer_byte_rate": 1.0}),
            ],
        ) == [
            (42, "Ignoring duplicate entity ClientQuotaEntity(entries={user=bob})"),
            (42, "Quota consumer_byte_rate must be greater than 0"),
            (42, "Unhandled client quota entity type: group"),
            (42, "Invalid empty client quota entity"),
        ]
        assert _describe(admin, [("group", 2, None)]) == (35, "Unsupported entity type group")
        assert _describe(admin, [("user", 0, None)]) == (
            42,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        )
    finally:
        admin.close()


def test_quotas_survive_a_restart_in_kafkas_names(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = BrokerProcess(data).start()
    changes: dict[QuotaEntity, dict[str, float | None]] = {
        QuotaEntity(user="CN=alice,O=acme"): {"producer_byte_rate": 1024},
        QuotaEntity(user=DEFAULT, client_id="app 1"): {"consumer_byte_rate": 2048},
        QuotaEntity(client_id=DEFAULT): {"request_percentage": 25.5},
    }
    try:
        with AdminClient(bootstrap_servers=proc.bootstrap) as admin:
            assert admin.alter_client_quotas(changes) == dict.fromkeys(changes)
    finally:
        assert proc.stop() == 0, proc.log()
    users = json.loads((data / "__minikafka_scram_credentials.json").read_text())["users"]
    assert users == {"CN=alice,O=acme": {"producer_byte_rate": "1024"}}  # as named (ZooKeeper paths sanitize)
    entities = json.loads((data / "__minikafka_client_quotas.json").read_text())["entities"]
    assert entities == {
        "users/<default>/clients/app%201": {"consumer_byte_rate": "2048"},
        "clients/<default>": {"request_percentage": "25.5"},
    }
    proc = BrokerProcess(data).start()
    try:
        with AdminClient(bootstrap_servers=proc.bootstrap) as admin:
            found = admin.describe_client_quotas()
    finally:
        assert proc.stop() == 0, proc.log()
    assert found == {e: {k: float(v) for k, v in c.items() if v is not None} for e, c in changes.items()}


# -- enforcement -----------------------------------------------------------------------------------
def _steady_rate(events: list[tuple[float, int]], start: float) -> float:
    """Bytes per second after the first window: the least-squares slope of cumulative bytes over time
    (the quota admits bursts of a window's worth, so the slope, not two end points, is the rate)."""
    pts = [(t - start, n) for t, n in events if STEADY_FROM_S <= t - start <= RUN_S]
    assert len(pts) > 10, pts
    mean_t = sum(t for t, _ in pts) / len(pts)
    mean_n = sum(n for _, n in pts) / len(pts)
    num = sum((t - mean_t) * (n - mean_n) for t, n in pts)
    return num / sum((t - mean_t) ** 2 for t, _ in pts)


def _produce_flat_out(bootstrap: str, client_id: str, topic: str, out: dict[str, Any]) -> None:
    throttles: list[int] = []
    events: list[tuple[float, int]] = []
    delivered = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered[0] += len(msg.value())
            events.append((time.monotonic(), delivered[0]))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 65536,
            "queue.buffering.max.kbytes": 8192,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    value = os.urandom(10_000)
    start = time.monotonic()
    while time.monotonic() - start < RUN_S:
        try:
            producer.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
    producer.purge()  # what is still queued would only be throttled on: not part of the measure
    producer.flush(30)
    out[client_id] = (start, events, throttles)


def test_a_producer_over_its_quota_is_throttled_and_another_is_not(qbroker: BrokerProcess) -> None:
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        assert admin.create_topics([NewTopic("qa", 1, 1), NewTopic("qb", 1, 1)]) == {"qa": None, "qb": None}
        quota = {QuotaEntity(client_id="A"): {"producer_byte_rate": QUOTA}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
    results: dict[str, Any] = {}
    threads = [
        threading.Thread(target=_produce_flat_out, args=(qbroker.bootstrap, cid, topic, results))
        for cid, topic in (("A", "qa"), ("B", "qb"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a_start, a_events, a_throttles = results["A"]
    b_start, b_events, b_throttles = results["B"]
    a_rate = _steady_rate(a_events, a_start)
    b_rate = _steady_rate(b_events, b_start)
    print(f"A: {a_rate / MB:.3f} MB/s against a quota of {QUOTA / MB:.3f}; B: {b_rate / MB:.1f} MB/s")
    assert abs(a_rate - QUOTA) <= 0.1 * QUOTA, a_rate
    assert a_throttles and max(a_throttles) > 0
    assert b_rate > 5 * QUOTA, b_rate
    assert b_throttles == []


def _consume_for(bootstrap: str, client_id: str, out: dict[str, Any]) -> None:
    throttles: list[int] = []
    events: list[tuple[float, int]] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": f"g-{client_id}",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 131072,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    consumer.assign([CTopicPartition("qc", 0, 0)])
    got = 0
    start = time.monotonic()
    while time.monotonic() - start < RUN_S:
        msg = consumer.poll(0.1)
        if msg is None or msg.error():
            continue
        got += len(msg.value())
        events.append((time.monotonic(), got))
    consumer.close()
    out[client_id] = (start, events, throttles)


def test_a_consumer_over_its_quota_is_throttled_and_another_is_not(qbroker: BrokerProcess) -> None:
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        assert admin.create_topics([NewTopic("qc", 1, 1)]) == {"qc": None}
        quota = {QuotaEntity(client_id="C"): {"consumer_byte_rate": QUOTA}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
    producer = Producer({"bootstrap.servers": qbroker.bootstrap, "linger.ms": 5, "batch.size": 65536})
    value = os.urandom(10_000)
    total = int(QUOTA * (RUN_S + 4))
    for _ in range(total // len(value)):
        while True:
            try:
                producer.produce("qc", value)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    assert producer.flush(30) == 0
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=_consume_for, args=(qbroker.bootstrap, cid, results)) for cid in "CD"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c_start, c_events, c_throttles = results["C"]
    _, d_events, d_throttles = results["D"]
    c_rate = _steady_rate(c_events, c_start)
    print(f"C: {c_rate / MB:.3f} MB/s against a quota of {QUOTA / MB:.3f}")
    assert abs(c_rate - QUOTA) <= 0.15 * QUOTA, c_rate
    assert c_throttles and max(c_throttles) > 0
    assert d_events[-1][1] >= total - len(value) and d_throttles == []  # D read everything, unthrottled


def test_request_percentage_throttles_raw_requests(qbroker: BrokerProcess) -> None:
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        quota = {QuotaEntity(client_id="busy"): {"request_percentage": 0.01}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
    metadata = {
        "topics": None,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    with RawClient(qbroker.port) as busy, RawClient(qbroker.port) as idle:
        throttles = []
        for _ in range(3):
            throttles.append(busy.recv(3, 12, busy.send(3, 12, metadata, client_id="busy")).throttle_time_ms)
        assert max(throttles) > 0 and all(t <= 1000 for t in throttles)  # capped at one window
        assert idle.recv(3, 12, idle.send(3, 12, metadata, client_id="idle")).throttle_time_ms == 0


def _produce_throttle_ms(port: int, client_id: str) -> int:
    """The throttle time of one 20 KB raw produce (its record bytes count whatever the topic)."""
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [
            {
                "name": "nowhere",
                "partition_data": [{"index": 0, "records": build_batch([Record(0, 0, None, b"x" * 20_000)])}],
            }
        ],
    }
    with RawClient(port) as c:
        return c.recv(0, 9, c.send(0, 9, body, client_id=client_id)).throttle_time_ms


def test_user_quotas_follow_the_principal_and_kafkas_precedence(qbroker: BrokerProcess) -> None:
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        quota = {QuotaEntity(user=DEFAULT): {"producer_byte_rate": 1000}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
        assert _produce_throttle_ms(qbroker.port, "x") > 0  # User:ANONYMOUS falls under the default user
        more = {QuotaEntity(user="ANONYMOUS", client_id=DEFAULT): {"producer_byte_rate": 10**9}}
        assert admin.alter_client_quotas(more) == dict.fromkeys(more)
        assert _produce_throttle_ms(qbroker.port, "y") == 0  # <user, default client-id> comes first


def test_a_fetch_carries_at_most_the_quota_window(qbroker: BrokerProcess) -> None:
    """Kafka caps a consumer's max_bytes at its quota over the window: rate x
    (quota.window.num - 1) x 1 s = 50 kB here, so one answer cannot hand over 400 kB at once."""
    from tests.integration.test_wire import fetch_request

    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        quota = {QuotaEntity(client_id="capped"): {"consumer_byte_rate": 50_000}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        admin.create_topics([NewTopic("capped-topic", 1, 1)])
    producer = Producer({"bootstrap.servers": qbroker.bootstrap, "linger.ms": 0})
    for _ in range(40):
        producer.produce("capped-topic", b"x" * 10_000, partition=0)
        assert producer.flush(10) == 0  # one batch of 10 kB each
    del producer
    request = fetch_request("capped-topic", 0, max_bytes=10 * MB)
    with RawClient(qbroker.port) as c:
        capped = c.recv(1, 11, c.send(1, 11, request, client_id="capped")).responses[0].partitions[0]
        free = c.recv(1, 11, c.send(1, 11, request, client_id="free")).responses[0].partitions[0]
    assert 10_000 < len(capped.records) <= 50_000
    assert len(free.records) > 400_000


def _create_topics(c: RawClient, version: int, client_id: str, topics: dict[str, int]) -> Any:
    body = {
        "topics": [
            {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
            for n, p in topics.items()
        ],
        "timeout_ms": 10_000,
        "validate_only": False,
    }
    return c.recv(19, version, c.send(19, version, body, client_id=client_id))


def test_controller_mutation_rate_refuses_topics_once_exceeded(qbroker: BrokerProcess) -> None:
    """KIP-599 with quota.window.num=2 and 1 s windows: a rate of 1 partition/s is a bucket of 2.
    Strict versions refuse the topics after the one that emptied it; older versions go ahead,
    throttled; other clients are not affected."""
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        quota = {QuotaEntity(client_id="mutator"): {"controller_mutation_rate": 1.0}}
        assert admin.alter_client_quotas(quota) == dict.fromkeys(quota)
    with RawClient(qbroker.port) as c:
        strict = _create_topics(c, 7, "mutator", {"m-first": 5, "m-second": 1})
        codes = {t.name: (t.error_code, t.error_message) for t in strict.topics}
        assert codes == {
            "m-first": (0, None),  # the bucket had credit: it goes through, and is now 3 below zero
            "m-second": (89, "The throttling quota has been exceeded."),
        }
        assert 2000 <= strict.throttle_time_ms <= 3000
        other = _create_topics(c, 7, "someone-else", {"o-first": 5})
        assert [t.error_code for t in other.topics] == [0] and other.throttle_time_ms == 0
    # c was muted for its throttle time, so the bucket is back near zero: an old version goes ahead
    # and empties it again; a second connection (not muted) is refused the deletion at once.
    with RawClient(qbroker.port) as c, RawClient(qbroker.port) as d:
        permissive = _create_topics(c, 5, "mutator", {"m-old": 4})
        assert [t.error_code for t in permissive.topics] == [0] and permissive.throttle_time_ms > 0
        body = {"topic_names": ["m-first"], "timeout_ms": 10_000}
        deleted = d.recv(20, 5, d.send(20, 5, body, client_id="mutator"))
        assert [(r.name, r.error_code) for r in deleted.responses] == [("m-first", 89)]
    with AdminClient(bootstrap_servers=qbroker.bootstrap) as admin:
        assert {"m-first", "m-old", "o-first"} <= set(admin.list_topics())
        assert "m-second" not in admin.list_topics()
