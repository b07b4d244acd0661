"""``minikafka acls add|list|remove``: a cluster's ACLs, with kafka-acls' options.

Resources (repeatable, any mix): ``--topic T``, ``--group G``,
``--transactional-id X``, ``--cluster``; their names are patterns of
``--resource-pattern-type`` (default ``literal``, as kafka-acls; ``add`` takes
``literal`` or ``prefixed``, ``list`` and ``remove`` also ``any`` and
``match``). The cluster is always the LITERAL ``kafka-cluster`` resource
(kafka-acls drops ``--cluster`` under another pattern type).

- ``add``: one ACL per resource, principal, operation and host:
  ``--allow-principal``/``--deny-principal Type:name`` (repeatable, at least
  one), ``--allow-host``/``--deny-host`` (repeatable; default ``*``),
  ``--operation`` (repeatable, Kafka's names in any case: Read, Write,
  IdempotentWrite...; default All). Operations a resource type does not have
  are refused, as kafka-acls does. Shortcuts instead of ``--operation``
  (and of denials): ``--producer`` (WRITE, DESCRIBE, CREATE on the topics;
  WRITE, DESCRIBE on the transactional ids; with ``--idempotent`` also
  IDEMPOTENT_WRITE on the cluster) and ``--consumer`` (READ, DESCRIBE on the
  topics, READ on the groups; needs ``--topic`` and ``--group``).
- ``list``: the ACLs of the resources (every ACL when none is named),
  optionally only those of ``--principal`` principals, as a table
  (RESOURCE_TYPE, NAME, PATTERN, PRINCIPAL, HOST, OPERATION, PERMISSION) or
  JSON.
- ``remove``: the same options as ``add`` select exactly those ACLs; with no
  principal, every ACL of the resources goes. Asks for confirmation on a
  terminal unless ``--force``; without a terminal and without ``--force`` it
  refuses (exit 1).

Bad option combinations are usage errors (exit 2); the broker's refusals
(SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED) are
one ``minikafka: error:`` line (exit 1). ``--command-config`` reaches a
secured listener.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any, NoReturn

from client.admin_acls import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from client.cli_support import CliError, add_common, admin_client, emit_json, table
from client.errors import KafkaError

HEADERS = ["RESOURCE_TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"]
OPERATIONS = [op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
Op = AclOperation

# AclEntry.supportedOperations: what each resource type has (besides All).
SUPPORTED: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        Op.CREATE,
        Op.ALTER,
        Op.DESCRIBE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.WRITE, Op.DESCRIBE),
}
CLUSTER = (ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
Resource = tuple[ResourceType, str, PatternType]


def _principal(text: str) -> str:
    """A ``Type:name`` principal (SecurityUtils.parseKafkaPrincipal's check)."""
    if ":" not in text.strip():
        raise argparse.ArgumentTypeError(
            f"expected principalType:principalName (e.g. User:alice), got {text!r}"
        )
    return text.strip()


def _operation(text: str) -> AclOperation:
    try:
        op = AclOperation.from_name(text)
    except ValueError:
        op = AclOperation.UNKNOWN
    if op not in OPERATIONS:
        names = ", ".join(o.kafka_name for o in OPERATIONS)
        raise argparse.ArgumentTypeError(f"unknown operation {text!r} (one of {names})")
    return op


def add_acls_parser(sub: Any) -> None:
    """Add ``acls`` and its actions to the ``minikafka`` subparsers ``sub``."""
    acls = sub.add_parser("acls", help="add, list and remove ACLs (needs a broker with an authorizer)")
    asub = acls.add_subparsers(dest="action", required=True)
    p = asub.add_parser("add", help="add ACLs")
    _resource_flags(p, ("literal", "prefixed"))
    _entry_flags(p)
    p = asub.add_parser("list", help="list ACLs (of the resources given; default all)")
    _resource_flags(p, ("literal", "prefixed", "any", "match"))
    p.add_argument(
        "--principal", action="append", default=[], type=_principal, help="only this principal's ACLs"
    )
    p = asub.add_parser("remove", help="remove ACLs (asks first, unless --force)")
    _resource_flags(p, ("literal", "prefixed", "any", "match"))
    _entry_flags(p)
    p.add_argument("--force", action="store_true", help="do not ask for confirmation")


def _resource_flags(p: argparse.ArgumentParser, pattern_types: tuple[str, ...]) -> None:
    add_common(p)
    p.set_defaults(acls_parser=p)
    p.add_argument("--topic", action="append", default=[], help="topic (repeatable; * for all topics)")
    p.add_argument("--group", action="append", default=[], help="consumer group (repeatable; * for all)")
    p.add_argument(
        "--transactional-id",
        action="append",
        default=[],
        metavar="ID",
        help="transactional id (repeatable; * for all)",
    )
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument(
        "--resource-pattern-type",
        type=str.lower,
        default="literal",
        choices=pattern_types,
        help="how resource names match (default literal)",
    )


def _entry_flags(p: argparse.ArgumentParser) -> None:
    for kind in ("allow", "deny"):
        p.add_argument(
            f"--{kind}-principal",
            action="append",
            default=[],
            type=_principal,
            metavar="TYPE:NAME",
            help=f"principal to {kind} (repeatable), e.g. User:alice",
        )
        p.add_argument(
            f"--{kind}-host",
            action="append",
            default=[],
            metavar="HOST",
            help=f"host of the --{kind}-principal principals (repeatable; default *)",
        )
    p.add_argument(
        "--operation",
        action="append",
        default=[],
        type=_operation,
        metavar="OP",
        help="operation (repeatable; Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
        "DescribeConfigs, AlterConfigs, IdempotentWrite, All...; default All)",
    )
    p.add_argument(
        "--producer", action="store_true", help="Write, Describe, Create on topics (Write, Describe on ids)"
    )
    p.add_argument(
        "--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster"
    )
    p.add_argument("--consumer", action="store_true", help="Read, Describe on topics and Read on groups")


# -- what the options mean ---------------------------------------------------------------------------


def _usage(args: argparse.Namespace, message: str) -> NoReturn:
    """Exit 2 with ``message`` under the action's usage line."""
    args.acls_parser.error(message)


def resources(args: argparse.Namespace) -> list[Resource]:
    """The resources the options name, each once: topics, the cluster, groups, transactional ids."""
    kind = PatternType.from_name(args.resource_pattern_type)
    out = [(ResourceType.TOPIC, t.strip(), kind) for t in args.topic]
    if args.cluster or getattr(args, "idempotent", False):
        out.append(CLUSTER)
    out += [(ResourceType.GROUP, g.strip(), kind) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, x, kind) for x in args.transactional_id]
    return list(dict.fromkeys(out))


