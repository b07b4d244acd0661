"""Kafka's ACL model: resource patterns, access control entries, bindings and their filters.

The enums (ResourceType, PatternType, AclOperation, AclPermissionType, with
Kafka's wire codes and names, `kafka_name` and `parse_kafka_name`) live in
protocol/acl_codes.py, shared with the bundled client, and are re-exported here.

An `AclBinding` is one ACL: a `ResourcePattern` (type, name, LITERAL or
PREFIXED; LITERAL ``*`` is the wildcard resource) and an `AccessControlEntry`
(principal ``Type:name``, host, operation, ALLOW or DENY). The dataclasses do
not validate, so a CreateAcls entry can be built from its fields and checked
with `validate_binding`. Field for field they are the wire's::

    CreateAcls creation   resource_type resource_name resource_pattern_type principal host operation permission_type
    AclBinding            pattern.resource_type .name .pattern_type entry.principal .host .operation .permission

`AclBindingFilter` is a DescribeAcls request, or one DeleteAcls filter, field
for field: None matches any name, principal or host; ANY matches any type,
operation or permission; pattern type ANY matches LITERAL and PREFIXED patterns
with exactly the filter's name, and MATCH every pattern that applies to the
filter's name: the literal name, the wildcard ``*`` and every prefix of it
(Kafka's ResourcePatternFilter and AccessControlEntryFilter).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.acl_codes import (
    AclCode,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_kafka_name,
)

__all__ = [
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "kafka_name",
    "parse_kafka_name",
]

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


def kafka_name(member: AclCode) -> str:
    """Kafka's PascalCase name: TRANSACTIONAL_ID -> "TransactionalId", ALLOW -> "Allow"."""
    return member.kafka_name


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which ACLs a DescribeAcls or DeleteAcls filter selects; the default selects every ACL."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        kind = self.pattern_type
        if kind != PatternType.ANY and kind != PatternType.MATCH and kind != pattern.pattern_type:
            return False
        name = self.name
        if name is None:
            return True
        if kind == PatternType.ANY or kind == pattern.pattern_type:
            return name == pattern.name
        # MATCH: the patterns that would apply to a resource called `name`.
        if pattern.pattern_type == PatternType.LITERAL:
            return name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type == PatternType.PREFIXED:
            return name.startswith(pattern.name)
        return False

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and (self.operation == AclOperation.ANY or self.operation == entry.operation)
            and (self.permission == AclPermissionType.ANY or self.permission == entry.permission)
        )

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)


ANY_ACL = AclBindingFilter()  # Kafka's AclBindingFilter.ANY


def validate_binding(binding: AclBinding) -> str | None:
    """Why CreateAcls refuses ``binding`` (Kafka answers INVALID_REQUEST with this message), or None.

    The order and wording are Kafka's: the broker's own checks (AclApis), then
    the controller's (AclControlManager.validateNewAcl), then the ZooKeeper
    authorizer's (a principal Kafka can parse; no ``/`` in a name, which would
    be a znode path separator).
    """
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not pattern.name:
        return "Invalid empty resource name"
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {ResourceType(pattern.resource_type).name}"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {PatternType(pattern.pattern_type).name}"
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {AclOperation(entry.operation).name}"
    if entry.permission not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {AclPermissionType(entry.permission).name}"
    if ":" not in entry.principal:
        return f"expected a string in format principalType:principalName but got {entry.principal}"
    if "/" in pattern.name:
        return f"ACL binding contains invalid resource name: {pattern.name}"
    return None
