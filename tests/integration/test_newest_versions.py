"""The newest versions of ListOffsets, the offset and membership group APIs, configs, the
smaller admin APIs and those Kafka 4.0/4.1 added, against a broker process, with the
behaviour each version adds.

Raw sockets with our own encoder; the layouts themselves are checked against Kafka's JSON
in tests/unit/test_vectors.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.member_data import encode_subscription
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.integration.test_groups_wire import create_topic, join_body, sync_body
from tests.integration.test_wire import produce
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

E = ErrorCode
NOW = 1_700_000_000_000


def list_offsets(
    c: RawClient, version: int, queries: list[tuple[str, int, int]], leader_epoch: int = -1, replica: int = -1
) -> list[tuple[int, int, int, int]]:
    """(error, timestamp, offset, leader_epoch) per (topic, partition, timestamp) asked, in one request."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, timestamp in queries:
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "current_leader_epoch": leader_epoch, "timestamp": timestamp}
        )
    body = {
        "replica_id": replica,
        "isolation_level": 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        "timeout_ms": 1000,
    }
    resp = c.request(2, version, body)
    return [
        (p.error_code, p.timestamp, p.offset, p.leader_epoch if version >= 4 else -1)
        for t in resp.topics
        for p in t.partitions
    ]


def stamped(*timestamps: int) -> bytes:
    """One batch whose records carry these absolute timestamps."""
    base = min(timestamps)
    return build_batch(
        [Record(i, ts - base, b"k", b"v%d" % i) for i, ts in enumerate(timestamps)], base_timestamp=base
    )


def test_list_offsets_special_timestamps_and_epochs(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "lo", 2)
        assert produce(c, "lo", stamped(NOW + 5, NOW + 9, NOW + 2)).error_code == 0
        assert produce(c, "lo", stamped(NOW + 9, NOW + 1)).error_code == 0  # ties: the first record wins
        assert produce(c, "lo", stamped(NOW + 3)).error_code == 0
        asked = [
            ("lo", 0, -1),  # latest
            ("lo", 0, -2),  # earliest
            ("lo", 0, -3),  # max timestamp
            ("lo", 0, -4),  # earliest local
            ("lo", 0, -5),  # latest tiered: no tiered storage
            ("lo", 0, NOW + 6),
            ("lo", 0, NOW + 10),
            ("lo", 1, -3),  # empty partition
        ]
        assert [list_offsets(c, 10, [q])[0] for q in asked] == [
            (0, -1, 6, 0),
            (0, -1, 0, 0),
            (0, NOW + 9, 1, 0),
            (0, -1, 0, 0),
            (0, -1, -1, -1),
            (0, NOW + 9, 1, 0),
            (0, -1, -1, -1),
            (0, -1, -1, -1),
        ]
        for version in range(1, 10):
            got = [list_offsets(c, version, [q])[0] for q in (("lo", 0, -1), ("lo", 0, NOW + 6))]
            assert [(e, ts, o) for e, ts, o, _ in got] == [(0, -1, 6), (0, NOW + 9, 1)]
        # Fencing by the caller's idea of the leader epoch (v4+).
        assert list_offsets(c, 10, [("lo", 0, -1)], leader_epoch=0)[0][0] == 0
        assert list_offsets(c, 10, [("lo", 0, -1)], leader_epoch=3)[0][0] == E.UNKNOWN_LEADER_EPOCH
        assert list_offsets(c, 3, [("lo", 0, -1)], leader_epoch=3)[0][0] == 0  # not a v3 field
        # A replica asking for latest gets the log end offset; a partition named twice is invalid.
        assert list_offsets(c, 10, [("lo", 0, -1)], replica=7)[0][:3] == (0, -1, 6)
        assert [r[0] for r in list_offsets(c, 10, [("lo", 0, -1), ("lo", 0, -2), ("lo", 1, -1)])] == [
            E.INVALID_REQUEST,
            E.INVALID_REQUEST,
            0,
        ]
        assert list_offsets(c, 10, [("lo", 0, -9), ("lo", 5, -1), ("nope", 0, -1)]) == [
            (E.INVALID_REQUEST, -1, -1, -1),
            (E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1),
            (E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1),
        ]