def _entries(args: argparse.Namespace, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    """Every principal x operation x host of the allow, then the deny, options."""
    out = []
    ops = list(operations)
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
        (args.deny_principal, args.deny_host, AclPermissionType.DENY),
    ):
        for principal in dict.fromkeys(principals):
            for op in ops:
                for host in dict.fromkeys(h.strip() for h in hosts or [WILDCARD_HOST]):
                    out.append(AccessControlEntry(principal, host, op, permission))
    return out


def _check(args: argparse.Namespace) -> None:
    """kafka-acls' refusals of option combinations (and of hosts without principals)."""
    role = args.producer or args.consumer
    if role and (args.operation or args.deny_principal or args.deny_host):
        _usage(
            args, "--producer and --consumer cannot be used with --operation, --deny-principal or --deny-host"
        )
    if args.producer and not args.topic:
        _usage(args, "with --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        _usage(args, "the --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic or not args.group or (not args.producer and (args.cluster or args.transactional_id))
    ):
        _usage(
            args,
            "with --consumer you must specify a --topic and a --group "
            "and no --cluster or --transactional-id option should be specified",
        )
    for kind in ("allow", "deny"):
        if getattr(args, f"{kind}_host") and not getattr(args, f"{kind}_principal"):
            _usage(args, f"--{kind}-host needs --{kind}-principal")
    if not resources(args):
        _usage(
            args,
            "you must provide at least one resource: --topic, --group, --transactional-id or --cluster",
        )


def acls_by_resource(args: argparse.Namespace) -> dict[Resource, list[AccessControlEntry]]:
    """The ACLs ``add``/``remove`` options name, per resource, as kafka-acls builds them.

    Without --producer/--consumer: every entry (--operation, default All) on
    every resource. --producer: WRITE, DESCRIBE, CREATE on topics; WRITE,
    DESCRIBE on transactional ids; IDEMPOTENT_WRITE on the cluster with
    --idempotent. --consumer (also with --producer): READ, DESCRIBE on topics;
    READ on groups. Exits 2 when an operation does not apply to a resource type.
    """
    named = resources(args)
    out: dict[Resource, list[AccessControlEntry]] = {}
    if not args.producer and not args.consumer:
        entries = _entries(args, args.operation or [Op.ALL])
        out = {r: entries for r in named}
    if args.producer:
        for r in named:
            if r[0] == ResourceType.TOPIC:
                out[r] = _entries(args, [Op.WRITE, Op.DESCRIBE, Op.CREATE])
            elif r[0] == ResourceType.TRANSACTIONAL_ID:
                out[r] = _entries(args, [Op.WRITE, Op.DESCRIBE])
        if args.idempotent:
            out[CLUSTER] = _entries(args, [Op.IDEMPOTENT_WRITE])
    if args.consumer:
        for r in named:
            ops = {ResourceType.TOPIC: [Op.READ, Op.DESCRIBE], ResourceType.GROUP: [Op.READ]}.get(r[0])
            if ops is not None:
                out[r] = list(dict.fromkeys(out.get(r, []) + _entries(args, ops)))
    for (rtype, _, _), entries in out.items():
        valid = (Op.ALL, *SUPPORTED[rtype])
        if any(e.operation not in valid for e in entries):
            names = ", ".join(o.kafka_name for o in valid)
            _usage(args, f"ResourceType {rtype.name} only supports operations {names}")
    return out


