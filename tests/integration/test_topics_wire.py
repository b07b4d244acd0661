"""Topic IDs on the wire: Metadata v6-12, CreateTopics v5-7, DeleteTopics v4-6 against a broker process."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from protocol.errors import ErrorCode
from storage import topic_ids
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

E = ErrorCode
ZERO = uuid.UUID(int=0)
# Kafka 4's AclOperation codes a topic supports (READ..ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS), and the
# cluster's (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE).
TOPIC_OPS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def create(c: RawClient, name: str, partitions: int = 1, version: int = 7, **kw: Any) -> Any:
    topic = {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": []}
    topic["configs"] = [{"name": k, "value": v} for k, v in kw.pop("configs", {}).items()]
    body = {"topics": [topic], "timeout_ms": 5000, **kw}
    return c.request(19, version, body).topics[0]


def metadata(c: RawClient, version: int, topics: list[dict[str, Any]] | None, **kw: Any) -> Any:
    body: dict[str, Any] = {"topics": topics, "allow_auto_topic_creation": False, **kw}
    return c.request(3, version, body)


def test_create_topics_v7_answers_id_and_description(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        made = create(c, "orders", 3, configs={"retention.ms": "1234"})
        assert (made.error_code, made.num_partitions, made.replication_factor) == (0, 3, 1)
        assert made.topic_id != ZERO
        configs = {cfg.name: cfg for cfg in made.configs}
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("1234", 1)
        assert (configs["segment.bytes"].config_source, configs["cleanup.policy"].value) == (5, "delete")
        # The ID is the one kept on disk, in Kafka's partition.metadata format.
        for p in range(3):
            text = (broker.data_dir / f"orders-{p}" / "partition.metadata").read_text()
            assert text == f"version: 0\ntopic_id: {topic_ids.to_text(made.topic_id)}"
        checked = create(c, "dry", 2, validate_only=True)
        assert (checked.error_code, checked.topic_id, checked.num_partitions) == (0, ZERO, 2)
        assert checked.configs and not (broker.data_dir / "dry-0").exists()
        again = create(c, "orders", 1)
        assert (again.error_code, again.topic_id, again.num_partitions, again.configs) == (
            E.TOPIC_ALREADY_EXISTS,
            ZERO,
            -1,
            [],
        )
        for version in (5, 6):
            v = create(c, f"v{version}", 1, version=version)
            assert v.error_code == 0 and v.num_partitions == 1 and v.configs


def test_metadata_by_name_and_by_id(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        made = create(c, "t", 2)
        for version in range(10, 13):
            m = metadata(c, version, [{"name": "t"}])
            assert [(t.name, t.topic_id, t.error_code) for t in m.topics] == [("t", made.topic_id, 0)]
            assert [(p.partition_index, p.leader_id, p.leader_epoch) for p in m.topics[0].partitions] == [
                (0, 0, 0),
                (1, 0, 0),
            ]
        by_id = metadata(c, 12, [{"topic_id": made.topic_id, "name": None}])
        assert [(t.name, t.topic_id, len(t.partitions)) for t in by_id.topics] == [("t", made.topic_id, 2)]
        unknown = uuid.uuid4()
        m = metadata(c, 12, [{"topic_id": unknown, "name": None}, {"topic_id": made.topic_id, "name": None}])
        assert [(t.error_code, t.name, t.topic_id) for t in m.topics] == [
            (E.UNKNOWN_TOPIC_ID, None, unknown),
            (0, "t", made.topic_id),
        ]
        # v10-11 know topic IDs in answers only: an ID or a null name in the request is invalid.
        for version in (10, 11):
            m = metadata(c, version, [{"topic_id": made.topic_id, "name": "t"}])
            assert [t.error_code for t in m.topics] == [E.INVALID_REQUEST]
            m = metadata(c, version, [{"name": None}])
            assert [t.error_code for t in m.topics] == [E.INVALID_REQUEST]
        # Deleted and created again: a new ID, and the old one is unknown.
        c.request(20, 6, {"topics": [{"name": "t", "topic_id": ZERO}], "timeout_ms": 5000})
        remade = create(c, "t", 1)
        assert remade.topic_id not in (ZERO, made.topic_id)
        m = metadata(c, 12, [{"topic_id": made.topic_id, "name": None}])
        assert [(t.error_code, t.name) for t in m.topics] == [(E.UNKNOWN_TOPIC_ID, None)]
        m = metadata(c, 12, None)
        assert {t.name: t.topic_id for t in m.topics}["t"] == remade.topic_id


def test_metadata_authorized_operations_and_old_versions(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create(c, "t", 1)
        for version in range(8, 13):
            asked = metadata(
                c,
                version,
                [{"name": "t"}, {"name": "missing"}],
                include_topic_authorized_operations=True,
                include_cluster_authorized_operations=True,
            )
            assert [(t.name, t.error_code) for t in asked.topics] == [
                ("t", 0),
                ("missing", E.UNKNOWN_TOPIC_OR_PARTITION),
            ]
            assert asked.topics[0].topic_authorized_operations == TOPIC_OPS
            if version <= 10:
                assert asked.cluster_authorized_operations == CLUSTER_OPS
            plain = metadata(c, version, [{"name": "t"}])
            assert plain.topics[0].topic_authorized_operations == -(2**31)
        # Every version describes the same topic; v1+ mark the internal one.
        for version in range(0, 13):
            m = c.request(3, version, {"topics": [{"name": "t"}]})
            assert [(t.name, t.error_code, len(t.partitions)) for t in m.topics] == [("t", 0, 1)]


def test_auto_create_over_flexible_metadata(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        m = c.request(
            3, 12, {"topics": [{"name": "auto", "topic_id": ZERO}], "allow_auto_topic_creation": True}
        )
        assert m.topics[0].error_code == 0 and m.topics[0].topic_id != ZERO
        assert (broker.data_dir / "auto-0" / "partition.metadata").exists()


def test_delete_topics_by_id_and_by_name(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        a = create(c, "a", 1).topic_id
        b = create(c, "b", 2).topic_id
        create(c, "c", 1)
        unknown = uuid.uuid4()
        resp = c.request(
            20,
            6,
            {
                "topics": [
                    {"name": None, "topic_id": a},
                    {"name": "b", "topic_id": ZERO},
                    {"name": None, "topic_id": unknown},
                    {"name": "nope", "topic_id": ZERO},
                    {"name": "c", "topic_id": b},
                    {"name": None, "topic_id": ZERO},
                    {"name": "__consumer_offsets", "topic_id": ZERO},
                ],
                "timeout_ms": 5000,
            },
        )
        assert [(r.name, r.topic_id, r.error_code) for r in resp.responses] == [
            ("a", a, 0),
            ("b", b, 0),  # by name: the answer carries the ID
            (None, unknown, E.UNKNOWN_TOPIC_ID),
            ("nope", ZERO, E.UNKNOWN_TOPIC_OR_PARTITION),
            ("c", b, E.INVALID_REQUEST),  # a name and an ID
            (None, ZERO, E.INVALID_REQUEST),  # neither
            ("__consumer_offsets", ZERO, E.INVALID_REQUEST),
        ]
        assert resp.responses[2].error_message
        assert not (broker.data_dir / "a-0").exists() and not (broker.data_dir / "b-1").exists()
        assert (broker.data_dir / "c-0").exists()
        dup = c.request(20, 6, {"topics": [{"name": "c", "topic_id": ZERO}] * 2, "timeout_ms": 5000})
        assert [r.error_code for r in dup.responses] == [E.INVALID_REQUEST] * 2
        for version in (4, 5):
            create(c, f"old{version}", 1)
            old = c.request(20, version, {"topic_names": [f"old{version}"], "timeout_ms": 5000})
            assert [(r.name, r.error_code) for r in old.responses] == [(f"old{version}", 0)]


def test_topic_ids_survive_a_restart(tmp_path) -> None:
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(proc.port) as c:
            made = create(c, "kept", 2).topic_id
        assert proc.stop() == 0
        proc.start()
        with RawClient(proc.port) as c:
            m = metadata(c, 12, [{"topic_id": made, "name": None}])
            assert [(t.name, t.error_code) for t in m.topics] == [("kept", 0)]
    finally:
        assert proc.stop() == 0, proc.log()
