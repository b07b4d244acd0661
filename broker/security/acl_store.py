"""Where ACLs are kept: Kafka's ZooKeeper layout and a single broker's file.

ZooKeeper (Kafka's ZK-mode layout, kafka/zk/ZkData.scala; the kazoo calls live
elsewhere, this module only encodes):

- one znode per resource pattern holding its ACLs: LITERAL patterns at
  ``/kafka-acl/<ResourceType>/<name>``, PREFIXED ones at
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``; the resource type
  in Kafka's PascalCase ("Topic", "Group", "Cluster", "TransactionalId",
  "DelegationToken", "User"). Its data, as Kafka writes it (readers take any
  key order, operation and permission names in any case)::

      {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}

- after a change, a sequential znode ``acl_changes_<10 digits>`` under
  ``/kafka-acl-changes`` (LITERAL) or ``/kafka-acl-extended-changes``
  (PREFIXED), whose data names the pattern to re-read: ``TOPIC:orders`` for a
  literal one, ``{"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}``
  for the others (enum names, as Kafka writes them).

Single broker: `LocalAclStore`, one JSON file (`FILE` in the data directory),
replaced atomically (temporary file, fsync, rename, fsync of the directory)::

    {"version": 1, "acls": [{"resourceType": "Topic", "name": "orders", "patternType": "Literal",
      "principal": "User:alice", "host": "*", "operation": "Read", "permissionType": "Allow"}]}

A file that cannot be read back completely raises `AclStoreError` with one
line saying where and why: ACLs are never dropped silently. Its I/O blocks;
call it from an executor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    kafka_name,
    parse_kafka_name,
)
from broker.security.durable_file import replace_durably

ACL_ROOT = "/kafka-acl"
EXTENDED_ACL_ROOT = "/kafka-acl-extended"
ACL_CHANGES = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
VERSION = 1
FILE = "__minikafka_acls.json"


class AclStoreError(ValueError):
    """A stored ACL file or znode that cannot be read back."""


def encode_resource_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """The data of a pattern's znode: its ACLs (duplicates once) in Kafka's JSON."""
    acls = [
        {
            "principal": e.principal,
            "permissionType": kafka_name(e.permission),
            "operation": kafka_name(e.operation),
            "host": e.host,
        }
        for e in dict.fromkeys(entries)
    ]
    return _compact({"version": VERSION, "acls": acls})


def decode_resource_acls(data: bytes | None) -> list[AccessControlEntry]:
    """A pattern's ACLs from its znode's data (none for no data), as Kafka's AclEntry.fromBytes reads them.

    Unknown operation or permission names decode to UNKNOWN, as in Kafka (such
    an ACL never matches); anything else off the format raises AclStoreError.
    """
    if not data:
        return []
    doc = _parse_json(data)
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("acls"), list):
        raise AclStoreError(f'expected {{"version": 1, "acls": [...]}}, got {_clip(data)}')
    entries = []
    for item in doc["acls"]:
        entry = AccessControlEntry(
            _string(item, "principal"),
            _string(item, "host"),
            parse_kafka_name(AclOperation, _string(item, "operation")),
            parse_kafka_name(AclPermissionType, _string(item, "permissionType")),
        )
        if ":" not in entry.principal:
            raise AclStoreError(f"expected a principal Type:name, got {entry.principal!r}")
        if entry.operation == AclOperation.ANY or entry.permission == AclPermissionType.ANY:
            raise AclStoreError(f"an ACL cannot have operation or permission Any: {item}")
        entries.append(entry)
    return entries


def pattern_root(pattern_type: PatternType) -> str:
    """The znode under which patterns of ``pattern_type`` live."""
    if pattern_type == PatternType.LITERAL:
        return ACL_ROOT
    if pattern_type == PatternType.PREFIXED:
        return f"{EXTENDED_ACL_ROOT}/{pattern_type.name.lower()}"
    raise ValueError(f"no ZooKeeper store for pattern type {pattern_type!r}")


def resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    """The znode whose children are the names of the patterns of one type, e.g. ``/kafka-acl/Topic``."""
    return f"{pattern_root(pattern_type)}/{kafka_name(resource_type)}"


def acl_path(pattern: ResourcePattern) -> str:
    return f"{resource_type_path(pattern.pattern_type, pattern.resource_type)}/{pattern.name}"


def pattern_from_path(path: str) -> ResourcePattern:
    """The pattern whose ACLs ``path`` holds (inverse of `acl_path`); an unknown type name gives UNKNOWN."""
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        root = pattern_root(pattern_type) + "/"
        if path.startswith(root):
            type_name, slash, name = path[len(root) :].partition("/")
            if slash and name:
                return ResourcePattern(parse_kafka_name(ResourceType, type_name), name, pattern_type)
    raise ValueError(f"not an ACL znode path: {path}")


def change_root(pattern: ResourcePattern) -> str:
    return ACL_CHANGES if pattern.pattern_type == PatternType.LITERAL else EXTENDED_ACL_CHANGES


def change_path(pattern: ResourcePattern) -> str:
    """The path to create, sequential, to announce that ``pattern``'s ACLs changed."""
    return f"{change_root(pattern)}/{CHANGE_PREFIX}"


