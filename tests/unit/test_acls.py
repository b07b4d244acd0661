"""The ACL model: Kafka's wire codes and names, filter matching (ANY, MATCH, None), CreateAcls validation."""

from __future__ import annotations

import pytest

from broker.security.acls import (
    ANY_ACL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    kafka_name,
    parse_kafka_name,
    validate_binding,
)

RT, PT, Op, Perm = ResourceType, PatternType, AclOperation, AclPermissionType

# Kafka's codes (clients/.../common/acl/AclOperation.java, AclPermissionType.java,
# common/resource/ResourceType.java, PatternType.java).
KAFKA_CODES = {
    ResourceType: {
        "UNKNOWN": 0,
        "ANY": 1,
        "TOPIC": 2,
        "GROUP": 3,
        "CLUSTER": 4,
        "TRANSACTIONAL_ID": 5,
        "DELEGATION_TOKEN": 6,
        "USER": 7,
    },
    PatternType: {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4},
    AclOperation: {
        "UNKNOWN": 0,
        "ANY": 1,
        "ALL": 2,
        "READ": 3,
        "WRITE": 4,
        "CREATE": 5,
        "DELETE": 6,
        "ALTER": 7,
        "DESCRIBE": 8,
        "CLUSTER_ACTION": 9,
        "DESCRIBE_CONFIGS": 10,
        "ALTER_CONFIGS": 11,
        "IDEMPOTENT_WRITE": 12,
        "CREATE_TOKENS": 13,
        "DESCRIBE_TOKENS": 14,
    },
    AclPermissionType: {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3},
}


@pytest.mark.parametrize("enum", list(KAFKA_CODES), ids=lambda e: e.__name__)
def test_codes_are_kafkas(enum: type) -> None:
    assert {m.name: int(m) for m in enum} == KAFKA_CODES[enum]


@pytest.mark.parametrize("enum", list(KAFKA_CODES), ids=lambda e: e.__name__)
def test_unknown_code_decodes_to_unknown(enum: type) -> None:
    assert enum(99).name == "UNKNOWN"
    assert enum(-1).name == "UNKNOWN"


def test_kafka_names() -> None:
    assert kafka_name(RT.TRANSACTIONAL_ID) == "TransactionalId"
    assert kafka_name(RT.DELEGATION_TOKEN) == "DelegationToken"
    assert kafka_name(Op.IDEMPOTENT_WRITE) == "IdempotentWrite"
    assert kafka_name(Op.DESCRIBE_CONFIGS) == "DescribeConfigs"
    assert kafka_name(Perm.ALLOW) == "Allow"
    assert parse_kafka_name(Op, "IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert parse_kafka_name(Op, "READ") is Op.READ
    assert parse_kafka_name(Op, "idempotentwrite") is Op.IDEMPOTENT_WRITE  # upper-cased: IDEMPOTENTWRITE
    assert parse_kafka_name(Op, "IDEMPOTENT_WRITE") is Op.UNKNOWN  # Kafka's maps hold no underscores
    assert parse_kafka_name(Perm, "Nope") is Perm.UNKNOWN
    for enum in KAFKA_CODES:
        for member in enum:
            assert parse_kafka_name(enum, kafka_name(member)) is member


def pat(name: str, kind: PatternType = PT.LITERAL, rtype: ResourceType = RT.TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, kind)


# (filter resource type, name, pattern type) -> pattern -> matches? (Kafka's ResourcePatternFilter.matches)
PATTERN_CASES = [
    ((RT.TOPIC, "Name", PT.LITERAL), pat("Name", rtype=RT.GROUP), False),
    ((RT.TOPIC, "Different", PT.PREFIXED), pat("Name", PT.PREFIXED), False),
    ((RT.TOPIC, "NAME", PT.LITERAL), pat("Name"), False),
    ((RT.TOPIC, "Name", PT.LITERAL), pat("Name", PT.PREFIXED), False),
    ((RT.ANY, "Name", PT.PREFIXED), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, None, PT.PREFIXED), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, None, PT.PREFIXED), pat("Name"), False),
    ((RT.TOPIC, None, PT.ANY), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, None, PT.MATCH), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, "Name", PT.LITERAL), pat("Name"), True),
    ((RT.TOPIC, "Name", PT.ANY), pat("Name"), True),
    ((RT.TOPIC, "Name", PT.MATCH), pat("Name"), True),
    ((RT.TOPIC, "Name-something", PT.MATCH), pat("Name"), False),
    ((RT.TOPIC, "*", PT.LITERAL), pat("*"), True),
    ((RT.TOPIC, "Name", PT.LITERAL), pat("*"), False),
    ((RT.TOPIC, "*", PT.LITERAL), pat("Name"), False),
    ((RT.TOPIC, "Name", PT.ANY), pat("*"), False),
    ((RT.TOPIC, "Name", PT.MATCH), pat("*"), True),
    ((RT.TOPIC, "Name", PT.PREFIXED), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, "Name-something", PT.PREFIXED), pat("Name", PT.PREFIXED), False),
    ((RT.TOPIC, "Name", PT.PREFIXED), pat("Name-something", PT.PREFIXED), False),
    ((RT.TOPIC, "Name-something", PT.ANY), pat("Name", PT.PREFIXED), False),
    ((RT.TOPIC, "Name-something", PT.MATCH), pat("Name", PT.PREFIXED), True),
    ((RT.TOPIC, "Name", PT.MATCH), pat("Name-something", PT.PREFIXED), False),
    ((RT.TOPIC, "Name", PT.MATCH), pat("Name", PT.PREFIXED), True),
    (
        (RT.TOPIC, "*", PT.MATCH),
        pat("*", PT.PREFIXED),
        True,
    ),  # a prefix "*" is no wildcard, but "*" starts with it
    ((RT.TOPIC, "x", PT.MATCH), pat("*", PT.PREFIXED), False),
    ((RT.UNKNOWN, None, PT.ANY), pat("Name"), False),
    ((RT.TOPIC, None, PT.UNKNOWN), pat("Name"), False),
]


