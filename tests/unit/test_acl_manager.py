"""AclManager: the single broker's durable ACLs (a real data directory) and the ZooKeeper update rule.

The cluster side against a real ZooKeeper is tests/cluster/test_acls_in_zookeeper.py;
here `_zk_update` runs against a small in-memory stand-in for kazoo to check
the conditional write, the merge after a lost race and the notification.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.config import BrokerConfig, ConfigError
from broker.security import acl_manager
from broker.security.acl_manager import AclManager
from broker.security.acl_store import FILE, acl_path, change_path, encode_resource_acls
from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from broker.security.authorizer import Authorizer
from broker.security.broker_security import BrokerSecurity
from protocol.errors import ErrorCode

RT, PT, Op = ResourceType, PatternType, AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
OK = (ErrorCode.NONE, None)


def acl(
    name: str,
    principal: str = "User:alice",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
    kind: PatternType = PT.LITERAL,
    rtype: ResourceType = RT.TOPIC,
    host: str = "*",
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, kind), AccessControlEntry(principal, host, op, perm))


def manager(data_dir: Path) -> AclManager:
    return AclManager(Authorizer(), data_dir)


def stored(data_dir: Path) -> list[dict[str, str]]:
    return json.loads((data_dir / FILE).read_text())["acls"]


async def test_create_describe_delete_and_restart(tmp_path: Path) -> None:
    m = manager(tmp_path)
    assert m.describe(AclBindingFilter()) == []
    assert not (tmp_path / FILE).exists()  # nothing written until there is something to keep
    bindings = [
        acl("orders"),
        acl("orders", "User:bob", Op.WRITE),
        acl("ord", kind=PT.PREFIXED, perm=DENY, op=Op.ALL),
        acl("g1", rtype=RT.GROUP),
    ]
    assert await m.create(bindings) == [OK] * 4
    assert set(m.describe(AclBindingFilter())) == set(bindings)
    assert m.describe(AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL, principal="User:bob")) == [bindings[1]]
    # MATCH: every pattern that applies to a topic called "orders-eu"
    assert set(m.describe(AclBindingFilter(RT.TOPIC, "orders-eu", PT.MATCH))) == {bindings[2]}
    assert {(r["resourceType"], r["name"], r["patternType"]) for r in stored(tmp_path)} == {
        ("Topic", "orders", "Literal"),
        ("Topic", "ord", "Prefixed"),
        ("Group", "g1", "Literal"),
    }

    again = manager(tmp_path)  # a restarted broker reads the same ACLs back
    assert set(again.describe(AclBindingFilter())) == set(bindings)

    results = await again.delete([AclBindingFilter(RT.TOPIC, "orders", PT.ANY, principal="User:bob")])
    assert results == [(ErrorCode.NONE, None, [bindings[1]])]
    assert set(manager(tmp_path).describe(AclBindingFilter())) == {bindings[0], bindings[2], bindings[3]}

    results = await again.delete([AclBindingFilter()])
    assert results[0][0] == ErrorCode.NONE and set(results[0][2]) == {bindings[0], bindings[2], bindings[3]}
    assert manager(tmp_path).describe(AclBindingFilter()) == []
    assert stored(tmp_path) == []


async def test_authorizer_follows_the_store(tmp_path: Path) -> None:
    authorizer = Authorizer()
    m = AclManager(authorizer, tmp_path)
    assert not authorizer.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")
    await m.create([acl("orders")])
    assert authorizer.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")
    assert authorizer.authorize("User:alice", "10.0.0.1", Op.DESCRIBE, RT.TOPIC, "orders")  # implied
    await m.create([acl("orders", perm=DENY, host="10.0.0.1")])
    assert not authorizer.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")
    assert authorizer.authorize("User:alice", "10.0.0.2", Op.READ, RT.TOPIC, "orders")
    await m.delete([AclBindingFilter(permission=DENY)])
    assert authorizer.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")

    restarted = Authorizer()
    AclManager(restarted, tmp_path)
    assert restarted.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")
    assert not restarted.authorize("User:bob", "10.0.0.1", Op.READ, RT.TOPIC, "orders")


async def test_invalid_bindings_answer_invalid_request_and_the_rest_is_created(tmp_path: Path) -> None:
    m = manager(tmp_path)
    results = await m.create(
        [
            acl("orders"),
            acl("other", rtype=RT.CLUSTER),
            acl(""),
            acl("x", kind=PT.MATCH),
            acl("x", op=Op.ANY),
            acl("x", perm=AclPermissionType.ANY),
            acl("x", principal="alice"),
            acl("a/b"),
            acl("kafka-cluster", rtype=RT.CLUSTER, op=Op.ALTER),
        ]
    )
    assert results == [
        OK,
        (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        (ErrorCode.INVALID_REQUEST, "Invalid patternType MATCH"),
        (ErrorCode.INVALID_REQUEST, "Invalid operation ANY"),
        (ErrorCode.INVALID_REQUEST, "Invalid permissionType ANY"),
        (
            ErrorCode.INVALID_REQUEST,
            "expected a string in format principalType:principalName but got alice",
        ),
        (ErrorCode.INVALID_REQUEST, "ACL binding contains invalid resource name: a/b"),
        OK,
    ]
    assert {b.pattern.name for b in manager(tmp_path).describe(AclBindingFilter())} == {
        "orders",
        "kafka-cluster",
    }


async def test_existing_acl_succeeds_without_rewriting_the_file(tmp_path: Path) -> None:
    m = manager(tmp_path)
    assert await m.create([acl("orders"), acl("orders")]) == [OK, OK]
    inode = (tmp_path / FILE).stat().st_ino
    assert await m.create([acl("orders")]) == [OK]
    assert (tmp_path / FILE).stat().st_ino == inode  # replaced atomically only when something changed
    assert len(stored(tmp_path)) == 1


async def test_an_acl_two_filters_select_is_reported_under_the_first(tmp_path: Path) -> None:
    m = manager(tmp_path)
    a, b = acl("orders"), acl("orders", "User:bob")
    await m.create([a, b])
    results = await m.delete(
        [
            AclBindingFilter(principal="User:nobody"),
            AclBindingFilter(RT.TOPIC, "orders", PT.LITERAL, principal="User:bob"),
            AclBindingFilter(),
        ]
    )
    assert results == [(0, None, []), (0, None, [b]), (0, None, [a])]


async def test_a_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    authorizer = Authorizer()
    m = AclManager(authorizer, tmp_path)
    await m.create([acl("orders")])

    def broken(_bindings: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(m._store, "save", broken)
    assert await m.create([acl("orders"), acl("x", principal="bad")]) == [
        OK,  # exists already: nothing to write
        (ErrorCode.INVALID_REQUEST, "expected a string in format principalType:principalName but got bad"),
    ]
    assert await m.create([acl("new")]) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)]
    assert await m.delete([AclBindingFilter()]) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None, [])]
    assert authorizer.bindings() == [acl("orders")]
    monkeypatch.undo()
    assert manager(tmp_path).describe(AclBindingFilter()) == [acl("orders")]


def test_corrupt_file_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / FILE).write_text('{"version": 1, "acls": [{"resourceType": "Topic"')
    with pytest.raises(ValueError) as info:
        manager(tmp_path)
    assert "\n" not in str(info.value) and FILE in str(info.value) and "corrupt ACL file" in str(info.value)

    config = BrokerConfig.load(
        overrides={
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "log.dirs": str(tmp_path),
        }
    )
    with pytest.raises(ConfigError, match="corrupt ACL file"):
        BrokerSecurity(config, tmp_path)
    assert BrokerSecurity(BrokerConfig.load(overrides={"log.dirs": str(tmp_path)}), tmp_path).acls is None


# -- the ZooKeeper update rule -----------------------------------------------------------------
class FakeZk:
    """The kazoo calls `_zk_update` makes, on a dict of path -> (data, version); ``race`` runs
    once just before the first write, as another broker writing in between."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.seq = 0
        self.race: Any = None

    def _raced(self) -> None:
        if self.race is not None:
            race, self.race = self.race, None
            race(self)

    def get(self, path: str) -> tuple[bytes, Any]:
        if path not in self.nodes:
            raise NoNodeError
        data, version = self.nodes[path]
        return data, type("Stat", (), {"version": version})()

    def create(self, path: str, data: bytes, makepath: bool = False, sequence: bool = False) -> str:
        if sequence:
            path = f"{path}{self.seq:010d}"
            self.seq += 1
        else:
            self._raced()
        if path in self.nodes:
            raise NodeExistsError
        self.nodes[path] = (data, 0)
        return path

    def set(self, path: str, data: bytes, version: int) -> None:
        self._raced()
        if path not in self.nodes:
            raise NoNodeError
        if self.nodes[path][1] != version:
            raise BadVersionError
        self.nodes[path] = (data, version + 1)

    def delete(self, path: str, version: int = -1) -> None:
        self._raced()
        if path not in self.nodes:
            raise NoNodeError
        if version != -1 and self.nodes[path][1] != version:
            raise BadVersionError
        del self.nodes[path]

    def changes(self) -> list[bytes]:
        return [data for path, (data, _) in sorted(self.nodes.items()) if "acl_changes_" in path]


