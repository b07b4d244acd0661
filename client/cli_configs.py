"""``minikafka configs``: describe and alter topic, broker and broker-logger configs, as ``kafka-configs``.

The options are kafka-configs' (``--bootstrap-server`` mode):

- ``--entity-type topics|brokers|broker-loggers`` with ``--entity-name NAME``
  (a topic, or a broker id), or ``--entity-default`` for the cluster-wide
  default of dynamic broker configs; the shortcuts ``--topic T``,
  ``--broker ID``, ``--broker-defaults``, ``--broker-logger ID``.
- ``--describe``: the dynamic configs of the entity (``--all``: every config,
  static and default ones too), each as ``name=value sensitive=... synonyms={SOURCE:name=value, ...}``;
  without a name, every topic / every broker and the default / every broker's loggers.
- ``--alter --add-config k1=v1,k2=[a,b] --delete-config k3,k4`` (or
  ``--add-config-file FILE`` of ``k=v`` lines): IncrementalAlterConfigs SET and
  DELETE, other configs left as they are. A config to delete that is not set,
  or a logger that does not exist, is an error before anything is sent.

Users' and client-ids' quotas and SCRAM credentials are ``minikafka quotas`` and
``minikafka users``. A refused change is one error line with the broker's
message (exit 1); ``--json`` prints the entries or the change as JSON.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from client.admin import BROKER, BROKER_LOGGER, TOPIC, AdminClient, ConfigEntry
from client.cli_support import CliError, add_common, admin_client, emit_json, read_properties
from client.errors import KafkaError

ENTITY_TYPES = {"topics": TOPIC, "brokers": BROKER, "broker-loggers": BROKER_LOGGER}
ELSEWHERE = {"users": "minikafka quotas / minikafka users", "clients": "minikafka quotas", "ips": None}
DYNAMIC_SOURCE = {TOPIC: "DYNAMIC_TOPIC_CONFIG", BROKER: "DYNAMIC_BROKER_CONFIG"}
_SPLIT = re.compile(r",(?=[^\]]*(?:\[|$))")  # commas outside [...]


def add_configs_parser(sub: Any) -> None:
    """Add ``configs`` to the ``minikafka`` subparsers ``sub``."""
    p = sub.add_parser(
        "configs",
        help="describe and alter topic, broker and broker-logger configs (like kafka-configs)",
        description="Describe and alter configs of topics, brokers (dynamic broker configs) and broker "
        "loggers, with kafka-configs' options.",
    )
    add_common(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the configs of the entity")
    action.add_argument("--alter", action="store_true", help="change configs of the entity")
    p.add_argument(
        "--entity-type", choices=[*ENTITY_TYPES, *ELSEWHERE], help="topics, brokers or broker-loggers"
    )
    p.add_argument("--entity-name", help="a topic name or a broker id")
    p.add_argument("--entity-default", action="store_true", help="the cluster-wide default (brokers)")
    p.add_argument("--topic", help="--entity-type topics --entity-name TOPIC")
    p.add_argument("--broker", help="--entity-type brokers --entity-name ID")
    p.add_argument("--broker-defaults", action="store_true", help="--entity-type brokers --entity-default")
    p.add_argument("--broker-logger", help="--entity-type broker-loggers --entity-name ID")
    p.add_argument("--all", action="store_true", help="with --describe: static and default configs too")
    p.add_argument("--add-config", metavar="K=V,...", help="configs to set: k1=v1,k2=[v1,v2],k3=v3")
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to set")
    p.add_argument("--delete-config", metavar="K,...", help="configs to remove: k1,k2")


def _entity(args: argparse.Namespace) -> tuple[int, str | None]:
    """(resource type, name) from the options; name None: every entity of the type (describe)."""
    chosen = []
    if args.topic is not None:
        chosen.append(("topics", args.topic))
    if args.broker is not None:
        chosen.append(("brokers", args.broker))
    if args.broker_defaults:
        chosen.append(("brokers", ""))
    if args.broker_logger is not None:
        chosen.append(("broker-loggers", args.broker_logger))
    if args.entity_type is not None:
        if args.entity_name is not None and args.entity_default:
            raise CliError("give --entity-name or --entity-default, not both")
        name = "" if args.entity_default else args.entity_name
        chosen.append((args.entity_type, name))
    elif args.entity_name is not None or args.entity_default:
        raise CliError("--entity-name and --entity-default need --entity-type")
    if not chosen:
        raise CliError(
            "name the entity: --entity-type topics|brokers|broker-loggers with --entity-name NAME"
            " or --entity-default, or --topic, --broker, --broker-defaults, --broker-logger"
        )
    if len(chosen) > 1:
        raise CliError("name one entity")
    entity_type, name = chosen[0]
    if entity_type in ELSEWHERE:
        where = ELSEWHERE[entity_type]
        raise CliError(
            f"--entity-type {entity_type} is not supported here" + (f": use {where}" if where else "")
        )
    rtype = ENTITY_TYPES[entity_type]
    if name == "" and rtype != BROKER:
        raise CliError(f"--entity-default is only for brokers, not {entity_type}")
    if name and rtype in (BROKER, BROKER_LOGGER) and not name.strip().lstrip("+-").isdigit():
        raise CliError(f"The entity name for {entity_type} must be a valid integer broker id, found: {name}")
    if name is None and args.alter:
        raise CliError("--alter needs --entity-name or --entity-default")
    return rtype, name


def parse_configs(text: str) -> dict[str, str]:
    """kafka-configs' ``--add-config`` syntax: ``k1=v1,k2=[v1,v2],k3=v3``."""
    out = {}
    for item in _SPLIT.split(text):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError('Invalid entity config: all configs to be added must be in the format "key=val".')
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _type_name(rtype: int) -> str:
    return {TOPIC: "topic", BROKER: "broker", BROKER_LOGGER: "broker-logger"}[rtype]


