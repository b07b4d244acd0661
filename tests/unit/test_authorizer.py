"""The authorizer's decisions (Kafka's StandardAuthorizer rules), its re-indexing, and its speed at 10,000 ACLs."""

from __future__ import annotations

import random
import time

import pytest

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
from broker.security.authorizer import Authorizer, parse_super_users

RT, PT, Op = ResourceType, PatternType, AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LIT, PRE = PT.LITERAL, PT.PREFIXED
HOST = "10.0.0.1"


def acl(
    name: str,
    principal: str = "User:alice",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
    kind: PatternType = LIT,
    host: str = "*",
    rtype: ResourceType = RT.TOPIC,
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, kind), AccessControlEntry(principal, host, op, perm))


def make(
    *bindings: AclBinding, allow_everyone: bool = False, super_users: tuple[str, ...] = ()
) -> Authorizer:
    auth = Authorizer(super_users, allow_everyone_if_no_acl_found=allow_everyone)
    assert auth.add(bindings) == [None] * len(bindings)
    return auth


def can(
    auth: Authorizer,
    op: AclOperation,
    name: str,
    principal: str = "User:alice",
    host: str = HOST,
    rtype: ResourceType = RT.TOPIC,
) -> bool:
    return auth.authorize(principal, host, op, rtype, name)


def test_literal_acl() -> None:
    auth = make(acl("t"))
    assert can(auth, Op.READ, "t")
    assert not can(auth, Op.WRITE, "t")
    assert not can(auth, Op.READ, "t", principal="User:bob")  # the topic has ACLs, none for bob
    assert not can(auth, Op.READ, "t", principal="User:Alice")  # principals are case-sensitive
    assert not can(auth, Op.READ, "t", rtype=RT.GROUP)  # resource types are separate
    assert not can(auth, Op.READ, "t2")  # no ACL, allow.everyone.if.no.acl.found=false
    assert not can(auth, Op.READ, "t", principal="Group:alice")