@pytest.mark.parametrize(("fields", "pattern", "expected"), PATTERN_CASES)
def test_pattern_filter(fields: tuple, pattern: ResourcePattern, expected: bool) -> None:
    rtype, name, kind = fields
    f = AclBindingFilter(resource_type=rtype, name=name, pattern_type=kind)
    assert f.matches_pattern(pattern) is expected
    assert f.matches(AclBinding(pattern, AccessControlEntry("User:a", "*", Op.READ, Perm.ALLOW))) is expected


def test_entry_filter() -> None:
    entry = AccessControlEntry("User:alice", "10.0.0.1", Op.READ, Perm.ALLOW)
    assert AclBindingFilter().matches_entry(entry)
    assert AclBindingFilter(principal="User:alice", host="10.0.0.1", operation=Op.READ).matches_entry(entry)
    assert AclBindingFilter(permission=Perm.ALLOW).matches_entry(entry)
    assert not AclBindingFilter(principal="User:bob").matches_entry(entry)
    assert not AclBindingFilter(principal="User:*").matches_entry(entry)  # no wildcards in filters
    assert not AclBindingFilter(host="*").matches_entry(entry)
    assert not AclBindingFilter(operation=Op.ALL).matches_entry(entry)  # ALL is an operation, not ANY
    assert not AclBindingFilter(operation=Op.DESCRIBE).matches_entry(entry)
    assert not AclBindingFilter(permission=Perm.DENY).matches_entry(entry)


def test_any_acl_matches_everything() -> None:
    binding = AclBinding(
        pat("p", PT.PREFIXED, RT.GROUP), AccessControlEntry("User:a", "h", Op.ALL, Perm.DENY)
    )
    assert AclBindingFilter() == ANY_ACL and ANY_ACL.matches(binding)


def test_bindings_are_values() -> None:
    a = AclBinding(pat("t"), AccessControlEntry("User:a", "*", Op.READ, Perm.ALLOW))
    b = AclBinding(pat("t"), AccessControlEntry("User:a", "*", Op.READ, Perm.ALLOW))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert pat("t") == ResourcePattern(RT.TOPIC, "t")  # LITERAL by default, like the wire's default


def binding(
    rtype: ResourceType = RT.TOPIC,
    name: str = "t",
    kind: PatternType = PT.LITERAL,
    principal: str = "User:alice",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = Perm.ALLOW,
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, kind), AccessControlEntry(principal, "*", op, perm))


VALIDATION = [
    (binding(), None),
    (binding(kind=PT.PREFIXED), None),
    (binding(RT.CLUSTER, "kafka-cluster", op=Op.IDEMPOTENT_WRITE), None),
    (binding(principal="User:"), None),  # Kafka parses "User:" as type User, empty name
    (binding(name="a*"), None),
    (binding(RT.CLUSTER, "other"), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (binding(RT.CLUSTER, ""), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (binding(name=""), "Invalid empty resource name"),
    (binding(RT.ANY), "Invalid resourceType ANY"),
    (binding(RT.UNKNOWN), "Invalid resourceType UNKNOWN"),
    (binding(kind=PT.MATCH), "Invalid patternType MATCH"),
    (binding(kind=PT.ANY), "Invalid patternType ANY"),
    (binding(kind=PT.UNKNOWN), "Invalid patternType UNKNOWN"),
    (binding(op=Op.ANY), "Invalid operation ANY"),
    (binding(op=Op.UNKNOWN), "Invalid operation UNKNOWN"),
    (binding(perm=Perm.ANY), "Invalid permissionType ANY"),
    (binding(perm=Perm.UNKNOWN), "Invalid permissionType UNKNOWN"),
    (binding(principal="alice"), "expected a string in format principalType:principalName but got alice"),
    (binding(principal=""), "expected a string in format principalType:principalName but got "),
    (binding(RT.GROUP, "a/b"), "ACL binding contains invalid resource name: a/b"),
]


@pytest.mark.parametrize(("b", "reason"), VALIDATION)
def test_validate_binding(b: AclBinding, reason: str | None) -> None:
    assert validate_binding(b) == reason


def test_validate_binding_takes_wire_codes() -> None:
    raw = AclBinding(
        ResourcePattern(ResourceType(42), "t", PatternType(3)),
        AccessControlEntry("User:a", "*", Op(3), Perm(3)),
    )
    assert validate_binding(raw) == "Invalid resourceType UNKNOWN"
