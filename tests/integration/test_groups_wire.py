"""Consumer-group APIs on the wire against a broker process (raw sockets, our own encoder)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from broker.groups.hashing import partition_for
from broker.groups.records import GroupKey, OffsetKey, decode_group_value, decode_key, decode_offset_value
from protocol.errors import ErrorCode
from protocol.records import decode_batch, scan_valid_prefix
from tests.broker_process import BrokerProcess
from tests.wire import RawClient

pytestmark = pytest.mark.timeout(120)

E = ErrorCode
DELAY_ENV = {"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "100"}
SESSION = 6000


def create_topic(c: RawClient, name: str, partitions: int) -> None:
    resp = c.request(
        19,
        4,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 5000,
            "validate_only": False,
        },
    )
    assert resp.topics[0].error_code == 0


def join_body(
    group: str,
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
    session: int = SESSION,
) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": session,
        "rebalance_timeout_ms": 10_000,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": n, "metadata": m} for n, m in protocols],
    }


def sync_body(group: str, generation: int, member_id: str, assignments: dict[str, bytes]) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
    }


def commit_body(
    group: str,
    offsets: dict[tuple[str, int], int],
    generation: int = -1,
    member_id: str = "",
    metadata: str = "",
) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(
            {"partition_index": p, "committed_offset": o, "committed_metadata": metadata}
        )
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "retention_time_ms": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def commit_codes(resp: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def fetch_offsets(c: RawClient, group: str, tps: list[tuple[str, int]] | None, version: int = 3) -> Any:
    topics = None
    if tps is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    return c.request(9, version, {"group_id": group, "topics": topics})


def fetched(resp: Any) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
        for t in resp.topics
        for p in t.partitions
    }


def describe(c: RawClient, group: str, version: int = 3) -> Any:
    return c.request(15, version, {"groups": [group], "include_authorized_operations": True}).groups[0]


def join_single(c: RawClient, group: str, **kw: Any) -> Any:
    """Join as the only member with v5 and sync an assignment of b"A"; returns the join response."""
    resp = c.request(11, 5, join_body(group, **kw))
    if resp.error_code == E.MEMBER_ID_REQUIRED:
        resp = c.request(11, 5, join_body(group, resp.member_id, **kw))
    assert resp.error_code == 0, resp
    synced = c.request(14, 3, sync_body(group, resp.generation_id, resp.member_id, {resp.member_id: b"A"}))
    assert synced.error_code == 0 and synced.assignment == b"A"
    return resp


def test_find_coordinator_every_version(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        v0 = c.request(10, 0, {"key": "any-group"})
        assert (v0.error_code, v0.node_id, v0.host, v0.port) == (0, 0, "127.0.0.1", broker.port)
        for version in (1, 2):
            r = c.request(10, version, {"key": "g", "key_type": 0})
            assert (r.error_code, r.node_id, r.port, r.error_message) == (0, 0, broker.port, None)
        txn = c.request(10, 2, {"key": "txn-id", "key_type": 1})
        assert txn.error_code == 0 and txn.node_id == 0  # the transaction coordinator (issue 18)
        assert c.request(10, 2, {"key": "", "key_type": 1}).error_code == E.INVALID_REQUEST
        assert c.request(10, 1, {"key": "g", "key_type": 7}).error_code == E.INVALID_REQUEST


def test_find_coordinator_flexible_and_batched(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        v3 = c.request(10, 3, {"key": "g", "key_type": 0})
        assert (v3.error_code, v3.node_id, v3.port) == (0, 0, broker.port)
        for version in (4, 5, 6):
            r = c.request(10, version, {"key_type": 0, "coordinator_keys": ["a", "b", "c"]})
            assert [(k.key, k.error_code, k.node_id, k.port) for k in r.coordinators] == [
                (key, 0, 0, broker.port) for key in "abc"
            ]
        share = c.request(10, 6, {"key_type": 2, "coordinator_keys": ["s"]})
        assert share.coordinators[0].error_code == E.INVALID_REQUEST


def test_flexible_versions_of_the_group_apis(broker: BrokerProcess) -> None:
    """SyncGroup v4-5, Heartbeat v4, DescribeGroups v4-5, ListGroups v3-5, DeleteGroups v2."""
    with RawClient(broker.port) as c:
        joined = c.request(11, 5, join_body("flex", instance="inst-1"))
        assert joined.error_code == 0
        member = joined.member_id
        wrong = c.request(
            14,
            5,
            {
                **sync_body("flex", 1, member, {member: b"A"}),
                "protocol_type": "connect",
                "protocol_name": None,
            },
        )
        assert wrong.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        stale = c.request(
            14, 5, {**sync_body("flex", 7, member, {}), "protocol_type": "connect", "protocol_name": None}
        )
        assert stale.error_code == E.ILLEGAL_GENERATION  # the generation is checked before the protocol
        synced = c.request(
            14,
            5,
            {
                **sync_body("flex", 1, member, {member: b"A"}),
                "protocol_type": "consumer",
                "protocol_name": "range",
            },
        )
        assert (synced.error_code, synced.assignment) == (0, b"A")
        assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
        again = c.request(14, 4, sync_body("flex", 1, member, {}))
        assert (again.error_code, again.assignment) == (0, b"A")
        hb = {"group_id": "flex", "generation_id": 1, "member_id": member, "group_instance_id": "inst-1"}
        assert c.request(12, 4, hb).error_code == 0
        assert c.request(12, 4, {**hb, "generation_id": 7}).error_code == E.ILLEGAL_GENERATION
        for version in (4, 5):
            described = c.request(15, version, {"groups": ["flex"], "include_authorized_operations": False})
            group = described.groups[0]
            assert group.group_state == "Stable"
            assert [(m.member_id, m.group_instance_id) for m in group.members] == [(member, "inst-1")]
        create_topic(c, "flex-offsets", 1)
        commit = {
            "group_id": "flex-empty",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [
                {"name": "flex-offsets", "partitions": [{"partition_index": 0, "committed_offset": 3}]}
            ],
        }
        assert c.request(8, 3, commit).topics[0].partitions[0].error_code == 0

        def listed(
            version: int, states: tuple[str, ...] = (), types: tuple[str, ...] = ()
        ) -> set[tuple[str, str]]:
            r = c.request(16, version, {"states_filter": list(states), "types_filter": list(types)})
            assert r.error_code == 0
            return {(g.group_id, g.group_state if version >= 4 else "") for g in r.groups}

        assert listed(3) == {("flex", ""), ("flex-empty", "")}
        assert listed(4) == {("flex", "Stable"), ("flex-empty", "Empty")}
        assert listed(4, ("stable",)) == {("flex", "Stable")}
        assert listed(5, ("Empty",), ("Classic",)) == {("flex-empty", "Empty")}
        assert listed(5, (), ("consumer",)) == set()
        types = c.request(16, 5, {"states_filter": [], "types_filter": []})
        assert {g.group_type for g in types.groups} == {"classic"}
        deleted = c.request(42, 2, {"groups_names": ["flex-empty", "flex", "nope"]})
        assert [(r.group_id, r.error_code) for r in deleted.results] == [
            ("flex-empty", 0),
            ("flex", E.NON_EMPTY_GROUP),
            ("nope", E.GROUP_ID_NOT_FOUND),
        ]


def test_offsets_topic_is_created_compacted_and_internal(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        meta = c.request(
            3, 5, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False}
        )
        topic = meta.topics[0]
        assert topic.error_code == 0 and topic.is_internal and len(topic.partitions) == 50
        configs = c.request(
            32,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "__consumer_offsets",
                        "configuration_keys": ["cleanup.policy"],
                    }
                ],
                "include_synonyms": False,
            },
        )
        values = {e.name: e.value for e in configs.results[0].configs}
        assert values == {"cleanup.policy": "compact"}
        deleted = c.request(20, 3, {"topic_names": ["__consumer_offsets"], "timeout_ms": 1000})
        assert deleted.responses[0].error_code == E.INVALID_REQUEST


def test_join_sync_heartbeat_leave_v0_to_v5(broker: BrokerProcess) -> None:
    """Every JoinGroup/SyncGroup/Heartbeat/LeaveGroup version in a one-member group."""
    with RawClient(broker.port) as c:
        for version in range(6):
            group = f"g-v{version}"
            body = join_body(group)
            resp = c.request(11, version, body)
            if version >= 4:
                # v4+: a new dynamic member first gets its id, then rejoins with it
                assert resp.error_code == E.MEMBER_ID_REQUIRED and resp.member_id
                resp = c.request(11, version, join_body(group, resp.member_id))
            assert resp.error_code == 0, (version, resp)
            assert resp.generation_id == 1 and resp.leader == resp.member_id and resp.protocol_name == "range"
            assert [m.member_id for m in resp.members] == [resp.member_id]
            assert resp.members[0].metadata == b"sub"
            sync_version = min(version, 3)
            synced = c.request(
                14, sync_version, sync_body(group, 1, resp.member_id, {resp.member_id: b"asg"})
            )
            assert (synced.error_code, synced.assignment) == (0, b"asg")
            hb_version = min(version, 3)
            hb = {
                "group_id": group,
                "generation_id": 1,
                "member_id": resp.member_id,
                "group_instance_id": None,
            }
            assert c.request(12, hb_version, hb).error_code == 0
            assert c.request(12, hb_version, {**hb, "generation_id": 0}).error_code == E.ILLEGAL_GENERATION
            assert c.request(12, hb_version, {**hb, "member_id": "x"}).error_code == E.UNKNOWN_MEMBER_ID
            leave = c.request(13, min(version, 1), {"group_id": group, "member_id": resp.member_id})
            assert leave.error_code == 0
            assert describe(c, group).group_state == "Empty"


def test_join_waits_for_the_rebalance_while_other_requests_flow(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as a, RawClient(broker.port) as b, RawClient(broker.port) as other:
        first = join_single(a, "g")
        # b joins: a rebalance starts and b's JoinGroup waits for a to rejoin
        b_cid = b.send(11, 3, join_body("g"))
        deadline = time.monotonic() + 10
        while True:
            hb = a.request(
                12,
                3,
                {
                    "group_id": "g",
                    "generation_id": 1,
                    "member_id": first.member_id,
                    "group_instance_id": None,
                },
            )
            if hb.error_code == E.REBALANCE_IN_PROGRESS:
                break
            assert hb.error_code == 0 and time.monotonic() < deadline
            time.sleep(0.05)
        # meanwhile every other connection is served
        assert other.request(18, 2, {}).error_code == 0
        assert describe(other, "g").group_state == "PreparingRebalance"
        # and the waiting connection itself still processes pipelined requests, answered in order
        api_cid = b.send(18, 2, {})
        a_join = a.request(11, 3, join_body("g", first.member_id))
        b_join = b.recv(11, 3, b_cid)
        assert b.recv(18, 2, api_cid).error_code == 0
        assert a_join.generation_id == b_join.generation_id == 2
        assert a_join.leader == first.member_id and len(a_join.members) == 2 and b_join.members == []
        b_sync = b.send(14, 3, sync_body("g", 2, b_join.member_id, {}))
        a_sync = a.request(
            14, 3, sync_body("g", 2, a_join.member_id, {a_join.member_id: b"0", b_join.member_id: b"1"})
        )
        assert a_sync.assignment == b"0" and b.recv(14, 3, b_sync).assignment == b"1"
        d = describe(other, "g")
        assert d.group_state == "Stable" and d.protocol_type == "consumer" and d.protocol_data == "range"
        assert {(m.member_id, m.member_assignment, m.client_id, m.client_host) for m in d.members} == {
            (a_join.member_id, b"0", "raw", "/127.0.0.1"),
            (b_join.member_id, b"1", "raw", "/127.0.0.1"),
        }
        # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: Kafka 4's operations on a group
        assert d.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
        listed = other.request(16, 2, {})
        assert listed.error_code == 0 and [(g.group_id, g.protocol_type) for g in listed.groups] == [
            ("g", "consumer")
        ]


def test_protocol_vote_and_inconsistent_protocols(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as a, RawClient(broker.port) as b, RawClient(broker.port) as c:
        a_cid = a.send(11, 3, join_body("vote", protocols=(("roundrobin", b"rr"), ("range", b"rg"))))
        b_cid = b.send(11, 3, join_body("vote", protocols=(("range", b"rg"), ("roundrobin", b"rr"))))
        time.sleep(0.05)
        c_resp = c.request(11, 3, join_body("vote", protocols=(("sticky", b"st"),)))
        assert c_resp.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        c_cid = c.send(11, 3, join_body("vote", protocols=(("cooperative", b""), ("range", b"rg"))))
        results = [a.recv(11, 3, a_cid), b.recv(11, 3, b_cid), c.recv(11, 3, c_cid)]
        assert {r.protocol_name for r in results} == {"range"}  # two votes against one
        leader = next(r for r in results if r.members)
        assert {m.metadata for m in leader.members} == {b"rg"}


def test_static_membership_v5(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as a, RawClient(broker.port) as b:
        a_cid = a.send(11, 5, join_body("static", instance="ia"))
        b_resp = b.request(11, 5, join_body("static", instance="ib"))
        a_resp = a.recv(11, 5, a_cid)
        assert a_resp.error_code == b_resp.error_code == 0  # static members never get MEMBER_ID_REQUIRED
        leader, follower = (a_resp, b_resp) if a_resp.members else (b_resp, a_resp)
        assert {(m.member_id, m.group_instance_id) for m in leader.members} == {
            (a_resp.member_id, "ia"),
            (b_resp.member_id, "ib"),
        }
        f_cid = (b if follower is b_resp else a).send(14, 3, sync_body("static", 1, follower.member_id, {}))
        lc = a if leader is a_resp else b
        lc.request(
            14,
            3,
            sync_body("static", 1, leader.member_id, {follower.member_id: b"F", leader.member_id: b"L"}),
        )
        assert (b if follower is b_resp else a).recv(14, 3, f_cid).assignment == b"F"
    with RawClient(broker.port) as again:
        # the follower's process restarted: same instance id, no member id
        instance = "ib" if follower is b_resp else "ia"
        rejoined = again.request(11, 5, join_body("static", instance=instance))
        assert (
            rejoined.error_code == 0
            and rejoined.generation_id == 1
            and rejoined.member_id != follower.member_id
        )
        assert rejoined.leader == leader.member_id and rejoined.members == []
        synced = again.request(
            14, 3, {**sync_body("static", 1, rejoined.member_id, {}), "group_instance_id": instance}
        )
        assert synced.assignment == b"F"
        stale = {
            "group_id": "static",
            "generation_id": 1,
            "member_id": follower.member_id,
            "group_instance_id": instance,
        }
        assert again.request(12, 3, stale).error_code == E.FENCED_INSTANCE_ID
        assert again.request(
            11, 5, join_body("static", follower.member_id, instance=instance)
        ).error_code == (E.FENCED_INSTANCE_ID)
        assert describe(again, "static").group_state == "Stable"


def test_offset_commit_and_fetch(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "t", 3)
        resp = c.request(
            8, 3, commit_body("solo", {("t", 0): 5, ("t", 1): 9, ("t", 7): 1, ("nope", 0): 1}, metadata="md")
        )
        assert commit_codes(resp) == {
            ("t", 0): 0,
            ("t", 1): 0,
            ("t", 7): E.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        }
        too_long = c.request(8, 2, commit_body("solo", {("t", 2): 1}, metadata="m" * 4097))
        assert commit_codes(too_long) == {("t", 2): E.OFFSET_METADATA_TOO_LARGE}
        for version in (1, 2, 3):
            got = fetched(fetch_offsets(c, "solo", [("t", 0), ("t", 1), ("t", 2), ("other", 4)], version))
            assert got == {
                ("t", 0): (5, "md", 0),
                ("t", 1): (9, "md", 0),
                ("t", 2): (-1, "", 0),
                ("other", 4): (-1, "", 0),
            }
        everything = fetch_offsets(c, "solo", None, 2)
        assert everything.error_code == 0 and fetched(everything) == {
            ("t", 0): (5, "md", 0),
            ("t", 1): (9, "md", 0),
        }
        assert fetched(fetch_offsets(c, "unknown-group", None)) == {}
        # an active group refuses commits from outsiders and stale generations
        member = join_single(c, "active")
        assert commit_codes(c.request(8, 3, commit_body("active", {("t", 0): 1}))) == {
            ("t", 0): E.UNKNOWN_MEMBER_ID
        }
        stale = commit_body("active", {("t", 0): 1}, generation=0, member_id=member.member_id)
        assert commit_codes(c.request(8, 3, stale)) == {("t", 0): E.ILLEGAL_GENERATION}
        ok = commit_body("active", {("t", 0): 3}, generation=1, member_id=member.member_id)
        assert commit_codes(c.request(8, 3, ok)) == {("t", 0): 0}
        assert fetched(fetch_offsets(c, "active", [("t", 0)]))[("t", 0)][0] == 3
        gone = commit_body("never-joined", {("t", 0): 1}, generation=4, member_id="m")
        assert commit_codes(c.request(8, 3, gone)) == {("t", 0): E.ILLEGAL_GENERATION}


def test_delete_groups(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "t", 1)
        c.request(8, 3, commit_body("idle", {("t", 0): 5}))
        join_single(c, "busy")
        resp = c.request(42, 1, {"groups_names": ["idle", "busy", "missing"]})
        assert {(r.group_id, r.error_code) for r in resp.results} == {
            ("idle", 0),
            ("busy", E.NON_EMPTY_GROUP),
            ("missing", E.GROUP_ID_NOT_FOUND),
        }
        assert fetched(fetch_offsets(c, "idle", [("t", 0)])) == {("t", 0): (-1, "", 0)}
        assert describe(c, "idle").group_state == "Dead"
        assert [g.group_id for g in c.request(16, 0, {}).groups] == ["busy"]


def test_deleting_a_topic_forgets_its_committed_offsets(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "gone", 2)
        create_topic(c, "kept", 1)
        c.request(8, 3, commit_body("g", {("gone", 0): 4, ("gone", 1): 5, ("kept", 0): 6}))
        resp = c.request(20, 3, {"topic_names": ["gone"], "timeout_ms": 1000})
        assert resp.responses[0].error_code == 0
        assert fetched(fetch_offsets(c, "g", None)) == {("kept", 0): (6, "", 0)}
        create_topic(c, "gone", 2)  # a new topic of the same name starts without commits
        assert fetched(fetch_offsets(c, "g", [("gone", 0)])) == {("gone", 0): (-1, "", 0)}


def _records(data_dir: Path, partition: int) -> list[tuple[bytes, bytes | None]]:
    out = []
    pdir = data_dir / f"__consumer_offsets-{partition}"
    for seg in sorted(pdir.glob("*.log")):
        data = seg.read_bytes()
        headers, _ = scan_valid_prefix(data)
        for h in headers:
            for rec in decode_batch(data, h.position)[1]:
                assert rec.key is not None
                out.append((rec.key, rec.value))
    return out


def test_records_are_kafkas_format_in_the_groups_partition(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        create_topic(c, "t", 2)
        member = join_single(c, "my-group")
        c.request(
            8,
            3,
            commit_body("my-group", {("t", 1): 77}, generation=1, member_id=member.member_id, metadata="m"),
        )
    partition = partition_for("my-group", 50)
    assert partition == 12  # tests/data/vectors/group_partition.tsv
    records = [(decode_key(k), v) for k, v in _records(broker.data_dir, partition)]
    group_values = [decode_group_value(v) for k, v in records if k == GroupKey("my-group") and v is not None]
    assert group_values[-1].generation == 1 and group_values[-1].protocol == "range"
    assert [(m.member_id, m.assignment, m.subscription) for m in group_values[-1].members] == [
        (member.member_id, b"A", b"sub")
    ]
    offset_values = [decode_offset_value(v) for k, v in records if k == OffsetKey("my-group", "t", 1) and v]
    assert [(o.offset, o.metadata, o.leader_epoch) for o in offset_values] == [(77, "m", -1)]
    assert abs(offset_values[0].commit_timestamp - time.time() * 1000) < 60_000


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_restart_keeps_groups_and_offsets(tmp_path: Path, how: str) -> None:
    proc = BrokerProcess(tmp_path / "data", env=DELAY_ENV).start()
    try:
        with RawClient(proc.port) as c:
            create_topic(c, "t", 2)
            member = join_single(c, "keep")
            ok = commit_body("keep", {("t", 0): 11, ("t", 1): 22}, generation=1, member_id=member.member_id)
            assert commit_codes(c.request(8, 3, ok)) == {("t", 0): 0, ("t", 1): 0}
            c.request(8, 3, commit_body("solo", {("t", 0): 3}))
        if how == "sigkill":
            assert proc.proc is not None
            os.kill(proc.proc.pid, signal.SIGKILL)  # right after the acknowledgement
            proc.proc.wait()
            proc.kill()
        else:
            assert proc.stop() == 0
        proc = BrokerProcess(tmp_path / "data", port=proc.port, env=DELAY_ENV).start()
        with RawClient(proc.port) as c:
            assert fetched(fetch_offsets(c, "keep", [("t", 0), ("t", 1)])) == {
                ("t", 0): (11, "", 0),
                ("t", 1): (22, "", 0),
            }
            assert fetched(fetch_offsets(c, "solo", [("t", 0)])) == {("t", 0): (3, "", 0)}
            d = describe(c, "keep")
            assert d.group_state == "Stable" and [m.member_id for m in d.members] == [member.member_id]
            # the member carries on in the same generation after the restart
            hb = {
                "group_id": "keep",
                "generation_id": 1,
                "member_id": member.member_id,
                "group_instance_id": None,
            }
            assert c.request(12, 3, hb).error_code == 0
            assert {g.group_id for g in c.request(16, 2, {}).groups} == {"keep", "solo"}
    finally:
        assert proc.stop() == 0, proc.log()


def test_session_timeout_expires_a_silent_member(tmp_path: Path) -> None:
    env = {**DELAY_ENV, "MINIKAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "500"}
    proc = BrokerProcess(tmp_path / "data", env=env).start()
    try:
        with RawClient(proc.port) as c:
            member = join_single(c, "short", session=800)
            time.sleep(1.5)
            hb = {
                "group_id": "short",
                "generation_id": 1,
                "member_id": member.member_id,
                "group_instance_id": None,
            }
            assert c.request(12, 3, hb).error_code == E.UNKNOWN_MEMBER_ID
            assert describe(c, "short").group_state == "Empty"
            too_short = c.request(11, 3, join_body("short", session=499))
            assert too_short.error_code == E.INVALID_SESSION_TIMEOUT
    finally:
        assert proc.stop() == 0, proc.log()


def test_clean_shutdown_answers_a_waiting_join(tmp_path: Path) -> None:
    env = {"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "60000"}
    proc = BrokerProcess(tmp_path / "data", env=env).start()
    try:
        with RawClient(proc.port) as c:
            cid = c.send(11, 3, join_body("slow"))
            time.sleep(0.2)
            started = time.monotonic()
            assert proc.proc is not None
            proc.proc.send_signal(signal.SIGTERM)
            assert c.recv(11, 3, cid).error_code == E.NOT_COORDINATOR
            proc.proc.wait(10)
            assert time.monotonic() - started < 5  # no wait for the shutdown deadline
    finally:
        assert proc.stop() == 0, proc.log()
