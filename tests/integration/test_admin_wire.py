"""DescribeCluster, DescribeLogDirs, OffsetDelete, DescribeProducers and ApiVersions features on the
wire: the error answers real admin clients rarely provoke (tests/compat/test_admin_apis.py has the
clients themselves)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol.errors import ErrorCode
from protocol.member_data import encode_subscription
from tests.broker_process import BrokerProcess
from tests.integration.test_groups_wire import create_topic, join_body, sync_body
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

E = ErrorCode
INT32_MIN = -(2**31)


def test_describe_cluster_endpoint_types(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        for version in (0, 1):
            r = c.request(60, version, {"include_cluster_authorized_operations": False, "endpoint_type": 1})
            assert (r.error_code, r.controller_id, r.cluster_authorized_operations) == (0, 0, INT32_MIN)
            assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.1", broker.port)]
        asked = c.request(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1})
        assert asked.cluster_authorized_operations > 0
        controllers = c.request(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 2})
        assert (controllers.error_code, controllers.brokers) == (E.MISMATCHED_ENDPOINT_TYPE, [])
        other = c.request(60, 1, {"include_cluster_authorized_operations": False, "endpoint_type": 9})
        assert other.error_code == E.UNSUPPORTED_ENDPOINT_TYPE and other.error_message


def test_describe_log_dirs_every_version(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "ld", 2)
        for version in range(5):
            every = c.request(35, version, {"topics": None})
            (result,) = every.results
            assert result.error_code == 0 and Path(result.log_dir) == broker.data_dir.resolve()
            assert {(t.name, p.partition_index) for t in result.topics for p in t.partitions} >= {
                ("ld", 0),
                ("ld", 1),
            }
            if version >= 4:
                assert result.total_bytes >= result.usable_bytes > 0
        some = c.request(
            35, 4, {"topics": [{"topic": "ld", "partitions": [1, 7]}, {"topic": "nope", "partitions": [0]}]}
        )
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in some.results[0].topics] == [
            ("ld", [1])
        ]


def offset_delete(c: RawClient, group: str, tps: dict[str, list[int]]) -> Any:
    body = {
        "group_id": group,
        "topics": [{"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in tps.items()],
    }
    return c.request(47, 0, body)


def codes(resp: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def commit(
    c: RawClient, group: str, tps: list[tuple[str, int]], generation: int = -1, member: str = ""
) -> None:
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "topics": [
            {
                "name": t,
                "partitions": [{"partition_index": p, "committed_offset": 1, "committed_metadata": ""}],
            }
            for t, p in tps
        ],
    }
    assert all(p.error_code == 0 for t in c.request(8, 8, body).topics for p in t.partitions)


def committed(c: RawClient, group: str) -> set[tuple[str, int]]:
    r = c.request(9, 8, {"groups": [{"group_id": group, "topics": None}], "require_stable": False})
    return {(t.name, p.partition_index) for g in r.groups for t in g.topics for p in t.partitions}


def test_offset_delete_rules(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "a", 2)
        create_topic(c, "b", 1)
        commit(c, "empty", [("a", 0), ("a", 1), ("b", 0)])
        r = offset_delete(c, "empty", {"a": [0, 5], "nope": [0]})
        assert r.error_code == 0
        assert codes(r) == {
            ("a", 0): 0,
            ("a", 5): E.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert committed(c, "empty") == {("a", 1), ("b", 0)}
        assert offset_delete(c, "missing", {"a": [0]}).error_code == E.GROUP_ID_NOT_FOUND

        # A consumer group with a member subscribed to "a": its offsets of "a" stay.
        sub = encode_subscription(["a"])
        joined = c.request(11, 5, join_body("live", protocols=(("range", sub),)))
        if joined.error_code == E.MEMBER_ID_REQUIRED:
            joined = c.request(11, 5, join_body("live", joined.member_id, protocols=(("range", sub),)))
        assert joined.error_code == 0
        member = joined.member_id
        assert (
            c.request(14, 3, sync_body("live", joined.generation_id, member, {member: b""})).error_code == 0
        )
        commit(c, "live", [("a", 0), ("b", 0)], joined.generation_id, joined.member_id)
        r = offset_delete(c, "live", {"a": [0], "b": [0]})
        assert (r.error_code, codes(r)) == (0, {("a", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("b", 0): 0})
        assert committed(c, "live") == {("a", 0)}

        # A group of another protocol type with members: NON_EMPTY_GROUP.
        connect = {**join_body("worker"), "protocol_type": "connect"}
        joined = c.request(11, 5, connect)
        if joined.error_code == E.MEMBER_ID_REQUIRED:
            joined = c.request(11, 5, {**connect, "member_id": joined.member_id})
        assert joined.error_code == 0
        r = offset_delete(c, "worker", {"a": [0]})
        assert (r.error_code, r.topics) == (E.NON_EMPTY_GROUP, [])
    # The tombstones are durable.
    broker.stop()
    broker.start()
    with RawClient(broker.port) as c:
        assert committed(c, "empty") == {("a", 1), ("b", 0)}


def test_describe_producers_errors(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "dp", 1)
        r = c.request(
            61,
            0,
            {
                "topics": [
                    {"name": "dp", "partition_indexes": [0, 3]},
                    {"name": "nope", "partition_indexes": [0]},
                ]
            },
        )
        answers = [
            (t.name, p.partition_index, p.error_code, p.active_producers)
            for t in r.topics
            for p in t.partitions
        ]
        assert answers == [
            ("dp", 0, 0, []),
            ("dp", 3, E.UNKNOWN_TOPIC_OR_PARTITION, []),
            ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION, []),
        ]


def test_api_versions_features_from_v3(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        old = c.request(18, 2, {})
        assert old.error_code == 0
        new = c.request(18, 4, {"client_software_name": "t", "client_software_version": "1"})
        supported = {f.name: (f.min_version, f.max_version) for f in new.supported_features}
        finalized = {f.name: f.max_version_level for f in new.finalized_features}
        assert supported["metadata.version"] == (7, 27) and finalized["metadata.version"] == 27
        assert supported["transaction.version"] == (0, 2) and finalized["transaction.version"] == 2
        assert new.finalized_features_epoch == 0
        # below v4 a supported feature with minimum 0 is left out, as Kafka does (KAFKA-17492)
        v3 = c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert [f.name for f in v3.supported_features] == ["metadata.version"]
        assert {f.name: f.max_version_level for f in v3.finalized_features} == finalized