# -- output --------------------------------------------------------------------------------------------


def _row(b: AclBinding) -> tuple[str, ...]:
    p, e = b.pattern, b.entry
    return (
        p.resource_type.name,
        p.name,
        p.pattern_type.name,
        e.principal,
        e.host,
        e.operation.name,
        e.permission_type.name,
    )


def _json(b: AclBinding) -> dict[str, str]:
    keys = ("resource_type", "name", "pattern_type", "principal", "host", "operation", "permission_type")
    return dict(zip(keys, _row(b), strict=True))


def _sorted(bindings: Iterable[AclBinding]) -> list[AclBinding]:
    """Each ACL once, by resource type, name, pattern, principal, host, operation, permission."""

    def key(b: AclBinding) -> tuple[Any, ...]:
        p, e = b.pattern, b.entry
        return (p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation, e.permission_type)

    return sorted(dict.fromkeys(bindings), key=key)


def _show(args: argparse.Namespace, bindings: list[AclBinding], verb: str) -> None:
    """Print ``bindings`` as JSON, or a sentence with ``verb`` and a table (nothing when none)."""
    if args.json:
        emit_json([_json(b) for b in bindings])
    elif bindings:
        print(f"{verb} {len(bindings)} ACL{'s' if len(bindings) != 1 else ''}:")
        table([_row(b) for b in bindings], HEADERS)


def _failures(errors: Iterable[KafkaError]) -> CliError | None:
    """One error for the distinct failures (the same refusal of every ACL is said once)."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    return CliError("; ".join(texts)) if texts else None


# -- actions -----------------------------------------------------------------------------------------


def _add(args: argparse.Namespace) -> int:
    _check(args)
    if not args.allow_principal and not args.deny_principal:
        _usage(args, "you must specify one of: --allow-principal, --deny-principal when trying to add ACLs")
    bindings = [
        AclBinding(ResourcePattern(*r), e) for r, entries in acls_by_resource(args).items() for e in entries
    ]
    with admin_client(args) as admin:
        results = admin.create_acls(bindings)
    created = [b for b, error in zip(bindings, results, strict=True) if error is None]
    failure = _failures(e for e in results if e is not None)
    if created or failure is None:
        _show(args, created, "Added")
    if failure is not None:
        raise failure
    return 0


def _list(args: argparse.Namespace) -> int:
    named = resources(args)
    filters = [
        AclBindingFilter(rtype, name, kind, principal)
        for rtype, name, kind in named or [(ResourceType.ANY, None, PatternType.ANY)]
        for principal in dict.fromkeys(args.principal) or [None]
    ]
    found: list[AclBinding] = []
    with admin_client(args) as admin:
        for f in filters:
            found += admin.describe_acls(f)
    bindings = _sorted(found)
    if args.json:
        emit_json([_json(b) for b in bindings])
    else:
        table([_row(b) for b in bindings], HEADERS)
    return 0


def _filter_text(f: AclBindingFilter) -> str:
    where = f"{f.resource_type.name} {f.name} ({f.pattern_type.name})"
    if f.principal is None:
        return f"{where}: every ACL"
    return f"{where}: {f.permission_type.name} {f.principal} {f.operation.name} from host {f.host}"


def _confirm(args: argparse.Namespace, filters: list[AclBindingFilter]) -> None:
    """Return when the user agrees to the removal (or --force); else raise `CliError`."""
    if args.force:
        return
    if not sys.stdin.isatty():
        raise CliError("refusing to remove ACLs without confirmation: stdin is not a terminal (use --force)")
    lines = "".join(f"  {_filter_text(f)}\n" for f in filters)
    sys.stderr.write(f"Remove these ACLs?\n{lines}Are you sure? (y/n) ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CliError("not confirmed: no ACL removed")


def _remove(args: argparse.Namespace) -> int:
    _check(args)
    if args.operation and not args.allow_principal and not args.deny_principal:
        _usage(args, "--operation needs --allow-principal or --deny-principal (without one, every ACL goes)")
    filters = []
    for (rtype, name, kind), entries in acls_by_resource(args).items():
        if not args.allow_principal and not args.deny_principal:
            filters.append(AclBindingFilter(rtype, name, kind))
        for e in entries:
            filters.append(
                AclBindingFilter(rtype, name, kind, e.principal, e.host, e.operation, e.permission_type)
            )
    _confirm(args, filters)
    with admin_client(args) as admin:
        results = admin.delete_acls(filters)
    removed = _sorted(b for r in results if not isinstance(r, KafkaError) for b in r)
    failure = _failures(r for r in results if isinstance(r, KafkaError))
    if failure is None and not removed and not args.json:
        print("No ACL matched.")
    elif removed or failure is None:
        _show(args, removed, "Removed")
    if failure is not None:
        raise failure
    return 0


def cmd_acls(args: argparse.Namespace) -> int:
    """Run ``acls add``, ``acls list`` or ``acls remove``; returns the exit code."""
    if args.action == "add":
        return _add(args)
    if args.action == "list":
        return _list(args)
    return _remove(args)