def _described(admin: AdminClient, rtype: int, name: str, all_configs: bool) -> list[ConfigEntry]:
    found = admin.describe_configs([(rtype, name)], include_synonyms=True)[(rtype, name)]
    if isinstance(found, KafkaError):
        raise found
    entries = sorted(found.values(), key=lambda e: e.name)
    if all_configs or rtype == BROKER_LOGGER:
        return entries
    wanted = "DYNAMIC_DEFAULT_BROKER_CONFIG" if rtype == BROKER and name == "" else DYNAMIC_SOURCE[rtype]
    return [e for e in entries if e.source == wanted]


def _value(value: str | None) -> str:
    return "null" if value is None else value


def _describe(args: argparse.Namespace, rtype: int, name: str | None) -> int:
    with admin_client(args) as admin:
        if name is not None:
            names = [name]
        elif rtype == TOPIC:
            names = sorted(t.name for t in admin.list_topics(internal=True))
        else:
            ids = sorted(b.node_id for b in admin.describe_cluster().brokers)
            names = [str(i) for i in ids] + ([""] if rtype == BROKER else [])
        described = [(n, _described(admin, rtype, n, args.all)) for n in names]
    if args.json:
        emit_json(
            [
                {
                    "entity_type": {TOPIC: "topics", BROKER: "brokers", BROKER_LOGGER: "broker-loggers"}[
                        rtype
                    ],
                    "entity_name": n if n != "" else None,
                    "configs": [
                        {
                            "name": e.name,
                            "value": e.value,
                            "source": e.source,
                            "sensitive": e.sensitive,
                            "read_only": e.read_only,
                            "synonyms": [
                                {"name": s.name, "value": s.value, "source": s.source} for s in e.synonyms
                            ],
                        }
                        for e in entries
                    ],
                }
                for n, entries in described
            ]
        )
        return 0
    for n, entries in described:
        if n == "":
            print("Default configs for brokers in the cluster are:")
        else:
            print(f"{'All' if args.all else 'Dynamic'} configs for {_type_name(rtype)} {n} are:")
        for e in entries:
            synonyms = ", ".join(f"{s.source}:{s.name}={_value(s.value)}" for s in e.synonyms)
            print(
                f"  {e.name}={_value(e.value)} sensitive={str(e.sensitive).lower()} synonyms={{{synonyms}}}"
            )
    return 0


def _alter(args: argparse.Namespace, rtype: int, name: str) -> int:
    added = parse_configs(args.add_config) if args.add_config else {}
    if args.add_config_file:
        added.update(read_properties(args.add_config_file, "--add-config-file"))
    deleted = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
    if not added and not deleted:
        raise CliError("--alter needs --add-config, --add-config-file or --delete-config")
    with admin_client(args) as admin:
        if rtype == BROKER_LOGGER:
            known = {e.name for e in _described(admin, rtype, name, True)}
            unknown = [k for k in [*deleted, *added] if k not in known]
            if unknown:
                raise CliError(f"Invalid broker logger(s): {','.join(unknown)}")
        elif deleted:
            current = {e.name for e in _described(admin, rtype, name, False)}
            missing = [k for k in deleted if k not in current]
            if missing:
                raise CliError(f"Invalid config(s): {','.join(missing)}")
        admin.alter_configs((rtype, name), added, deleted)
    if args.json:
        emit_json({"entity_name": name or None, "set": added, "deleted": deleted})
    elif name == "":
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for {_type_name(rtype)} {name}.")
    return 0


def cmd_configs(args: argparse.Namespace) -> int:
    """Run ``configs --describe`` or ``configs --alter``; returns the exit code."""
    rtype, name = _entity(args)
    if args.alter:
        if args.all:
            raise CliError("--all is only for --describe")
        assert name is not None
        return _alter(args, rtype, name)
    if args.add_config or args.add_config_file or args.delete_config:
        raise CliError("--add-config and --delete-config need --alter")
    return _describe(args, rtype, name)
