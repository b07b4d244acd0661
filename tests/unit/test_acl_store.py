"""ACL persistence: Kafka's ZooKeeper JSON, paths and change notifications, and the single broker's file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from broker.security import acl_store
from broker.security.acl_store import (
    AclStoreError,
    LocalAclStore,
    acl_path,
    change_path,
    decode_change,
    decode_resource_acls,
    encode_change,
    encode_resource_acls,
    pattern_from_path,
    resource_type_path,
)
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

RT, PT, Op = ResourceType, PatternType, AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY

# A znode's data exactly as Kafka's ZooKeeper-mode authorizer writes it.
KAFKA_JSON = b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}'


def test_encode_is_kafkas_bytes() -> None:
    entry = AccessControlEntry("User:alice", "*", Op.READ, ALLOW)
    assert encode_resource_acls([entry, entry]) == KAFKA_JSON
    assert decode_resource_acls(KAFKA_JSON) == [entry]


def test_encode_names_in_kafkas_casing() -> None:
    entries = [
        AccessControlEntry("User:bob", "10.0.0.1", Op.IDEMPOTENT_WRITE, DENY),
        AccessControlEntry("User:bob", "*", Op.DESCRIBE_CONFIGS, ALLOW),
        AccessControlEntry("User:*", "*", Op.CLUSTER_ACTION, ALLOW),
    ]
    doc = json.loads(encode_resource_acls(entries))
    assert doc == {
        "version": 1,
        "acls": [
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "IdempotentWrite",
                "host": "10.0.0.1",
            },
            {"principal": "User:bob", "permissionType": "Allow", "operation": "DescribeConfigs", "host": "*"},
            {"principal": "User:*", "permissionType": "Allow", "operation": "ClusterAction", "host": "*"},
        ],
    }


@pytest.mark.parametrize("op", [op for op in Op if op not in (Op.ANY, Op.UNKNOWN)])
@pytest.mark.parametrize("perm", [ALLOW, DENY])
def test_round_trip_every_operation(op: AclOperation, perm: AclPermissionType) -> None:
    entry = AccessControlEntry("User:CN=a,O=b", "::1", op, perm)
    assert decode_resource_acls(encode_resource_acls([entry])) == [entry]


def test_decode_reads_what_kafka_accepts() -> None:
    # Any key order and spacing, upper-case names, several entries (Kafka's own test data has these).
    data = b"""{"acls": [{"host": "host1", "permissionType": "Deny", "operation": "READ", "principal": "User:alice"},
        {  "host": "*" , "permissionType": "ALLOW", "operation": "IDEMPOTENTWRITE", "principal": "User:bob"},
        {"host": "*", "permissionType": "Allow", "operation": "Frobnicate", "principal": "User:eve"}],
        "version": 1}"""
    assert decode_resource_acls(data) == [
        AccessControlEntry("User:alice", "host1", Op.READ, DENY),
        AccessControlEntry("User:bob", "*", Op.IDEMPOTENT_WRITE, ALLOW),
        AccessControlEntry("User:eve", "*", Op.UNKNOWN, ALLOW),  # Kafka reads unknown names as UNKNOWN
    ]
    assert decode_resource_acls(b"") == [] and decode_resource_acls(None) == []


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'{"version":2,"acls":[]}',
        b'{"version":1}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read"}]}',
        b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Any","host":"*"}]}',
        b'{"version":1,"acls":["User:a"]}',
    ],
)
def test_decode_rejects_what_is_off_format(data: bytes) -> None:
    with pytest.raises(AclStoreError):
        decode_resource_acls(data)


PATHS = [
    (ResourcePattern(RT.TOPIC, "orders", PT.LITERAL), "/kafka-acl/Topic/orders"),
    (ResourcePattern(RT.TOPIC, "*", PT.LITERAL), "/kafka-acl/Topic/*"),
    (ResourcePattern(RT.GROUP, "g-", PT.PREFIXED), "/kafka-acl-extended/prefixed/Group/g-"),
    (ResourcePattern(RT.CLUSTER, "kafka-cluster", PT.LITERAL), "/kafka-acl/Cluster/kafka-cluster"),
    (ResourcePattern(RT.TRANSACTIONAL_ID, "tx", PT.LITERAL), "/kafka-acl/TransactionalId/tx"),
    (
        ResourcePattern(RT.TRANSACTIONAL_ID, "tx", PT.PREFIXED),
        "/kafka-acl-extended/prefixed/TransactionalId/tx",
    ),
    (ResourcePattern(RT.DELEGATION_TOKEN, "tok", PT.LITERAL), "/kafka-acl/DelegationToken/tok"),
    (ResourcePattern(RT.USER, "alice", PT.LITERAL), "/kafka-acl/User/alice"),
]


@pytest.mark.parametrize(("pattern", "path"), PATHS)
def test_paths(pattern: ResourcePattern, path: str) -> None:
    assert acl_path(pattern) == path
    assert pattern_from_path(path) == pattern


def test_path_helpers_edges() -> None:
    assert resource_type_path(PT.LITERAL, RT.TOPIC) == "/kafka-acl/Topic"
    assert resource_type_path(PT.PREFIXED, RT.GROUP) == "/kafka-acl-extended/prefixed/Group"
    assert pattern_from_path("/kafka-acl/TOPIC/x") == ResourcePattern(RT.TOPIC, "x")  # Kafka's lenient names
    assert pattern_from_path("/kafka-acl/Widget/x") == ResourcePattern(RT.UNKNOWN, "x")
    for bad in [
        "/kafka-acl/Topic",
        "/kafka-acl/Topic/",
        "/kafka-acl-extended/literal/Topic/x",
        "/brokers/ids/1",
    ]:
        with pytest.raises(ValueError):
            pattern_from_path(bad)
    for kind in (PT.ANY, PT.MATCH, PT.UNKNOWN):
        with pytest.raises(ValueError):
            acl_path(ResourcePattern(RT.TOPIC, "x", kind))


def test_change_notifications() -> None:
    literal = ResourcePattern(RT.TRANSACTIONAL_ID, "tx-1", PT.LITERAL)
    prefixed = ResourcePattern(RT.TOPIC, "ord", PT.PREFIXED)
    assert change_path(literal) == "/kafka-acl-changes/acl_changes_"
    assert change_path(prefixed) == "/kafka-acl-extended-changes/acl_changes_"
    assert encode_change(literal) == b"TRANSACTIONAL_ID:tx-1"
    assert json.loads(encode_change(prefixed)) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "ord",
        "patternType": "PREFIXED",
    }
    assert decode_change("/kafka-acl-changes", encode_change(literal)) == literal
    assert decode_change("/kafka-acl-extended-changes", encode_change(prefixed)) == prefixed
    assert decode_change("/kafka-acl-changes", b"Topic:a:b") == ResourcePattern(RT.TOPIC, "a:b")
    with pytest.raises(AclStoreError):
        decode_change("/kafka-acl-changes", b"no separator")
    with pytest.raises(AclStoreError):
        decode_change("/kafka-acl-extended-changes", b'{"version":2,"resourceType":"TOPIC","name":"x"}')
    with pytest.raises(ValueError):
        decode_change("/elsewhere", b"TOPIC:x")


def b(
    name: str,
    rtype: ResourceType = RT.TOPIC,
    kind: PatternType = PT.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, kind), AccessControlEntry(principal, host, op, perm))


BINDINGS = [
    b("orders"),
    b("orders", principal="User:bob", op=Op.WRITE, perm=DENY, host="10.0.0.7"),
    b("team-", kind=PT.PREFIXED, op=Op.ALL),
    b("*", principal="User:*", op=Op.DESCRIBE),
    b("g", RT.GROUP),
    b("kafka-cluster", RT.CLUSTER, op=Op.IDEMPOTENT_WRITE),
    b("tx", RT.TRANSACTIONAL_ID, PT.PREFIXED, op=Op.WRITE),
    b("tok", RT.DELEGATION_TOKEN, op=Op.DESCRIBE),
    b("alice", RT.USER, op=Op.CREATE_TOKENS),
    b("t\u00e9l\u00e9", op=Op.DESCRIBE_CONFIGS),
]


def test_local_store_round_trip(tmp_path: Path) -> None:
    store = LocalAclStore(tmp_path / acl_store.FILE)
    assert store.load() == []  # a new broker: no file yet
    store.save(BINDINGS + BINDINGS[:2])
    assert sorted(store.load(), key=repr) == sorted(BINDINGS, key=repr)
    doc = json.loads(store.path.read_text())
    assert doc["version"] == 1 and len(doc["acls"]) == len(BINDINGS)
    assert {
        "resourceType": "Topic",
        "name": "team-",
        "patternType": "Prefixed",
        "principal": "User:alice",
        "host": "*",
        "operation": "All",
        "permissionType": "Allow",
    } in doc["acls"]
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    store.save([])
    assert store.load() == []


def test_local_store_replaces_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalAclStore(tmp_path / "acls.json")
    store.save(BINDINGS[:1])
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync file")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        assert Path(src).read_bytes() and json.loads(Path(src).read_bytes())  # complete before it is renamed
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    inode = store.path.stat().st_ino
    store.save(BINDINGS)
    assert events == ["fsync file", "rename", "fsync dir"]
    assert store.path.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert [p.name for p in tmp_path.iterdir()] == ["acls.json"]
    assert len(store.load()) == len(BINDINGS)


def test_failed_save_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalAclStore(tmp_path / "acls.json")
    store.save(BINDINGS[:2])
    before = store.path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        store.save(BINDINGS)
    monkeypatch.undo()
    assert store.path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["acls.json"]
    with pytest.raises(ValueError, match="operation ANY"):
        store.save([b("x", op=Op.ANY)])
    assert store.path.read_bytes() == before
    (tmp_path / "acls.json.tmp").write_bytes(b"half a fi")  # left by a crash mid-save: ignored, then replaced
    assert store.load() == BINDINGS[:2]
    store.save(BINDINGS[:1])
    assert store.load() == BINDINGS[:1] and not (tmp_path / "acls.json.tmp").exists()


GOOD_ROW = {
    "resourceType": "Topic",
    "name": "t",
    "patternType": "Literal",
    "principal": "User:a",
    "host": "*",
    "operation": "Read",
    "permissionType": "Allow",
}


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "not JSON"),
        (b'{"version": 1, "acls": [', "not JSON"),
        (b"\x00\x00\x00\x00", "not JSON"),
        (b'{"version": 2, "acls": []}', "expected"),
        (b'{"acls": []}', "expected"),
        (
            json.dumps({"version": 1, "acls": [{**GOOD_ROW, "operation": "Frobnicate"}]}).encode(),
            "operation UNKNOWN",
        ),
        (json.dumps({"version": 1, "acls": [{**GOOD_ROW, "operation": "Any"}]}).encode(), "operation ANY"),
        (
            json.dumps({"version": 1, "acls": [{**GOOD_ROW, "patternType": "Match"}]}).encode(),
            "pattern type MATCH",
        ),
        (
            json.dumps({"version": 1, "acls": [{**GOOD_ROW, "resourceType": "Any"}]}).encode(),
            "resource type ANY",
        ),
        (
            json.dumps({"version": 1, "acls": [{**GOOD_ROW, "permissionType": "Maybe"}]}).encode(),
            "permission",
        ),
        (json.dumps({"version": 1, "acls": [{**GOOD_ROW, "principal": "a"}]}).encode(), "not Type:name"),
        (json.dumps({"version": 1, "acls": [{**GOOD_ROW, "name": 7}]}).encode(), "'name'"),
        (json.dumps({"version": 1, "acls": [GOOD_ROW, "x"]}).encode(), "'resourceType'"),
    ],
)
def test_corrupt_file_is_one_readable_error(tmp_path: Path, content: bytes, why: str) -> None:
    path = tmp_path / "acls.json"
    path.write_bytes(content)
    with pytest.raises(AclStoreError) as info:
        LocalAclStore(path).load()
    message = str(info.value)
    assert message.startswith(f"{path}: corrupt ACL file: ") and why in message
    assert "\n" not in message


def test_good_row_loads(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    path.write_text(json.dumps({"version": 1, "acls": [GOOD_ROW]}))
    assert LocalAclStore(path).load() == [b("t", principal="User:a")]
