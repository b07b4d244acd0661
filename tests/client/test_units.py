"""Unit tests of the client's pure parts: murmur2, configuration, assignors, the consumer protocol encoding."""

from __future__ import annotations

import pytest

from client.assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from client.config import consumer_config, producer_config
from client.errors import ConfigError
from client.partitioner import StickyPartitioner, murmur2, partition_for_key
from client.types import TopicPartition as TP
from protocol.member_data import (
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tests.data import vector_rows

# -- murmur2 -------------------------------------------------------------------------------------


def test_murmur2_matches_java_vectors() -> None:
    """Every key of tests/data/vectors/murmur2.tsv: Java's hash, toPositive and partition of 3 and 50."""
    rows = vector_rows("murmur2.tsv")
    assert len(rows) >= 10
    for key, signed, hexval, positive, p3, p50 in rows:
        h = murmur2(key.encode("utf-8"))
        assert h == int(signed), key
        assert h & 0xFFFFFFFF == int(hexval, 16), key
        assert h & 0x7FFFFFFF == int(positive), key
        assert partition_for_key(key.encode("utf-8"), 3) == int(p3), key
        assert partition_for_key(key.encode("utf-8"), 50) == int(p50), key


def test_sticky_partitioner_moves_only_when_told() -> None:
    s = StickyPartitioner()
    first = s.partition("t", 8)
    assert all(s.partition("t", 8) == first for _ in range(20))
    second = s.next("t", 8)
    assert second != first and s.partition("t", 8) == second
    assert s.next("one", 1) == 0


# -- configuration ---------------------------------------------------------------------------------


def test_config_accepts_kafka_names_underscores_and_strings() -> None:
    c = producer_config({"bootstrap.servers": "h1:9093,h2", "linger.ms": "7"}, batch_size=100, acks="1")
    assert c["bootstrap.servers"] == [("h1", 9093), ("h2", 9092)]
    assert c["linger.ms"] == 7 and c["batch.size"] == 100 and c["acks"] == 1
    assert c["enable.idempotence"] is False  # acks=1 rules out the default idempotence
    assert producer_config()["enable.idempotence"] is True
    assert producer_config(acks="all")["acks"] == -1
    cc = consumer_config(
        {
            "group.id": "g",
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor,roundrobin",
        }
    )
    assert cc["partition.assignment.strategy"] == ["range", "roundrobin"]
    assert cc["enable.auto.commit"] is True and cc["client.id"].startswith("consumer-g-")
    assert consumer_config()["enable.auto.commit"] is False  # no group.id


@pytest.mark.parametrize(
    ("factory", "config", "message"),
    [
        (
            producer_config,
            {"linger.msec": 5},
            "unknown producer configuration key 'linger.msec' (did you mean 'linger.ms'?)",
        ),
        (producer_config, {"linger.ms": "soon"}, "invalid value 'soon' for 'linger.ms': expected an integer"),
        (producer_config, {"linger.ms": -1}, "expected an integer >= 0"),
        (producer_config, {"acks": 2}, "expected all, -1, 0 or 1"),
        (producer_config, {"compression.type": "brotli"}, "expected one of none, gzip, snappy, lz4, zstd"),
        (
            producer_config,
            {"enable.idempotence": True, "acks": 1},
            "enable.idempotence=true requires acks=all",
        ),
        (producer_config, {"bootstrap.servers": "host:99999"}, "port 99999 out of range"),
        (producer_config, {"key.serializer": 5}, "expected a callable"),
        (producer_config, {"group.id": "g"}, "unknown producer configuration key 'group.id'"),
        (consumer_config, {"auto.offset.reset": "smallest"}, "expected one of earliest, latest, none"),
        (consumer_config, {"isolation.level": "serializable"}, "read_uncommitted, read_committed"),
        (consumer_config, {"partition.assignment.strategy": "fair"}, "unknown assignor 'fair'"),
        (consumer_config, {"enable.auto.commit": "yes please"}, "expected true or false"),
        (consumer_config, {"enable.auto.commit": True}, "enable.auto.commit=true requires a group.id"),
        (
            consumer_config,
            {"group.id": "g", "heartbeat.interval.ms": 5000, "session.timeout.ms": 3000},
            "lower than",
        ),
        (consumer_config, {"acks": "all"}, "unknown consumer configuration key 'acks'"),
    ],
)
def test_config_rejects_unknown_keys_and_bad_values(factory: object, config: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        factory(config)  # type: ignore[operator]
    assert message in str(info.value)


def test_clients_validate_config_at_construction() -> None:
    from client import AdminClient, Consumer, Producer

    for cls in (Producer, Consumer, AdminClient):
        with pytest.raises(ConfigError, match="unknown"):
            cls({"bootstrap.servers": "127.0.0.1:1", "no.such.key": 1})


# -- assignors: the worked examples of the design notes (000, 002, 004) ----------------------------


def tps(*names: str) -> list[TP]:
    """ "t0p1" -> TopicPartition("t0", 1); "T1-3" -> ("T1", 3)."""
    out = []
    for n in names:
        topic, _, p = n.rpartition("-") if "-" in n else (n[: n.rindex("p")], "", n[n.rindex("p") + 1 :])
        out.append(TP(topic, int(p)))
    return out


def subs(topics: list[str], *members: str) -> dict[str, Subscription]:
    return {m: Subscription(list(topics), member_id=m) for m in members}


def test_range_one_topic_ten_partitions_three_consumers() -> None:
    got = RangeAssignor().assign({"T1": 10}, subs(["T1"], "C1", "C2", "C3"))
    assert got == {
        "C1": tps("T1-0", "T1-1", "T1-2", "T1-3"),
        "C2": tps("T1-4", "T1-5", "T1-6"),
        "C3": tps("T1-7", "T1-8", "T1-9"),
    }


def test_range_two_topics_each_consumer_gets_the_same_range_of_both() -> None:
    got = RangeAssignor().assign({"T1": 10, "T2": 10}, subs(["T1", "T2"], "C1", "C2", "C3"))
    assert sorted(got["C1"]) == tps("T1-0", "T1-1", "T1-2", "T1-3", "T2-0", "T2-1", "T2-2", "T2-3")
    assert sorted(got["C2"]) == tps("T1-4", "T1-5", "T1-6", "T2-4", "T2-5", "T2-6")
    assert sorted(got["C3"]) == tps("T1-7", "T1-8", "T1-9", "T2-7", "T2-8", "T2-9")


def test_range_orders_static_members_first_like_kafka() -> None:
    s = subs(["T"], "a", "b")
    s["b"].group_instance_id = "static-1"
    got = RangeAssignor().assign({"T": 3}, s)
    assert got == {"b": tps("T-0", "T-1"), "a": tps("T-2")}


def test_roundrobin_deals_sorted_partitions_to_sorted_members() -> None:
    got = RoundRobinAssignor().assign({"T1": 10}, subs(["T1"], "C2", "C1", "C3"))
    assert got == {
        "C1": tps("T1-0", "T1-3", "T1-6", "T1-9"),
        "C2": tps("T1-1", "T1-4", "T1-7"),
        "C3": tps("T1-2", "T1-5", "T1-8"),
    }


def test_roundrobin_skips_members_not_subscribed() -> None:
    s = {"A": Subscription(["t0"]), "B": Subscription(["t0", "t1"]), "C": Subscription(["t1"])}
    got = RoundRobinAssignor().assign({"t0": 2, "t1": 2}, s)
    # Kafka's RoundRobinAssignor: t0p0->A, t0p1->B, t1p0->C, t1p1->B.
    assert got == {"A": tps("t0p0"), "B": tps("t0p1", "t1p1"), "C": tps("t1p0")}


STICKY_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}


def test_sticky_initial_assignment_is_kafkas_documented_outcome() -> None:
    got = StickyAssignor().assign(STICKY_TOPICS, subs(list(STICKY_TOPICS), "C0", "C1", "C2"))
    assert got == {
        "C0": tps("t0p0", "t1p1", "t3p0"),
        "C1": tps("t0p1", "t2p0", "t3p1"),
        "C2": tps("t1p0", "t2p1"),
    }


@pytest.mark.parametrize("carrier", ["user_data", "owned_partitions"])
def test_sticky_keeps_everything_when_c1_leaves(carrier: str) -> None:
    """C0 and C2 keep every partition they had and split C1's, as Kafka's StickyAssignor docs show."""
    first = StickyAssignor().assign(STICKY_TOPICS, subs(list(STICKY_TOPICS), "C0", "C1", "C2"))
    survivors: dict[str, Subscription] = {}
    for m in ("C0", "C2"):
        if carrier == "user_data":  # how Java's and librdkafka's sticky assignor report it
            survivors[m] = Subscription(list(STICKY_TOPICS), user_data=encode_sticky_user_data(first[m], 1))
        else:
            survivors[m] = Subscription(list(STICKY_TOPICS), owned_partitions=first[m], generation=1)
    got = StickyAssignor().assign(STICKY_TOPICS, survivors)
    assert got == {
        "C0": tps("t0p0", "t1p1", "t3p0", "t2p0"),
        "C2": tps("t1p0", "t2p1", "t0p1", "t3p1"),
    }


def test_sticky_ignores_claims_of_an_older_generation() -> None:
    s = {
        "A": Subscription(["t"], owned_partitions=tps("t-0", "t-1"), generation=5),
        "B": Subscription(["t"], owned_partitions=tps("t-0"), generation=3),  # stale claim
    }
    got = StickyAssignor().assign({"t": 2}, s)
    assert sorted(got["A"] + got["B"]) == tps("t-0", "t-1") and len(got["A"]) == len(got["B"]) == 1
    assert TP("t", 0) in got["A"] or TP("t", 1) in got["A"]


def test_sticky_balances_unequal_subscriptions() -> None:
    s = {
        "A": Subscription(["x", "y"], owned_partitions=tps("x-0", "x-1", "x-2", "y-0"), generation=1),
        "B": Subscription(["y"]),
    }
    got = StickyAssignor().assign({"x": 3, "y": 3}, s)
    assert sorted(got["A"]) == tps("x-0", "x-1", "x-2") and sorted(got["B"]) == tps("y-0", "y-1", "y-2")


def test_cooperative_sticky_never_moves_a_partition_in_one_step() -> None:
    """A joiner: owners first give up the partitions that move (round 1), the joiner gets them in round 2."""
    first = CooperativeStickyAssignor().assign(STICKY_TOPICS, subs(list(STICKY_TOPICS), "C0", "C1", "C2"))
    round1_subs = {
        m: Subscription(list(STICKY_TOPICS), owned_partitions=first[m], generation=1)
        for m in ("C0", "C1", "C2")
    }
    round1_subs["C3"] = Subscription(list(STICKY_TOPICS))
    round1 = CooperativeStickyAssignor().assign(STICKY_TOPICS, round1_subs)
    for m in ("C0", "C1", "C2"):
        assert set(round1[m]) <= set(first[m])  # nobody gains a partition someone else still owns
    assert round1["C3"] == []
    revoked = {tp for m in ("C0", "C1", "C2") for tp in set(first[m]) - set(round1[m])}
    assert len(revoked) == 2  # 8 partitions over 4 members: 2 move, 6 stay put
    round2_subs = {
        m: Subscription(list(STICKY_TOPICS), owned_partitions=round1[m], generation=2) for m in round1
    }
    round2 = CooperativeStickyAssignor().assign(STICKY_TOPICS, round2_subs)
    assert set(round2["C3"]) == revoked
    for m in ("C0", "C1", "C2"):
        assert round2[m] == round1[m]


# -- consumer protocol encoding ------------------------------------------------------------------------


def test_subscription_round_trip_and_versions() -> None:
    data = encode_subscription(["b", "a"], b"ud", tps("a-1", "b-0"), 7)
    sub = decode_subscription(data)
    assert (sub.version, sub.topics, sub.user_data, sub.owned_partitions, sub.generation) == (
        2,
        ["a", "b"],
        b"ud",
        tps("a-1", "b-0"),
        7,
    )
    v0 = decode_subscription(encode_subscription(["t"], None, version=0))
    assert (v0.version, v0.topics, v0.user_data, v0.owned_partitions) == (0, ["t"], None, [])
    # A newer version with a field we do not know (v3 rack id) still parses.
    v3 = decode_subscription(encode_subscription(["t"], None, tps("t-0"), 3, version=3) + b"\x00\x00future")
    assert v3.topics == ["t"] and v3.generation == 3


def test_subscription_matches_kafka_python_encoding() -> None:
    """kafka-python's own ConsumerProtocolSubscription class reads our bytes and we read its bytes."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KPSub

    ours = encode_subscription(["t1", "t2"], b"x", tps("t1-0"), 4, version=2)
    theirs = KPSub.decode(ours)
    assert list(theirs.topics) == ["t1", "t2"] and theirs.user_data == b"x"
    assert [(o.topic, list(o.partitions)) for o in theirs.owned_partitions] == [("t1", [0])]
    assert theirs.generation_id == 4
    back = decode_subscription(
        KPSub(topics=["z"], user_data=None, owned_partitions=[], version=1).encode(version=1)
    )
    assert back.topics == ["z"] and back.version == 1


def test_assignment_round_trip_and_empty() -> None:
    a = decode_assignment(encode_assignment(tps("b-2", "a-0", "a-1"), b"u"))
    assert sorted(a.partitions) == tps("a-0", "a-1", "b-2") and a.user_data == b"u"
    assert decode_assignment(b"").partitions == []
    assert decode_sticky_user_data(encode_sticky_user_data(tps("t-1"), 9)) == (tps("t-1"), 9)