# (ALLOW ACL's operation, requested operation) -> allowed? Kafka: READ, WRITE, DELETE, ALTER imply
# DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies everything; nothing else implies.
IMPLIED = [
    (Op.READ, Op.DESCRIBE, True),
    (Op.WRITE, Op.DESCRIBE, True),
    (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True),
    (Op.DESCRIBE, Op.DESCRIBE, True),
    (Op.CREATE, Op.DESCRIBE, False),
    (Op.ALTER_CONFIGS, Op.DESCRIBE, False),
    (Op.DESCRIBE_CONFIGS, Op.DESCRIBE, False),
    (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.DESCRIBE_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.ALTER, Op.DESCRIBE_CONFIGS, False),
    (Op.DESCRIBE, Op.READ, False),
    (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    (Op.WRITE, Op.READ, False),
    (Op.ALL, Op.READ, True),
    (Op.ALL, Op.IDEMPOTENT_WRITE, True),
    (Op.ALL, Op.DESCRIBE_CONFIGS, True),
    (Op.ALL, Op.ALL, True),
    (Op.READ, Op.ALL, False),
]


@pytest.mark.parametrize(("granted", "asked", "allowed"), IMPLIED)
def test_implied_operations_of_allow(granted: AclOperation, asked: AclOperation, allowed: bool) -> None:
    assert can(make(acl("t", op=granted)), asked, "t") is allowed


@pytest.mark.parametrize("denied", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_deny_implies_nothing(denied: AclOperation) -> None:
    auth = make(acl("t", op=Op.ALL), acl("t", op=denied, perm=DENY))
    assert not can(auth, denied, "t")
    assert can(auth, Op.DESCRIBE, "t")  # a DENY of READ does not deny DESCRIBE
    other = Op.CREATE
    assert can(auth, other, "t")


def test_deny_of_alter_configs_keeps_describe_configs() -> None:
    auth = make(acl("t", op=Op.ALL), acl("t", op=Op.ALTER_CONFIGS, perm=DENY))
    assert not can(auth, Op.ALTER_CONFIGS, "t") and can(auth, Op.DESCRIBE_CONFIGS, "t")


def test_deny_all_denies_everything() -> None:
    auth = make(acl("t", op=Op.ALL), acl("t", op=Op.ALL, perm=DENY))
    assert not any(can(auth, op, "t") for op in Op if op not in (Op.UNKNOWN, Op.ANY))


def test_deny_wins_across_literal_wildcard_and_prefixed() -> None:
    allows = [acl("orders"), acl("*"), acl("ord", kind=PRE)]
    denies = [acl("orders", perm=DENY), acl("*", perm=DENY), acl("or", kind=PRE, perm=DENY)]
    for allow in allows:
        assert can(make(allow), Op.READ, "orders")
        for deny in denies:
            assert not can(make(allow, deny), Op.READ, "orders"), (allow, deny)


def test_wildcard_principal_and_host() -> None:
    auth = make(acl("t", principal="User:*"))
    assert can(auth, Op.READ, "t", principal="User:anyone")
    assert can(auth, Op.READ, "t", principal="User:*")
    assert can(auth, Op.READ, "t", principal="Group:x")  # Kafka matches User:* for any principal type
    auth = make(acl("t", principal="User:*"), acl("t", principal="User:mallory", perm=DENY))
    assert can(auth, Op.READ, "t", principal="User:bob") and not can(
        auth, Op.READ, "t", principal="User:mallory"
    )
    auth = make(acl("t", principal="Group:*"))
    assert not can(auth, Op.READ, "t", principal="Group:x")  # Kafka's wildcard principal is User:* only


def test_hosts() -> None:
    auth = make(acl("t", host="10.0.0.1"))
    assert can(auth, Op.READ, "t", host="10.0.0.1")
    assert not can(auth, Op.READ, "t", host="10.0.0.2")
    auth = make(acl("t"), acl("t", host="10.0.0.9", perm=DENY))
    assert can(auth, Op.READ, "t", host="10.0.0.1") and not can(auth, Op.READ, "t", host="10.0.0.9")
    auth = make(acl("t", principal="User:*", host="10.0.0.9", op=Op.ALL, perm=DENY), acl("t"))
    assert not can(auth, Op.DESCRIBE, "t", host="10.0.0.9") and can(auth, Op.DESCRIBE, "t", host="10.0.0.1")


def test_wildcard_resource() -> None:
    auth = make(acl("*"))
    assert can(auth, Op.READ, "anything") and can(auth, Op.READ, "*")
    assert not can(auth, Op.READ, "anything", rtype=RT.GROUP)
    auth = make(acl("*", kind=PRE))  # a prefix "*" is not a wildcard
    assert not can(auth, Op.READ, "anything") and can(auth, Op.READ, "*x")


def test_prefixed() -> None:
    auth = make(acl("foo", kind=PRE), acl("foo-secret", kind=PRE, perm=DENY))
    assert can(auth, Op.READ, "foo") and can(auth, Op.READ, "foobar") and can(auth, Op.READ, "foo-public")
    assert not can(auth, Op.READ, "foo-secret") and not can(auth, Op.READ, "foo-secret-2")
    assert not can(auth, Op.READ, "fo")  # no ACL applies
    assert not can(auth, Op.READ, "xfoo")


def test_kafka_prefix_example() -> None:
    # StandardAuthorizerTest.testPrefixAcls's situation.
    auth = make(
        acl("fooa", op=Op.ALL, kind=PRE),
        acl("foobar", principal="User:bob", op=Op.ALL),
        acl("f", principal="User:bob", op=Op.ALL, kind=PRE),
    )
    assert can(auth, Op.WRITE, "foobarr", principal="User:bob")
    assert not can(auth, Op.READ, "goobar", principal="User:bob")
    assert can(auth, Op.READ, "fooa", principal="User:bob")
    assert can(auth, Op.DESCRIBE, "fooa")
    assert not can(auth, Op.WRITE, "bar") and not can(auth, Op.READ, "baz")


def test_super_users() -> None:
    auth = make(acl("*", principal="User:*", op=Op.ALL, perm=DENY), super_users=("User:admin",))
    assert can(auth, Op.ALTER, "t", principal="User:admin")
    assert can(auth, Op.CLUSTER_ACTION, "kafka-cluster", principal="User:admin", rtype=RT.CLUSTER)
    assert not can(auth, Op.READ, "t", principal="User:Admin")
    assert not can(auth, Op.READ, "t")
    assert parse_super_users(" User:admin ; User:broker;;") == {"User:admin", "User:broker"}
    with pytest.raises(ValueError, match="principalType:principalName"):
        parse_super_users("admin")


def test_allow_everyone_if_no_acl_found() -> None:
    auth = make(acl("t1"), acl("p-", kind=PRE, principal="User:bob"), allow_everyone=True)
    assert can(auth, Op.READ, "t2", principal="User:bob")  # no ACL for t2: everyone allowed
    assert can(auth, Op.WRITE, "t2")
    assert not can(auth, Op.READ, "t1", principal="User:bob")  # t1 has ACLs: only what they allow
    assert not can(auth, Op.READ, "p-x")  # a prefixed ACL applies to p-x
    assert can(auth, Op.READ, "g", rtype=RT.GROUP)
    auth.add([acl("*", principal="User:carol")])  # now a wildcard ACL applies to every topic
    assert not can(auth, Op.READ, "t2")
    auth.remove(AclBindingFilter(name="*"))
    assert can(auth, Op.READ, "t2")
    auth.remove(AclBindingFilter(name="t1"))
    assert can(auth, Op.READ, "t1", principal="User:bob")


def test_resource_with_only_unknown_acls_still_has_acls() -> None:
    auth = Authorizer(allow_everyone_if_no_acl_found=True)
    auth.replace_all([acl("t", op=Op.UNKNOWN), acl("u", perm=AclPermissionType.UNKNOWN)])
    assert not can(auth, Op.READ, "t") and not can(auth, Op.READ, "u") and can(auth, Op.READ, "v")


def test_add_validates_and_ignores_duplicates() -> None:
    auth = Authorizer()
    results = auth.add([acl("t"), acl("t"), acl("kafka", rtype=RT.CLUSTER), acl("t", op=Op.ANY), acl("u")])
    assert results == [
        None,
        None,
        "The only valid name for the CLUSTER resource is kafka-cluster",
        "Invalid operation ANY",
        None,
    ]
    assert len(auth) == 2 and auth.bindings() == [acl("t"), acl("u")]


def test_remove_and_add_reindex() -> None:
    auth = make(acl("t"), acl("t", principal="User:bob"), acl("pre", kind=PRE), acl("p", kind=PRE, perm=DENY))
    assert not can(auth, Op.READ, "prefix")
    assert auth.remove(AclBindingFilter(name="p", pattern_type=PRE)) == [acl("p", kind=PRE, perm=DENY)]
    assert can(auth, Op.READ, "prefix") and not can(auth, Op.READ, "pxx")
    assert auth.remove(AclBindingFilter(principal="User:alice")) == [acl("t"), acl("pre", kind=PRE)]
    assert not can(auth, Op.READ, "t") and can(auth, Op.READ, "t", principal="User:bob")
    assert not can(auth, Op.READ, "prefix")
    assert auth.remove(AclBindingFilter(principal="User:nobody")) == []
    auth.add([acl("pre", kind=PRE, op=Op.WRITE)])
    assert can(auth, Op.WRITE, "prefix") and not can(auth, Op.READ, "prefix")
    assert len(auth) == 2
    assert auth.remove(AclBindingFilter()) == [
        acl("t", principal="User:bob"),
        acl("pre", kind=PRE, op=Op.WRITE),
    ]
    assert len(auth) == 0 and auth.bindings() == []
    assert not can(auth, Op.WRITE, "prefix")
    auth.allow_everyone_if_no_acl_found = True
    assert can(auth, Op.WRITE, "prefix")  # nothing left in the index


def test_remove_with_match_filter() -> None:
    auth = make(
        acl("orders"), acl("*"), acl("ord", kind=PRE), acl("o", kind=PRE), acl("other"), acl("orders-x")
    )
    removed = auth.remove(AclBindingFilter(name="orders", pattern_type=PT.MATCH))
    assert removed == [acl("orders"), acl("*"), acl("ord", kind=PRE), acl("o", kind=PRE)]
    assert auth.bindings() == [acl("other"), acl("orders-x")]


def test_bindings_filters() -> None:
    bindings = [
        acl("t"),
        acl("t", kind=PRE),
        acl("t", rtype=RT.GROUP),
        acl("t", principal="User:bob", op=Op.WRITE, perm=DENY, host="h"),
    ]
    auth = make(*bindings)
    assert auth.bindings() == [bindings[0], bindings[3], bindings[1], bindings[2]]  # grouped by pattern
    assert auth.bindings(AclBindingFilter(resource_type=RT.TOPIC, name="t", pattern_type=LIT)) == [
        bindings[0],
        bindings[3],
    ]
    assert auth.bindings(AclBindingFilter(resource_type=RT.TOPIC, name="t")) == [
        bindings[0],
        bindings[3],
        bindings[1],
    ]
    assert auth.bindings(AclBindingFilter(name="t", pattern_type=PRE)) == [bindings[1]]
    assert auth.bindings(AclBindingFilter(resource_type=RT.TOPIC, name="tx", pattern_type=PT.MATCH)) == [
        bindings[1]
    ]
    assert auth.bindings(AclBindingFilter(host="h")) == [bindings[3]]
    assert auth.bindings(AclBindingFilter(permission=DENY, operation=Op.WRITE)) == [bindings[3]]
    assert auth.bindings(AclBindingFilter(resource_type=RT.CLUSTER)) == []


def test_replace_resource() -> None:
    auth = make(acl("t"), acl("u"))
    pattern = ResourcePattern(RT.TOPIC, "t", LIT)
    deny = AccessControlEntry("User:alice", "*", Op.READ, DENY)
    auth.replace_resource(pattern, [deny, deny])
    assert auth.bindings(AclBindingFilter(name="t")) == [AclBinding(pattern, deny)] and len(auth) == 2
    assert not can(auth, Op.READ, "t") and can(auth, Op.READ, "u")
    auth.replace_resource(pattern, [])
    assert len(auth) == 1 and auth.bindings() == [acl("u")]
    assert not auth.authorize_any("User:alice", HOST, Op.READ, RT.GROUP)
    assert auth.authorize_any("User:alice", HOST, Op.READ, RT.TOPIC)


def test_replace_all_is_all_or_nothing() -> None:
    auth = make(acl("t"))
    with pytest.raises(ValueError, match="resource pattern"):
        auth.replace_all([acl("u"), acl("v", kind=PT.MATCH)])
    assert auth.bindings() == [acl("t")] and can(auth, Op.READ, "t")
    auth.replace_all([acl("u"), acl("u"), acl("v", kind=PRE)])
    assert (
        len(auth) == 2
        and not can(auth, Op.READ, "t")
        and can(auth, Op.READ, "u")
        and can(auth, Op.READ, "vw")
    )


def any_(auth: Authorizer, op: AclOperation, rtype: ResourceType, principal: str = "User:alice") -> bool:
    return auth.authorize_any(principal, HOST, op, rtype)


def test_authorize_any_literal_allow_and_deny() -> None:
    auth = Authorizer()
    assert not any_(auth, Op.READ, RT.TOPIC)
    auth.add([acl("t1", host=HOST)])
    assert any_(auth, Op.READ, RT.TOPIC)
    assert not any_(auth, Op.READ, RT.TOPIC, principal="User:bob")
    assert not any_(auth, Op.WRITE, RT.TOPIC) and not any_(auth, Op.READ, RT.GROUP)
    assert not any_(auth, Op.DESCRIBE, RT.TOPIC)  # no implied operations in this scan
    auth.add([acl("t1", host=HOST, perm=DENY)])
    assert not any_(auth, Op.READ, RT.TOPIC)
    auth.add([acl("t2", host="10.9.9.9")])  # another host: does not count
    assert not any_(auth, Op.READ, RT.TOPIC)
    auth.add([acl("t3", principal="User:*", op=Op.ALL)])
    assert any_(auth, Op.READ, RT.TOPIC)


def test_authorize_any_prefix_domination() -> None:
    auth = Authorizer()
    steps = [
        (acl("abcde", kind=PRE, rtype=RT.GROUP), True),
        (acl("abcd", kind=PRE, rtype=RT.GROUP, perm=DENY), False),
        (acl("abc", kind=PRE, rtype=RT.GROUP), True),  # abc's own prefixes carry no DENY
        (acl("a", kind=PRE, rtype=RT.GROUP, perm=DENY), False),
        (acl("ab", kind=PRE, rtype=RT.GROUP), False),
        (acl("zz", rtype=RT.GROUP), True),  # a literal with no DENY over it
        (acl("zz", rtype=RT.GROUP, perm=DENY), False),
    ]
    for binding, expected in steps:
        auth.add([binding])
        assert any_(auth, Op.READ, RT.GROUP) is expected, binding


def test_authorize_any_wildcards() -> None:
    auth = make(acl("hello", kind=PRE, op=Op.WRITE))
    assert any_(auth, Op.WRITE, RT.TOPIC)
    auth.add([acl("*", op=Op.WRITE, perm=DENY)])
    assert not any_(auth, Op.WRITE, RT.TOPIC)
    auth.add([acl("*", op=Op.WRITE)])
    assert not any_(auth, Op.WRITE, RT.TOPIC)  # a wildcard DENY always wins
    auth = make(acl("x", op=Op.WRITE, perm=DENY), acl("*", op=Op.WRITE))
    assert any_(auth, Op.WRITE, RT.TOPIC)


def test_authorize_any_super_users_and_default() -> None:
    auth = make(acl("*", principal="User:*", op=Op.ALL, perm=DENY), super_users=("User:admin",))
    assert any_(auth, Op.WRITE, RT.TOPIC, principal="User:admin")
    assert not any_(auth, Op.WRITE, RT.TOPIC)
    # Kafka first asks about a resource named "hardcode": with no ACL applying to it, the default rules.
    auth = make(acl("t", op=Op.IDEMPOTENT_WRITE, perm=DENY, rtype=RT.TOPIC), allow_everyone=True)
    assert any_(auth, Op.IDEMPOTENT_WRITE, RT.TOPIC)
    auth = make(acl("hard", kind=PRE, perm=DENY), allow_everyone=True)
    assert not any_(auth, Op.READ, RT.TOPIC)
    with pytest.raises(ValueError):
        auth.authorize_any("User:a", HOST, Op.ANY, RT.TOPIC)
    with pytest.raises(ValueError):
        auth.authorize_any("User:a", HOST, Op.READ, RT.ANY)


# -- 10,000 ACLs: the index against a plain scan of Kafka's rules, and the cost of a decision.

PRINCIPALS = [f"User:u{i}" for i in range(50)] + ["User:*"]
HOSTS = ["*", "*", "*", "10.0.0.1", "10.0.0.2"]
OPS = [op for op in Op if op not in (Op.UNKNOWN, Op.ANY)]
ASKED = [op for op in OPS if op != Op.ALL]
TYPES = [RT.TOPIC, RT.GROUP, RT.TRANSACTIONAL_ID]


def _name(rng: random.Random) -> str:
    return f"{rng.choice(['orders', 'payments', 'app', 'team-a', 'team-b'])}-{rng.randrange(400)}"


def random_acls(rng: random.Random, count: int) -> list[AclBinding]:
    acls = set()
    while len(acls) < count:
        roll = rng.random()
        name = _name(rng)
        if roll < 0.15:
            name, kind = name[: rng.randrange(1, len(name) + 1)], PRE
        elif roll < 0.16:
            name, kind = "*", LIT
        else:
            kind = LIT
        perm = DENY if rng.random() < 0.2 else ALLOW
        acls.add(
            acl(
                name,
                rng.choice(PRINCIPALS),
                rng.choice(OPS),
                perm,
                kind,
                rng.choice(HOSTS),
                rng.choice(TYPES),
            )
        )
    return sorted(acls, key=repr)


def reference(
    acls: list[AclBinding],
    allow_everyone: bool,
    principal: str,
    host: str,
    op: AclOperation,
    rtype: RT,
    name: str,
) -> bool:
    """Kafka's decision as a plain scan (StandardAuthorizerData.findResult over every ACL)."""
    applying = [
        b.entry
        for b in acls
        if b.pattern.resource_type == rtype
        and (
            (b.pattern.pattern_type == LIT and b.pattern.name in (name, "*"))
            or (b.pattern.pattern_type == PRE and name.startswith(b.pattern.name))
        )
    ]
    if not applying:
        return allow_everyone

    def matches(e: AccessControlEntry) -> bool:
        if e.principal not in (principal, "User:*") or e.host not in (host, "*"):
            return False
        if e.operation == Op.ALL or e.operation == op:
            return True
        if e.permission == DENY:
            return False
        implied = {
            Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
            Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
        }
        return e.operation in implied.get(op, set())

    if any(e.permission == DENY and matches(e) for e in applying):
        return False
    return any(e.permission == ALLOW and matches(e) for e in applying)


def reference_any(
    acls: list[AclBinding], allow_everyone: bool, principal: str, host: str, op: AclOperation, rtype: RT
) -> bool:
    """Kafka's authorizeByResourceType as a plain scan over every ACL."""
    if reference(acls, allow_everyone, principal, host, op, rtype, "hardcode"):
        return True
    mine = [
        b
        for b in acls
        if b.pattern.resource_type == rtype
        and b.entry.principal in (principal, "User:*")
        and b.entry.host in (host, "*")
        and b.entry.operation in (op, Op.ALL)
    ]
    wildcard = {b.entry.permission for b in mine if b.pattern == ResourcePattern(rtype, "*", LIT)}
    if DENY in wildcard or ALLOW in wildcard:
        return DENY not in wildcard
    denied = {(b.pattern.pattern_type, b.pattern.name) for b in mine if b.entry.permission == DENY}
    return any(
        b.entry.permission == ALLOW
        and (b.pattern.pattern_type == PRE or (LIT, b.pattern.name) not in denied)
        and not any(kind == PRE and b.pattern.name.startswith(prefix) for kind, prefix in denied)
        for b in mine
    )


def random_queries(rng: random.Random, count: int) -> list[tuple[str, str, AclOperation, ResourceType, str]]:
    return [
        (
            rng.choice(PRINCIPALS[:-1] + ["User:other"]),
            rng.choice(["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
            rng.choice(ASKED),
            rng.choice(TYPES),
            _name(rng),
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("allow_everyone", [False, True])
def test_ten_thousand_acls_agree_with_a_plain_scan(allow_everyone: bool) -> None:
    rng = random.Random(7)
    acls = random_acls(rng, 10_000)
    auth = Authorizer(allow_everyone_if_no_acl_found=allow_everyone)
    auth.replace_all(acls)
    assert len(auth) == 10_000
    queries = random_queries(rng, 1000)
    outcomes = set()
    for q in queries:
        got = auth.authorize(*q)
        assert got == reference(acls, allow_everyone, *q), q
        outcomes.add(got)
    assert outcomes == {True, False}
    any_outcomes = set()
    for principal, host, op, rtype, _ in queries[:300]:
        got = auth.authorize_any(principal, host, op, rtype)
        assert got == reference_any(acls, allow_everyone, principal, host, op, rtype)
        any_outcomes.add(got)
    assert any_outcomes == {True, False}
    # Incremental changes keep agreeing: drop a third (by filters), add new ones.
    for b in acls[::3]:
        auth.remove(
            AclBindingFilter(
                b.pattern.resource_type, b.pattern.name, b.pattern.pattern_type, b.entry.principal
            )
        )
    kept = auth.bindings()
    old = set(kept)
    fresh = [b for b in random_acls(random.Random(8), 2000) if b not in old]
    assert all(r is None or "CLUSTER" in r for r in auth.add(fresh))
    current = auth.bindings()
    assert len(current) == len(auth) == len(kept) + len(fresh)
    for q in queries[:500]:
        assert auth.authorize(*q) == reference(current, allow_everyone, *q), q


def per_principal_acls(count: int) -> tuple[list[AclBinding], list[tuple[str, str, AclOperation, RT, str]]]:
    """A typical deployment: each application has its own few ACLs (topics, a prefix, its group)."""
    acls, queries = [], []
    for i in range(count // 5):
        who = f"User:app{i}"
        acls += [
            acl(f"in-{i}", who),
            acl(f"out-{i}", who, Op.WRITE),
            acl(f"app{i}.", who, Op.ALL, kind=PRE),
            acl(f"group-{i}", who, rtype=RT.GROUP),
            acl(f"secret-{i}", who, Op.ALL, DENY),
        ]
        queries += [
            (who, HOST, Op.READ, RT.TOPIC, f"in-{i}"),
            (who, HOST, Op.WRITE, RT.TOPIC, f"app{i}.events"),
            (who, HOST, Op.READ, RT.GROUP, f"group-{i}"),
            (who, HOST, Op.DESCRIBE, RT.TOPIC, f"out-{i}"),
            (who, HOST, Op.READ, RT.TOPIC, f"secret-{i}"),
        ]
    return acls, queries


def _per_call_us(auth: Authorizer, queries: list) -> float:
    authorize = auth.authorize
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for q in queries:
            authorize(*q)
        best = min(best, time.perf_counter() - start)
    return best / len(queries) * 1e6


def test_benchmark_authorize_at_ten_thousand_acls(capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(11)
    adversarial = Authorizer(super_users=["User:admin"])
    adversarial.replace_all(random_acls(rng, 10_000))
    typical_acls, typical_queries = per_principal_acls(10_000)
    typical = Authorizer(super_users=["User:admin"])
    typical.replace_all(typical_acls)
    assert len(typical) == 10_000
    assert [typical.authorize(*q) for q in typical_queries[:5]] == [True, True, True, True, False]
    results = {
        "typical (own topics, prefix, group)": _per_call_us(typical, rng.sample(typical_queries, 1000)),
        "random mix (about 10 applicable patterns)": _per_call_us(adversarial, random_queries(rng, 1000)),
        "super user": _per_call_us(adversarial, [("User:admin", HOST, Op.READ, RT.TOPIC, "t")] * 1000),
    }
    with capsys.disabled():
        print()
        for what, us in results.items():
            print(f"authorize() at 10,000 ACLs, {what}: {us:.2f} us/call")