def commit(
    c: RawClient, version: int, group: str, offsets: dict[int, tuple[int, int]], **kw: Any
) -> list[int]:
    """Commit {partition: (offset, leader_epoch)} of topic "g"; the per-partition codes."""
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": kw.get("generation", -1),
        "member_id": kw.get("member_id", ""),
        "group_instance_id": kw.get("instance"),
        "retention_time_ms": -1,
        "topics": [
            {
                "name": "g",
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": o,
                        "committed_leader_epoch": e,
                        "committed_metadata": "m",
                    }
                    for p, (o, e) in offsets.items()
                ],
            }
        ],
    }
    return [p.error_code for t in c.request(8, version, body).topics for p in t.partitions]


def test_offset_commit_and_fetch_newest_versions(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "g", 3)
        assert commit(c, 9, "alone", {0: (5, 2), 1: (7, 3)}) == [0, 0]
        assert commit(c, 8, "other", {2: (11, -1)}) == [0]
        # A member of a group that does not exist: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before.
        assert commit(c, 9, "ghost", {0: (1, -1)}, generation=3, member_id="m") == [E.GROUP_ID_NOT_FOUND]
        assert commit(c, 8, "ghost", {0: (1, -1)}, generation=3, member_id="m") == [E.ILLEGAL_GENERATION]
        groups = [
            {"group_id": "alone", "member_id": None, "member_epoch": -1, "topics": None},
            {
                "group_id": "other",
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": "g", "partition_indexes": [2, 0]}],
            },
            {"group_id": "", "member_id": None, "member_epoch": -1, "topics": None},
        ]
        for version in (8, 9):
            resp = c.request(9, version, {"groups": groups, "require_stable": True})
            answer = {
                g.group_id: (
                    g.error_code,
                    [
                        (t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                        for t in g.topics
                        for p in t.partitions
                    ],
                )
                for g in resp.groups
            }
            assert answer == {
                "alone": (0, [("g", 0, 5, 2, "m"), ("g", 1, 7, 3, "m")]),
                "other": (0, [("g", 2, 11, -1, "m"), ("g", 0, -1, -1, "")]),
                "": (0, []),
            }
        for version in (5, 6, 7):
            resp = c.request(9, version, {"group_id": "alone", "topics": None, "require_stable": False})
            assert [
                (p.committed_offset, p.committed_leader_epoch) for t in resp.topics for p in t.partitions
            ] == [
                (5, 2),
                (7, 3),
            ]


def test_join_v9_leave_v5_batches_static_and_dynamic_members(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as a, RawClient(broker.port) as b:
        first = a.request(11, 9, {**join_body("lg", instance="i-1"), "reason": "starting up"})
        assert first.error_code == 0
        assert (first.protocol_type, first.protocol_name, first.skip_assignment) == (
            "consumer",
            "range",
            False,
        )
        synced = a.request(
            14,
            5,
            {
                **sync_body("lg", first.generation_id, first.member_id, {first.member_id: b"A"}),
                "protocol_type": "consumer",
                "protocol_name": "range",
            },
        )
        assert synced.error_code == 0
        # A dynamic member: v9 answers MEMBER_ID_REQUIRED first, with no protocol type.
        need = b.request(11, 9, {**join_body("lg"), "reason": None})
        assert (need.error_code, need.protocol_type) == (E.MEMBER_ID_REQUIRED, None)
        dynamic = need.member_id
        leave = {
            "group_id": "lg",
            "members": [
                {"member_id": "someone-else", "group_instance_id": "i-1", "reason": "bye"},
                {"member_id": "", "group_instance_id": "i-404", "reason": None},
                {"member_id": dynamic, "group_instance_id": None, "reason": "done"},
                {"member_id": "", "group_instance_id": "i-1", "reason": "done"},
            ],
        }
        resp = a.request(13, 5, leave)
        assert resp.error_code == 0
        assert [(m.member_id, m.group_instance_id, m.error_code) for m in resp.members] == [
            ("someone-else", "i-1", E.FENCED_INSTANCE_ID),
            ("", "i-404", E.UNKNOWN_MEMBER_ID),
            (dynamic, None, 0),  # still pending (it never joined with its id): forgotten
            ("", "i-1", 0),
        ]
        group = a.request(15, 5, {"groups": ["lg"], "include_authorized_operations": False}).groups[0]
        assert (group.group_state, group.members) == ("Empty", [])
        unknown = a.request(
            13, 4, {"group_id": "never", "members": [{"member_id": "x", "group_instance_id": None}]}
        )
        assert (unknown.error_code, unknown.members) == (E.UNKNOWN_MEMBER_ID, [])
        assert a.request(13, 2, {"group_id": "lg", "member_id": "x"}).error_code == E.UNKNOWN_MEMBER_ID
    assert "client reason: starting up" in broker.log()


def test_describe_configs_v0_to_v4(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "cfg", 1)
        alter = {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "cfg",
                    "configs": [{"name": "retention.ms", "value": "99"}],
                }
            ],
            "validate_only": False,
        }
        assert c.request(33, 2, alter).responses[0].error_code == 0

        def described(version: int, documentation: bool = False) -> dict[str, Any]:
            body = {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "cfg",
                        "configuration_keys": ["retention.ms", "cleanup.policy", "min.cleanable.dirty.ratio"],
                    }
                ],
                "include_synonyms": True,
                "include_documentation": documentation,
            }
            result = c.request(32, version, body).results[0]
            assert result.error_code == 0
            return {cfg.name: cfg for cfg in result.configs}

        v0 = described(0)
        assert (v0["retention.ms"].value, v0["retention.ms"].is_default, v0["cleanup.policy"].is_default) == (
            "99",
            False,
            True,
        )
        v4 = described(4, documentation=True)
        assert [
            (v4[k].config_type, v4[k].config_source)
            for k in ("retention.ms", "cleanup.policy", "min.cleanable.dirty.ratio")
        ] == [(5, 1), (7, 5), (6, 5)]
        # The override, then the broker settings and defaults from Kafka's primary broker key on:
        # log.retention.ms is unset and null by default, so retention.ms lists no broker synonym.
        assert [(s.name, s.value, s.source) for s in v4["retention.ms"].synonyms] == [
            ("retention.ms", "99", 1)
        ]
        assert [(s.name, s.value, s.source) for s in v4["cleanup.policy"].synonyms] == [
            ("log.cleanup.policy", "delete", 5)
        ]
        assert v4["retention.ms"].documentation and described(3)["retention.ms"].documentation is None
        everything = {"resources": [{"resource_type": 2, "resource_name": "cfg", "configuration_keys": []}]}
        listed = c.request(32, 4, {**everything, "include_synonyms": False, "include_documentation": False})
        assert len(listed.results[0].configs) > 3  # an empty key list asks for all, as a null one
        assert not any(cfg.synonyms for cfg in listed.results[0].configs)  # none unless asked for
        incremental = {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "cfg",
                    "configs": [{"name": "cleanup.policy", "config_operation": 2, "value": "compact"}],
                }
            ],
            "validate_only": False,
        }
        assert c.request(44, 1, incremental).responses[0].error_code == 0
        assert set(described(4)["cleanup.policy"].value.split(",")) == {"delete", "compact"}

        # malformed requests, as Kafka's preprocessing answers them, and nothing changes
        def answer(api: int, version: int, resources: list[dict[str, Any]]) -> list[tuple[int, str]]:
            body = {"resources": resources, "validate_only": False}
            return [(r.error_code, r.error_message) for r in c.request(api, version, body).responses]

        def op(name: str, value: str | None, operation: int = 0) -> dict[str, Any]:
            return {"name": name, "config_operation": operation, "value": value}

        cfg = {"resource_type": 2, "resource_name": "cfg"}
        assert answer(33, 2, [{**cfg, "configs": [{"name": "retention.ms", "value": None}]}]) == [
            (E.INVALID_REQUEST, "Null value not supported for : retention.ms")
        ]
        twice = [{"name": "retention.ms", "value": "5"}, {"name": "retention.ms", "value": "6"}]
        assert answer(33, 2, [{**cfg, "configs": twice}]) == [
            (E.INVALID_REQUEST, "Error due to duplicate config keys")
        ]
        assert answer(44, 1, [{**cfg, "configs": [op("retention.ms", None)]}]) == [
            (E.INVALID_REQUEST, "Null value not supported for : retention.ms")
        ]
        assert (
            answer(44, 1, [{**cfg, "configs": [op("retention.ms", "7")]}] * 2)
            == [(E.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
        )
        assert answer(44, 1, [{**cfg, "configs": [op("retention.ms", None, 1)]}]) == [(0, None)]  # DELETE
        # APPEND works on every list config, as in Kafka, not only cleanup.policy
        for replicas in ("0:0", "1:0"):
            throttled = op("leader.replication.throttled.replicas", replicas, 2)
            assert answer(44, 1, [{**cfg, "configs": [throttled]}]) == [(0, None)]
        keys = {
            "resource_type": 2,
            "resource_name": "cfg",
            "configuration_keys": ["leader.replication.throttled.replicas"],
        }
        shown = c.request(
            32, 4, {"resources": [keys], "include_synonyms": False, "include_documentation": False}
        )
        assert shown.results[0].configs[0].value == "0:0,1:0"
        assert described(4)["retention.ms"].config_source == 5


def test_small_admin_apis_newest_versions(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "adm", 1)
        grown = c.request(
            37,
            3,
            {
                "topics": [{"name": "adm", "count": 3, "assignments": None}],
                "timeout_ms": 5000,
                "validate_only": False,
            },
        )
        assert [(r.name, r.error_code) for r in grown.results] == [("adm", 0)]
        for _ in range(3):
            assert produce(c, "adm", stamped(NOW)).error_code == 0
        deleted = c.request(
            21,
            2,
            {
                "topics": [{"name": "adm", "partitions": [{"partition_index": 0, "offset": 2}]}],
                "timeout_ms": 5000,
            },
        )
        assert [
            (p.partition_index, p.low_watermark, p.error_code) for t in deleted.topics for p in t.partitions
        ] == [(0, 2, 0)]
        epochs = c.request(
            23,
            4,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": "adm",
                        "partitions": [{"partition": 0, "current_leader_epoch": 0, "leader_epoch": 0}],
                    }
                ],
            },
        )
        assert [
            (p.error_code, p.leader_epoch, p.end_offset) for t in epochs.topics for p in t.partitions
        ] == [(0, 0, 3)]
        for version in range(6):
            body = {
                "transactional_id": None,
                "transaction_timeout_ms": 1000,
                "producer_id": -1,
                "producer_epoch": -1,
            }
            got = c.request(22, version, body)
            assert (got.error_code, got.producer_epoch) == (0, 0) and got.producer_id >= 0
        half = {
            "transactional_id": None,
            "transaction_timeout_ms": 1000,
            "producer_id": 5,
            "producer_epoch": -1,
        }
        assert c.request(22, 5, half).error_code == E.INVALID_REQUEST
        assert c.request(22, 2, half).error_code == 0  # v2 has no producer id: nothing to check


