"""The ACL calls of the admin client: `create_acls`, `describe_acls` and `delete_acls`.

The model is Kafka's Admin API's (``org.apache.kafka.common.acl`` and
``.resource``), with Python spelling:

- `ResourcePattern` (resource type, name, LITERAL or PREFIXED; LITERAL ``*``
  is every resource of the type) and `AccessControlEntry` (principal
  ``Type:name``, host, operation, ALLOW or DENY) make an `AclBinding`: one
  ACL. As Kafka's constructors do, they refuse ANY (and MATCH) with a
  ValueError: a binding is always a definite ACL.
- `AclBindingFilter` selects ACLs: None matches any name, principal or host,
  ANY any type, operation or permission; pattern type ANY matches LITERAL and
  PREFIXED patterns with exactly the filter's name, MATCH every pattern that
  applies to a resource of that name (the literal name, ``*``, the prefixes).
  Kafka nests a ResourcePatternFilter and an AccessControlEntryFilter; here
  the seven fields are flat (as confluent-kafka's filter is).
- The enums carry Kafka's wire codes and names (``AclOperation.IDEMPOTENT_WRITE``
  is code 12; `kafka_name` gives "IdempotentWrite"); an unknown code decodes to
  UNKNOWN.

Routing and errors, as Kafka's Admin: each call goes to any broker (an open
connection with the fewest requests in flight, else a known broker, else
bootstrap). CreateAcls and DeleteAcls answer per ACL / per filter; a failure
of the whole call (no broker, a timeout) raises. Brokers that speak only v0
of these APIs know no pattern types: a PREFIXED creation, or a filter other
than LITERAL or ANY, raises `UnsupportedVersionError` there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, UnsupportedVersionError, error_for
from protocol.acl_codes import AclCode, AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    pass

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"


def _coerce(obj: object, name: str, enum: type[AclCode]) -> None:
    """Store field ``name`` of frozen ``obj`` as a member of ``enum`` (it may be given as an int)."""
    object.__setattr__(obj, name, enum(getattr(obj, name)))


@dataclass(frozen=True)
class ResourcePattern:
    """A resource (or, PREFIXED, every resource whose name starts with ``name``) of one type.

    ValueError for resource type ANY or pattern type ANY or MATCH (Kafka's messages).
    """

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self) -> None:
        _coerce(self, "resource_type", ResourceType)
        _coerce(self, "pattern_type", PatternType)
        if self.resource_type == ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.ANY, PatternType.MATCH):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")


@dataclass(frozen=True)
class AccessControlEntry:
    """Who (``principal``, ``Type:name``) from where (``host``, ``*``: anywhere) may or may not do what.

    ValueError for operation or permission type ANY (Kafka's messages).
    """

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        _coerce(self, "operation", AclOperation)
        _coerce(self, "permission_type", AclPermissionType)
        if self.operation == AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type == AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")


@dataclass(frozen=True)
class AclBindingFilter:
    """Which ACLs a describe or delete selects; the default (`ANY_ACL`) selects every ACL."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def __post_init__(self) -> None:
        _coerce(self, "resource_type", ResourceType)
        _coerce(self, "pattern_type", PatternType)
        _coerce(self, "operation", AclOperation)
        _coerce(self, "permission_type", AclPermissionType)

    @property
    def is_unknown(self) -> bool:
        """True when a field is UNKNOWN (brokers refuse such a filter)."""
        return (
            self.resource_type == ResourceType.UNKNOWN
            or self.pattern_type == PatternType.UNKNOWN
            or self.operation == AclOperation.UNKNOWN
            or self.permission_type == AclPermissionType.UNKNOWN
        )


ANY_ACL = AclBindingFilter()  # Kafka's AclBindingFilter.ANY


@dataclass(frozen=True)
class AclBinding:
    """One ACL: an entry on a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def to_filter(self) -> AclBindingFilter:
        """The filter selecting exactly this ACL."""
        p, e = self.pattern, self.entry
        return AclBindingFilter(
            p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission_type
        )


def indefinite_field(binding: AclBinding) -> str | None:
    """Why Kafka's Admin refuses to create ``binding`` before sending it (an UNKNOWN field), or None."""
    p, e = binding.pattern, binding.entry
    if p.resource_type == ResourceType.UNKNOWN:
        return "Resource type is UNKNOWN."
    if p.pattern_type == PatternType.UNKNOWN:
        return "Resource pattern type is UNKNOWN."
    if e.operation == AclOperation.UNKNOWN:
        return "Operation is UNKNOWN"
    if e.permission_type == AclPermissionType.UNKNOWN:
        return "Permission type is UNKNOWN"
    return None


def _creation(b: AclBinding) -> dict[str, Any]:
    return {
        "resource_type": int(b.pattern.resource_type),
        "resource_name": b.pattern.name,
        "resource_pattern_type": int(b.pattern.pattern_type),
        "principal": b.entry.principal,
        "host": b.entry.host,
        "operation": int(b.entry.operation),
        "permission_type": int(b.entry.permission_type),
    }


def _filter_body(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": int(f.resource_type),
        "resource_name_filter": f.name,
        "pattern_type_filter": int(f.pattern_type),
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": int(f.operation),
        "permission_type": int(f.permission_type),
    }


def _binding(
    rtype: int, name: str, pattern: int, principal: str, host: str, op: int, perm: int
) -> AclBinding:
    """An ACL of a response, from its wire codes."""
    return AclBinding(
        ResourcePattern(ResourceType(rtype), name, PatternType(pattern)),
        AccessControlEntry(principal, host, AclOperation(op), AclPermissionType(perm)),
    )


def _check_v0(version: int, pattern_types: Iterable[PatternType], allowed: tuple[PatternType, ...]) -> None:
    """v0 of the ACL APIs has no pattern type (the broker reads LITERAL): refuse what it would misread."""
    if version == 0 and any(t not in allowed for t in pattern_types):
        raise UnsupportedVersionError("the broker's ACL APIs (v0) support only literal resource patterns")


class AclAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (it provides ``cluster`` and ``_retrying``)."""

    async def _send_acl_request(
        self,
        api_key: int,
        body: dict[str, Any],
        patterns: list[PatternType],
        allowed: tuple[PatternType, ...],
    ) -> Any:
        """Send to any broker, retrying retriable failures; v0 brokers get only ``allowed`` patterns."""

        async def call() -> Any:
            conn = await self.cluster.any_connection()
            version = conn.version(api_key)
            _check_v0(version, patterns, allowed)
            return await conn.send(api_key, body, version=version, timeout=self.cluster.request_timeout)

        return await self._retrying(call)

    async def create_acls(self, bindings: Iterable[AclBinding]) -> list[KafkaError | None]:
        """Create the ACLs; per binding, in order, None or the error that left it uncreated.

        An ACL that exists already succeeds. Brokers' per-ACL errors carry their
        message: SECURITY_DISABLED (no authorizer), CLUSTER_AUTHORIZATION_FAILED
        (no ALTER on the cluster), INVALID_REQUEST (e.g. a CLUSTER resource not
        named ``kafka-cluster``, a principal without ``Type:``). A binding with an
        UNKNOWN field fails here with INVALID_REQUEST, unsent; a binding given
        twice is sent once and both get its result.
        """
        given = list(bindings)
        results: dict[AclBinding, KafkaError | None] = {}
        sent: list[AclBinding] = []
        for b in given:
            if b in results:
                continue
            why = indefinite_field(b)
            if why is None:
                results[b] = None
                sent.append(b)
            else:
                results[b] = error_for(ErrorCode.INVALID_REQUEST, f"Invalid ACL creation: {why}")
        if sent:
            body = {"creations": [_creation(b) for b in sent]}
            literal = (PatternType.LITERAL,)
            resp = await self._send_acl_request(
                CREATE_ACLS, body, [b.pattern.pattern_type for b in sent], literal
            )
            answers = list(resp.results)
            for i, b in enumerate(sent):
                if i >= len(answers):
                    results[b] = KafkaError(f"the broker reported no creation result for the ACL {b}")
                elif answers[i].error_code:
                    results[b] = error_for(answers[i].error_code, answers[i].error_message)
        return [results[b] for b in given]

    async def describe_acls(self, filter: AclBindingFilter = ANY_ACL) -> list[AclBinding]:  # noqa: A002
        """The ACLs ``filter`` selects, grouped by resource pattern as the broker answers them.

        Raises on an error of the request: `KafkaResponseError` with the broker's
        code and message (SECURITY_DISABLED when it has no authorizer,
        CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster), and
        INVALID_REQUEST, unsent, for a filter with an UNKNOWN field.
        """
        if filter.is_unknown:
            raise error_for(
                ErrorCode.INVALID_REQUEST, "The AclBindingFilter must not contain UNKNOWN elements."
            )
        allowed = (PatternType.LITERAL, PatternType.ANY)
        resp = await self._send_acl_request(
            DESCRIBE_ACLS, _filter_body(filter), [filter.pattern_type], allowed
        )
        if resp.error_code:
            raise error_for(resp.error_code, resp.error_message, "DescribeAcls")
        return [
            _binding(
                r.resource_type,
                r.resource_name,
                r.get("pattern_type", PatternType.LITERAL),
                a.principal,
                a.host,
                a.operation,
                a.permission_type,
            )
            for r in resp.resources
            for a in r.acls
        ]

    async def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[list[AclBinding] | KafkaError]:
        """Delete the ACLs each filter selects; per filter, in order, the ACLs it deleted or its error.

        An ACL that several filters select is reported under the first of them
        only (Kafka's brokers do so). Errors as `create_acls`'s; a filter with an
        UNKNOWN field fails here with INVALID_REQUEST, unsent; a filter given
        twice is sent once and both get its result. Where a broker reports an
        error for one matching ACL (Kafka's per-ACL results), the filter's
        result is that error.
        """
        given = list(filters)
        results: dict[AclBindingFilter, list[AclBinding] | KafkaError] = {}
        sent: list[AclBindingFilter] = []
        for f in given:
            if f in results:
                continue
            if f.is_unknown:
                results[f] = error_for(ErrorCode.INVALID_REQUEST, "Filters contain UNKNOWN elements")
            else:
                results[f] = []
                sent.append(f)
        if sent:
            body = {"filters": [_filter_body(f) for f in sent]}
            allowed = (PatternType.LITERAL, PatternType.ANY)
            resp = await self._send_acl_request(DELETE_ACLS, body, [f.pattern_type for f in sent], allowed)
            answers = list(resp.filter_results)
            for i, f in enumerate(sent):
                results[f] = (
                    _deleted(answers[i])
                    if i < len(answers)
                    else KafkaError("the broker reported no deletion result for the filter")
                )
        return [results[f] for f in given]


def _deleted(answer: Any) -> list[AclBinding] | KafkaError:
    """One DeleteAcls filter result: the ACLs it removed, or its (or a matching ACL's) error."""
    if answer.error_code:
        return error_for(answer.error_code, answer.error_message)
    out = []
    for m in answer.matching_acls:
        if m.error_code:
            return error_for(m.error_code, m.error_message)
        out.append(
            _binding(
                m.resource_type,
                m.resource_name,
                m.get("pattern_type", PatternType.LITERAL),
                m.principal,
                m.host,
                m.operation,
                m.permission_type,
            )
        )
    return out