def encode_change(pattern: ResourcePattern) -> bytes:
    """The data of the change notification for ``pattern``."""
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return _compact(
        {
            "version": VERSION,
            "resourceType": pattern.resource_type.name,
            "name": pattern.name,
            "patternType": pattern.pattern_type.name,
        }
    )


def decode_change(root: str, data: bytes) -> ResourcePattern:
    """The pattern a notification under ``root`` (`ACL_CHANGES` or `EXTENDED_ACL_CHANGES`) names."""
    if root == ACL_CHANGES:
        type_name, colon, name = data.decode("utf-8", "replace").partition(":")
        if not colon:
            raise AclStoreError(
                f"expected a string in format ResourceType:ResourceName but got {_clip(data)}"
            )
        return ResourcePattern(_by_enum_name(ResourceType, type_name.upper()), name, PatternType.LITERAL)
    if root != EXTENDED_ACL_CHANGES:
        raise ValueError(f"not an ACL change root: {root}")
    doc = _parse_json(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("version"), int) or doc["version"] > VERSION:
        raise AclStoreError(f"unsupported ACL change event: {_clip(data)}")
    return ResourcePattern(
        _by_enum_name(ResourceType, _string(doc, "resourceType").upper()),
        _string(doc, "name"),
        _by_enum_name(PatternType, _string(doc, "patternType")),
    )


class LocalAclStore:
    """A single broker's ACLs in one JSON file (format in the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[AclBinding]:
        """The stored ACLs; none if the file does not exist yet."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            return _decode_file(data)
        except ValueError as exc:
            raise AclStoreError(f"{self.path}: corrupt ACL file: {exc}") from None

    def save(self, bindings: Iterable[AclBinding]) -> None:
        """Replace the stored ACLs with ``bindings``, durably; ValueError for one that cannot be stored."""
        replace_durably(self.path, _encode_file(bindings))


_FILE_KEYS = ("resourceType", "name", "patternType", "principal", "host", "operation", "permissionType")


def _encode_file(bindings: Iterable[AclBinding]) -> bytes:
    unique = sorted(
        dict.fromkeys(bindings),
        key=lambda b: (
            b.pattern.resource_type,
            b.pattern.pattern_type,
            b.pattern.name,
            b.entry.principal,
            b.entry.host,
            b.entry.operation,
            b.entry.permission,
        ),
    )
    rows = []
    for b in unique:
        reason = _unstorable(b)
        if reason:
            raise ValueError(f"cannot store ACL {b}: {reason}")
        p, e = b.pattern, b.entry
        values = (p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission)
        rows.append(
            {k: v if isinstance(v, str) else kafka_name(v) for k, v in zip(_FILE_KEYS, values, strict=True)}
        )
    lines = ",\n".join(" " + json.dumps(row, ensure_ascii=False) for row in rows)
    return f'{{"version": {VERSION}, "acls": [\n{lines}\n]}}\n'.encode()


def _decode_file(data: bytes) -> list[AclBinding]:
    doc = _parse_json(data)
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("acls"), list):
        raise AclStoreError(f'expected {{"version": {VERSION}, "acls": [...]}}')
    bindings = []
    for i, row in enumerate(doc["acls"]):
        binding = AclBinding(
            ResourcePattern(
                parse_kafka_name(ResourceType, _string(row, "resourceType")),
                _string(row, "name"),
                parse_kafka_name(PatternType, _string(row, "patternType")),
            ),
            AccessControlEntry(
                _string(row, "principal"),
                _string(row, "host"),
                parse_kafka_name(AclOperation, _string(row, "operation")),
                parse_kafka_name(AclPermissionType, _string(row, "permissionType")),
            ),
        )
        reason = _unstorable(binding)
        if reason:
            raise AclStoreError(f"ACL #{i} {json.dumps(row)}: {reason}")
        bindings.append(binding)
    return bindings


def _unstorable(b: AclBinding) -> str | None:
    if b.pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"resource type {b.pattern.resource_type.name}"
    if b.pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"pattern type {b.pattern.pattern_type.name}"
    if b.entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"operation {b.entry.operation.name}"
    if b.entry.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"permission {b.entry.permission.name}"
    if ":" not in b.entry.principal:
        return f"principal {b.entry.principal!r} is not Type:name"
    return None


def _compact(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def _parse_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AclStoreError(f"not JSON ({exc})") from None


def _string(doc: Any, key: str) -> str:
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, str):
        raise AclStoreError(f"expected a string {key!r} in {json.dumps(doc)[:200]}")
    return value


def _by_enum_name(enum: type[ResourceType] | type[PatternType], name: str) -> Any:
    """Kafka's fromString: the member with this exact enum name, else UNKNOWN."""
    return enum.__members__.get(name, enum(0))


def _clip(data: bytes) -> str:
    text = data[:200].decode("utf-8", "replace")
    return text + ("..." if len(data) > 200 else "")