def test_describe_configs_names_the_broker_key_a_value_comes_from(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A topic config whose default comes from a broker key in another unit (log.retention.hours
    for retention.ms) has that key's value, reported as Kafka reports it: ConfigHelper lists broker
    synonyms only from the primary key on (log.retention.ms, unset), so none, and source DEFAULT."""
    proc = BrokerProcess(tmp_path / "data", env={"MINIKAFKA_LOG_RETENTION_HOURS": "24"}).start()
    try:
        with RawClient(proc.port) as c:
            create_topic(c, "hours", 1)
            body = {
                "resources": [
                    {"resource_type": 2, "resource_name": "hours", "configuration_keys": ["retention.ms"]}
                ],
                "include_synonyms": True,
                "include_documentation": False,
            }
            (entry,) = c.request(32, 4, body).results[0].configs
            assert (entry.value, entry.config_source, list(entry.synonyms)) == ("86400000", 5, [])
            body["resources"][0]["configuration_keys"] = ["cleanup.policy"]
            (entry,) = c.request(32, 4, body).results[0].configs
            assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
                ("log.cleanup.policy", "delete", 5)
            ]
    finally:
        assert proc.stop() == 0, proc.log()


def _heartbeat(group: str, member: str, topic: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "member_id": member,
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 10_000,
        "subscribed_topic_names": [topic],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }


def test_versions_kafka_4_1_added(broker: BrokerProcess) -> None:
    """Metadata v13, DescribeGroups v6, ConsumerGroupDescribe v1, DescribeCluster v2 and
    ListTransactions v2 (Kafka 4.0/4.1's JSON), each with what it adds."""
    with RawClient(broker.port) as c:
        create_topic(c, "v41", 2)
        meta = c.request(3, 13, {"topics": None, "allow_auto_topic_creation": False})
        assert meta.error_code == 0 and "v41" in [t.name for t in meta.topics]

        # a consumer-protocol group with one member of each kind (the classic one joined with JoinGroup)
        assert c.request(68, 1, _heartbeat("g848", "m-consumer", "v41")).error_code == 0
        metadata = encode_subscription(["v41"], version=1)
        joined = c.request(11, 9, join_body("g848", "m-classic", protocols=(("range", metadata),)))
        assert joined.error_code == 0, joined.error_code
        described = c.request(69, 1, {"group_ids": ["g848"], "include_authorized_operations": False})
        (group,) = described.groups
        assert sorted((m.member_id, m.member_type) for m in group.members) == [
            ("m-classic", 0),
            ("m-consumer", 1),
        ]

        # DescribeGroups: v6 says why it cannot describe a group; v5 answers "Dead" and no error
        first = c.request(11, 9, join_body("classic"))
        assert first.error_code == E.MEMBER_ID_REQUIRED
        assert c.request(11, 9, join_body("classic", first.member_id)).error_code == 0
        asked = {"groups": ["nope", "g848", "classic"], "include_authorized_operations": False}
        v6 = c.request(15, 6, asked).groups
        assert [(g.error_code, g.error_message, g.group_state) for g in v6[:2]] == [
            (E.GROUP_ID_NOT_FOUND, "Group nope not found.", "Dead"),
            (E.GROUP_ID_NOT_FOUND, "Group g848 is not a classic group.", "Dead"),
        ]
        assert (v6[2].error_code, v6[2].error_message) == (0, None) and v6[2].group_state != "Dead"
        v5 = c.request(15, 5, asked).groups
        assert [(g.error_code, g.group_state) for g in v5[:2]] == [(0, "Dead"), (0, "Dead")]

        cluster = c.request(60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
        assert cluster.error_code == 0 and [b.is_fenced for b in cluster.brokers] == [False]

        ids = ["orders-1", "orders-2", "billing"]
        c.await_transaction_coordinator(*ids)
        for txn_id in ids:
            got = c.request(
                22,
                5,
                {
                    "transactional_id": txn_id,
                    "transaction_timeout_ms": 10_000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
            assert got.error_code == 0

        def listed(pattern: str | None, version: int = 2) -> tuple[int, list[str]]:
            body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
            resp = c.request(66, version, {**body, "transactional_id_pattern": pattern})
            return resp.error_code, sorted(t.transactional_id for t in resp.transaction_states)

        everyone = ["billing", "orders-1", "orders-2"]
        assert listed(None) == listed("") == listed("orders", 1) == (0, everyone)
        assert listed("orders-.*") == (0, ["orders-1", "orders-2"])
        assert listed("orders") == (0, [])  # the whole id must match
        assert listed("(") == (E.INVALID_REGULAR_EXPRESSION, [])