def test_zk_update_creates_merges_after_a_lost_race_and_notifies() -> None:
    zk = FakeZk()
    pattern = ResourcePattern(RT.TOPIC, "orders")
    alice = AccessControlEntry("User:alice", "*", Op.READ, ALLOW)
    bob = AccessControlEntry("User:bob", "*", Op.WRITE, ALLOW)
    carol = AccessControlEntry("User:carol", "*", Op.READ, DENY)

    entries, gone = acl_manager._zk_update(zk, pattern, [alice], [])
    assert (entries, gone) == ([alice], {})
    assert zk.nodes[acl_path(pattern)] == (encode_resource_acls([alice]), 0)
    assert zk.changes() == [b"TOPIC:orders"]

    # another broker adds carol between our read and our conditional set: we re-read and merge
    zk.race = lambda z: z.nodes.__setitem__(acl_path(pattern), (encode_resource_acls([alice, carol]), 1))
    entries, gone = acl_manager._zk_update(zk, pattern, [bob], [])
    assert set(entries) == {alice, bob, carol} and zk.nodes[acl_path(pattern)][1] == 2
    assert len(zk.changes()) == 2

    # nothing changes: no write, no notification
    assert acl_manager._zk_update(zk, pattern, [bob], [])[1] == {}
    assert len(zk.changes()) == 2

    filters = [(0, AclBindingFilter(principal="User:bob")), (1, AclBindingFilter())]
    entries, gone = acl_manager._zk_update(zk, pattern, [], filters)
    assert entries == [] and gone == {alice: 1, bob: 0, carol: 1}
    assert acl_path(pattern) not in zk.nodes  # no ACL left: the znode goes, as in Kafka
    assert len(zk.changes()) == 3

    prefixed = ResourcePattern(RT.GROUP, "app-", PT.PREFIXED)
    acl_manager._zk_update(zk, prefixed, [alice], [])
    assert acl_path(prefixed) == "/kafka-acl-extended/prefixed/Group/app-"
    assert change_path(prefixed) == "/kafka-acl-extended-changes/acl_changes_"
    assert json.loads(zk.changes()[-1]) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "app-",
        "patternType": "PREFIXED",
    }
