"""``minikafka quotas list|set|delete``: client quotas, as ``kafka-configs --entity-type users|clients``.

The entity: ``--user NAME`` or ``--user-default``, and/or ``--client-id NAME``
or ``--client-default`` (both parts: a user and client-id entity).

- ``list [ENTITY] [--strict]``: DescribeClientQuotas, one row per entity and
  key (``<default>`` for a default part, ``-`` for a part the entity lacks).
  Entity flags filter (an entity must have those parts, with those names;
  ``--strict``: and no other part); none: every entity.
- ``set ENTITY [--producer-byte-rate N] [--consumer-byte-rate N]
  [--request-percentage P] [--controller-mutation-rate R]``: AlterClientQuotas
  setting those keys (at least one).
- ``delete ENTITY (--producer-byte-rate ... | --all)``: removes those keys;
  ``--all`` every key the entity has (an entity with none is an error).

Each prints a table or a sentence, or JSON with ``--json``; a refused change
is one error line with the broker's message (exit 1).
"""

from __future__ import annotations

import argparse
from typing import Any

from client.admin_quotas import CLIENT_ID, DEFAULT, USER, QuotaEntity, QuotaFilterComponent
from client.cli_support import CliError, add_common, admin_client, emit_json, table

# flag -> quota key (Kafka's names, with dashes as kafka-configs users type them)
KEYS = {
    "producer_byte_rate": "--producer-byte-rate",
    "consumer_byte_rate": "--consumer-byte-rate",
    "request_percentage": "--request-percentage",
    "controller_mutation_rate": "--controller-mutation-rate",
}


def add_quotas_parser(sub: Any) -> None:
    """Add ``quotas`` and its actions to the ``minikafka`` subparsers ``sub``."""
    quotas = sub.add_parser("quotas", help="list, set and delete client quotas of users and client-ids")
    qsub = quotas.add_subparsers(dest="action", required=True)
    p = qsub.add_parser("list", help="client quotas, one row per entity and key")
    add_common(p)
    _entity_flags(p)
    p.add_argument("--strict", action="store_true", help="only entities made of exactly the given parts")

    p = qsub.add_parser("set", help="set quota keys of an entity")
    add_common(p)
    _entity_flags(p)
    for key, flag in KEYS.items():
        p.add_argument(flag, dest=key, type=float, metavar="N", help=f"set {key}")

    p = qsub.add_parser("delete", help="remove quota keys of an entity")
    add_common(p)
    _entity_flags(p)
    for key, flag in KEYS.items():
        p.add_argument(flag, dest=key, action="store_true", help=f"remove {key}")
    p.add_argument("--all", action="store_true", help="remove every quota key the entity has")


def _entity_flags(p: argparse.ArgumentParser) -> None:
    user = p.add_mutually_exclusive_group()
    user.add_argument("--user", metavar="NAME", help="the user (principal name, e.g. alice)")
    user.add_argument("--user-default", action="store_true", help="the default user")
    client = p.add_mutually_exclusive_group()
    client.add_argument("--client-id", metavar="NAME", help="the client-id")
    client.add_argument("--client-default", action="store_true", help="the default client-id")


def _entity(args: argparse.Namespace) -> QuotaEntity:
    user = DEFAULT if args.user_default else args.user
    client = DEFAULT if args.client_default else args.client_id
    if user is None and client is None:
        raise CliError("name the entity: --user NAME, --user-default, --client-id NAME or --client-default")
    return QuotaEntity(user=user, client_id=client)


def _describe(entity: QuotaEntity) -> str:
    parts = []
    if entity.user is not None:
        parts.append("the default user" if entity.user == DEFAULT else f"user {entity.user}")
    if entity.client_id is not None:
        parts.append(
            "the default client-id" if entity.client_id == DEFAULT else f"client-id {entity.client_id}"
        )
    return " and ".join(parts)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _json_entity(entity: QuotaEntity) -> dict[str, str | None]:
    return {"user": entity.user, "client_id": entity.client_id}


def _list(args: argparse.Namespace) -> int:
    components = []
    user = DEFAULT if args.user_default else args.user
    client = DEFAULT if args.client_default else args.client_id
    if user is not None:
        components.append(QuotaFilterComponent(USER, user))
    if client is not None:
        components.append(QuotaFilterComponent(CLIENT_ID, client))
    with admin_client(args) as admin:
        found = admin.describe_client_quotas(components, strict=args.strict)
    order = sorted(
        found, key=lambda e: (e.user is not None, e.user or "", e.client_id is not None, e.client_id or "")
    )
    if args.json:
        emit_json(
            [
                {**_json_entity(e), "quotas": {k: _number(v) for k, v in sorted(found[e].items())}}
                for e in order
            ]
        )
        return 0
    rows = [
        (e.user or "-", e.client_id or "-", k, _number(v)) for e in order for k, v in sorted(found[e].items())
    ]
    table(rows, ["USER", "CLIENT-ID", "KEY", "VALUE"])
    return 0


def _set(args: argparse.Namespace) -> int:
    entity = _entity(args)
    values = {key: getattr(args, key) for key in KEYS if getattr(args, key) is not None}
    if not values:
        raise CliError("nothing to set: give " + ", ".join(f"{f} N" for f in KEYS.values()))
    with admin_client(args) as admin:
        error = admin.alter_client_quotas({entity: values}).get(entity)
    if error is not None:
        raise error
    if args.json:
        emit_json({**_json_entity(entity), "set": {k: _number(v) for k, v in values.items()}})
    else:
        settings = ", ".join(f"{k}={_number(v)}" for k, v in values.items())
        print(f"Set {settings} for {_describe(entity)}.")
    return 0


def _delete(args: argparse.Namespace) -> int:
    entity = _entity(args)
    keys = [key for key in KEYS if getattr(args, key)]
    if args.all and keys:
        raise CliError("give either --all or the keys to remove, not both")
    if not args.all and not keys:
        raise CliError("nothing to delete: give --all or " + ", ".join(KEYS.values()))
    with admin_client(args) as admin:
        if args.all:
            components = [QuotaFilterComponent(USER, entity.user)] if entity.user is not None else []
            if entity.client_id is not None:
                components.append(QuotaFilterComponent(CLIENT_ID, entity.client_id))
            keys = sorted(admin.describe_client_quotas(components, strict=True).get(entity, {}))
            if not keys:
                raise CliError(f"{_describe(entity)} has no quotas")
        error = admin.alter_client_quotas({entity: dict.fromkeys(keys)}).get(entity)
    if error is not None:
        raise error
    if args.json:
        emit_json({**_json_entity(entity), "deleted": keys})
    else:
        print(f"Deleted {', '.join(keys)} of {_describe(entity)}.")
    return 0


def cmd_quotas(args: argparse.Namespace) -> int:
    """Run ``quotas list``, ``quotas set`` or ``quotas delete``; returns the exit code."""
    if args.action == "list":
        return _list(args)
    if args.action == "set":
        return _set(args)
    return _delete(args)
