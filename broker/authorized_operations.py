"""The ``authorized_operations`` bit fields of Metadata, DescribeGroups and DescribeCluster.

Bit ``1 << code`` for every ACL operation (Kafka's AclOperation codes) the
caller may perform on the resource. Without an authorizer Kafka reports every
operation the resource type supports, as do we; a field the client did not ask
for holds ``NOT_REQUESTED`` (INT32_MIN, the schema default).
"""

from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


def bit_field(operations: set[AclOperation]) -> int:
    return sum(1 << op for op in operations)


Op = AclOperation
NOT_REQUESTED = -(2**31)
# What Kafka 4's AclEntry.supportedOperations lists for each resource type.
TOPIC = bit_field(
    {Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
)
GROUP = bit_field({Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})
CLUSTER = bit_field(
    {
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    }
)
