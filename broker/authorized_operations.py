"""What the handlers ask the authorizer, and the ``authorized_operations`` bit fields.

Checks: `denied` answers which of the names a request mentions the principal
may not act on, each distinct name asked once (Kafka's filterByAuthorized);
without an authorizer it answers "none" without looking at the names, so hot
paths (Produce, Fetch) pay nothing then. `unrestricted` tells a handler there
is no authorizer at all; `ALL_NAMES` stands for "every name" when a request
is refused as a whole; `split_denied` sets the offset APIs' refused
partitions apart.

Bit fields (Metadata, DescribeGroups, DescribeCluster, ConsumerGroupDescribe):
bit ``1 << code`` for every ACL operation (Kafka's AclOperation codes) the
caller may perform on the resource, of those the resource type supports
(Kafka's AclEntry.supportedOperations); without an authorizer every supported
operation, as Kafka answers. A field the client did not ask for holds
``NOT_REQUESTED`` (INT32_MIN, the schema default).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.context import RequestContext

Op = AclOperation
NOT_REQUESTED = -(2**31)
_NONE: frozenset[str] = frozenset()

# Kafka 4's AclEntry.supportedOperations for each resource type.
SUPPORTED: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DESCRIBE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
}


def bit_field(operations: Iterable[AclOperation]) -> int:
    return sum(1 << op for op in set(operations))


TOPIC = bit_field(SUPPORTED[ResourceType.TOPIC])
GROUP = bit_field(SUPPORTED[ResourceType.GROUP])
CLUSTER = bit_field(SUPPORTED[ResourceType.CLUSTER])
_EVERY = {rtype: bit_field(ops) for rtype, ops in SUPPORTED.items()}


def unrestricted(ctx: RequestContext) -> bool:
    """Whether the broker runs without an authorizer (every request is allowed everything)."""
    return ctx.broker.security.authorizer is None


def denied(
    ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, names: Iterable[str | None]
) -> frozenset[str]:
    """The distinct names among ``names`` (None skipped) on which the principal may not perform
    ``operation``; each is asked once. Without an authorizer: none, and ``names`` is not read."""
    if ctx.broker.security.authorizer is None:
        return _NONE
    return frozenset(
        name for name in set(names) if name is not None and not ctx.authorized(operation, resource_type, name)
    )


def operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The bit field of the operations the principal may perform on the resource (all it supports
    when there is no authorizer)."""
    if ctx.broker.security.authorizer is None:
        return _EVERY[resource_type]
    return bit_field(op for op in SUPPORTED[resource_type] if ctx.authorized(op, resource_type, name))


def cluster_operations(ctx: RequestContext) -> int:
    """Metadata v8-10 and DescribeCluster: the cluster's bit field, or 0 without DESCRIBE on it, as Kafka."""
    if not ctx.cluster_authorized(Op.DESCRIBE):
        return 0
    return operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


class _AllNames(Collection[str]):
    """A "set" holding every name: a request refused as a whole (e.g. no CLUSTER_ACTION)."""

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 1  # truthy: "some names are refused"


ALL_NAMES: Collection[str] = _AllNames()


def split_denied(
    topics: Sequence[Any], forbidden: Collection[str], code: int = ErrorCode.TOPIC_AUTHORIZATION_FAILED
) -> tuple[dict[tuple[str, int], int], list[Any]]:
    """For the offset APIs' request topics (``.name``, ``.partitions`` of ``.partition_index``):
    ``code`` for every partition of the topics in ``forbidden``, and the other topics."""
    if not forbidden:
        return {}, list(topics)
    codes: dict[tuple[str, int], int] = {}
    allowed = []
    for t in topics:
        if t.name in forbidden:
            for p in t.partitions:
                codes[(t.name, p.partition_index)] = code
        else:
            allowed.append(t)
    return codes, allowed
