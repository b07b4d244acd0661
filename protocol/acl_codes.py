"""Kafka's ACL enums with their wire codes and names, shared by the broker and the bundled client.

The codes are the int8 fields of CreateAcls, DescribeAcls and DeleteAcls
(Kafka's ResourceType, PatternType, AclOperation, AclPermissionType); an
unknown code decodes to UNKNOWN (0), as Kafka's ``fromCode`` does. Names:
`AclCode.kafka_name` is Kafka's PascalCase form ("Topic", "IdempotentWrite",
"Allow": SecurityUtils), used in ZooKeeper paths and ACL JSON;
`parse_kafka_name` reads it back the way Kafka does (PascalCase, or the same
upper-cased without underscores; anything else is UNKNOWN);
`AclCode.from_name` is the command line's lenient form (any case, ``_`` and
``-`` ignored; ValueError for anything else).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

E = TypeVar("E", bound="AclCode")


class AclCode(IntEnum):
    """An enum of Kafka's ACL model: unknown codes decode to UNKNOWN (0); Kafka's names both ways."""

    @classmethod
    def _missing_(cls, value: object) -> AclCode | None:
        return cls(0) if isinstance(value, int) else None

    @property
    def kafka_name(self) -> str:
        """Kafka's PascalCase name: TRANSACTIONAL_ID -> "TransactionalId", ALLOW -> "Allow"."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @classmethod
    def from_name(cls: type[E], text: str) -> E:
        """The member named ``text`` in any case, ``_`` and ``-`` ignored ("Read", "idempotent-write");
        ValueError for any other text, UNKNOWN included."""
        wanted = text.strip().replace("_", "").replace("-", "").upper()
        for member in cls:
            if member.value and member.name.replace("_", "") == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}")


class ResourceType(AclCode):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(AclCode):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(AclCode):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
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
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(AclCode):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_NAMES: dict[type[AclCode], dict[str, AclCode]] = {}


def parse_kafka_name(enum: type[E], text: str) -> E:
    """The member named ``text`` ("Read", "READ", "IDEMPOTENTWRITE"), else UNKNOWN, like SecurityUtils."""
    names = _NAMES.get(enum)
    if names is None:
        names = _NAMES[enum] = {}
        for member in enum:
            names[member.kafka_name] = member
            names[member.kafka_name.upper()] = member
    member = names.get(text)
    if member is None:
        member = names.get(text.upper())
    return enum(0) if member is None else member  # type: ignore[return-value]
