"""The client commands of ``minikafka``: topics, produce, consume, groups, perf, transactions, users, acls,
quotas, configs, partitions.

`broker.cli.main` hands these commands to `main` here. Every command takes
``--bootstrap-server HOST:PORT`` (default localhost:9092), prints tables for
people by default and JSON with ``--json``, and reports failure as one line on
stderr: ``minikafka: error: ...``.

Exit codes: 0 success; 1 the operation failed (broker unreachable, unknown
topic or group, a rejected request, records not delivered); 2 bad usage
(argparse); 130 interrupted by Ctrl-C while a command other than consume ran
(consume stops cleanly on Ctrl-C and exits 0).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from client import times
from client.admin import TOPIC, AdminClient, NewTopic
from client.cli_acls import add_acls_parser, cmd_acls
from client.cli_configs import add_configs_parser, cmd_configs
from client.cli_partitions import add_partitions_parser, cmd_partitions
from client.cli_quotas import add_quotas_parser, cmd_quotas
from client.cli_support import CliError, command_config, emit_json, table
from client.cli_support import add_common as _common
from client.cli_support import admin_client as _admin
from client.cli_transactions import add_transactions_parser, cmd_transactions
from client.cli_users import add_users_parser, cmd_users
from client.consumer import Consumer
from client.errors import KafkaError, KafkaResponseError
from client.offset_reset import ResetStrategy, ensure_group_inactive, execute_offset_reset, plan_offset_reset
from client.producer import Producer
from client.types import ConsumerRecord, OffsetAndTimestamp, TopicPartition
from protocol.errors import ErrorCode

COMMANDS = (
    "topics",
    "produce",
    "consume",
    "groups",
    "perf",
    "transactions",
    "users",
    "acls",
    "quotas",
    "configs",
    "partitions",
)


# -- output helpers (the shared ones are in client.cli_support) ------------------------------------


def _text(data: bytes | None) -> Any:
    """JSON form of key/value bytes: a string when UTF-8, else {"base64": ...}; None stays null."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def parse_time(text: str) -> int:
    """ms since the epoch from digits (ms) or an ISO-8601 date/time (local time when no zone is given)."""
    try:
        return times.parse_time(text, local=True)
    except ValueError:
        raise CliError(
            f"cannot read {text.strip()!r} as a time: use ms since the epoch or ISO 8601"
        ) from None


def parse_kv(items: Iterable[str], what: str) -> list[tuple[str, str]]:
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{what} {item!r} is not key=value")
        out.append((key, value))
    return out


# -- argument parsing ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minikafka", description="minikafka client commands")
    sub = parser.add_subparsers(dest="command", required=True)

    topics = sub.add_parser("topics", help="create, list, describe, alter and delete topics")
    tsub = topics.add_subparsers(dest="action", required=True)
    p = tsub.add_parser("list", help="list topics")
    _common(p)
    p.add_argument("--internal", action="store_true", help="include internal topics (__consumer_offsets)")
    p = tsub.add_parser("create", help="create a topic")
    _common(p)
    p.add_argument("topic")
    p.add_argument(
        "--partitions", type=int, default=-1, help="partition count (default: the broker's num.partitions)"
    )
    p.add_argument("--replication-factor", type=int, default=-1)
    p.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="topic config (repeatable)"
    )
    p.add_argument("--if-not-exists", action="store_true", help="succeed if the topic already exists")
    p = tsub.add_parser("describe", help="partitions, leaders, offsets and configs of topics")
    _common(p)
    p.add_argument("topics", nargs="*", help="topics (default: all)")
    p = tsub.add_parser("delete", help="delete topics")
    _common(p)
    p.add_argument("topics", nargs="+")
    p.add_argument("--if-exists", action="store_true", help="succeed for topics that do not exist")
    p = tsub.add_parser("alter", help="change topic configs, add partitions")
    _common(p)
    p.add_argument("topic")
    p.add_argument("--partitions", type=int, help="raise the partition count to this (never lowers it)")
    p.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="set a config (repeatable)"
    )
    p.add_argument(
        "--delete-config", action="append", default=[], metavar="KEY", help="reset a config to its default"
    )

    p = sub.add_parser("produce", help="send lines from stdin or a file as records")
    _common(p)
    p.add_argument("topic")
    p.add_argument("--file", help="read lines from this file instead of stdin")
    p.add_argument("--key-separator", help="split each line at the first SEP into key and value")
    p.add_argument(
        "--header", action="append", default=[], metavar="KEY=VALUE", help="header on every record"
    )
    p.add_argument("--partition", type=int, help="send every record to this partition")
    p.add_argument("--acks", default="all", choices=["all", "-1", "0", "1"])
    p.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument(
        "-X", "--property", action="append", default=[], metavar="KEY=VALUE", help="producer config"
    )

    p = sub.add_parser("consume", help="print records of a topic")
    _common(p)
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    start.add_argument("--offset", help="start offset: a number (needs --partition), earliest or latest")
    start.add_argument("--from-time", help="start at the first record at/after this time (ms or ISO 8601)")
    p.add_argument("--partition", type=int, help="only this partition")
    p.add_argument("--group", help="consume as a member of this group (commits offsets)")
    p.add_argument("--max-messages", type=int, help="exit after this many records")
    p.add_argument("--idle-timeout-ms", type=int, help="exit when no record arrives for this long")
    p.add_argument(
        "--format",
        help="Python format string over {topic} {partition} {offset} {timestamp} {key} {value} {headers}",
    )
    p.add_argument("--print-key", action="store_true")
    p.add_argument("--print-partition", action="store_true")
    p.add_argument("--print-offset", action="store_true")
    p.add_argument("--print-timestamp", action="store_true")
    p.add_argument("--print-headers", action="store_true")
    p.add_argument("--separator", default="\t", help="between printed fields (default: tab)")
    p.add_argument(
        "--isolation-level", default="read_uncommitted", choices=["read_uncommitted", "read_committed"]
    )
    p.add_argument(
        "-X", "--property", action="append", default=[], metavar="KEY=VALUE", help="consumer config"
    )

    groups = sub.add_parser("groups", help="list, describe, delete consumer groups; lag; reset offsets")
    gsub = groups.add_subparsers(dest="action", required=True)
    p = gsub.add_parser("list", help="list groups")
    _common(p)
    p = gsub.add_parser("describe", help="members, assignments, offsets and lag of a group")
    _common(p)
    p.add_argument("group")
    p = gsub.add_parser("lag", help="lag of a group per partition, with totals")
    _common(p)
    p.add_argument("group")
    p = gsub.add_parser("delete", help="delete groups (they must have no members)")
    _common(p)
    p.add_argument("groups", nargs="+")
    p = gsub.add_parser(
        "reset-offsets", help="plan (or with --execute, commit) new offsets for an inactive group"
    )
    _common(p)
    p.add_argument("group")
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,P...]", help="topic, optionally some partitions"
    )
    scope.add_argument("--all-topics", action="store_true", help="every topic the group has offsets for")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int)
    to.add_argument("--to-datetime", help="ms or ISO 8601 (e.g. 2024-01-31T12:00:00)")
    to.add_argument("--shift-by", type=int, help="move each committed offset by N (may be negative)")
    p.add_argument("--execute", action="store_true", help="commit the new offsets (default: dry run)")
    p.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")

    perf = sub.add_parser("perf", help="throughput tests")
    psub = perf.add_subparsers(dest="action", required=True)
    p = psub.add_parser("produce", help="produce N records of S bytes as fast as possible")
    _common(p)
    p.add_argument("topic")
    p.add_argument("--num-records", type=int, default=100000)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--throughput", type=int, default=-1, help="records/s cap (-1: none)")
    p.add_argument("--acks", default="1", choices=["all", "-1", "0", "1"])
    p.add_argument("--batch-size", type=int, default=1_000_000)
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument(
        "--progress", action="store_true", help="draw the progress bar even when stderr is not a terminal"
    )
    p.add_argument(
        "-X", "--property", action="append", default=[], metavar="KEY=VALUE", help="producer config"
    )
    p = psub.add_parser("consume", help="consume N records as fast as possible")
    _common(p)
    p.add_argument("topic")
    p.add_argument("--messages", type=int, required=True, help="how many records to read")
    p.add_argument("--group", help="read as a group member (default: all partitions from the beginning)")
    p.add_argument(
        "--progress", action="store_true", help="draw the progress bar even when stderr is not a terminal"
    )
    p.add_argument(
        "-X", "--property", action="append", default=[], metavar="KEY=VALUE", help="consumer config"
    )

    add_transactions_parser(sub)
    add_users_parser(sub)
    add_acls_parser(sub)
    add_quotas_parser(sub)
    add_configs_parser(sub)
    add_partitions_parser(sub)
    return parser


# -- commands ----------------------------------------------------------------------------------


def _require_topic(admin: AdminClient, topic: str) -> int:
    info = admin.describe_topics([topic])[topic]
    if isinstance(info, KafkaError):
        if isinstance(info, KafkaResponseError) and info.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CliError(f"topic {topic!r} does not exist")
        raise info
    return len(info.partitions)


def cmd_topics(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        if args.action == "list":
            topics = admin.list_topics(internal=args.internal)
            if args.json:
                emit_json(
                    [
                        {"name": n, "partitions": len(i.partitions), "internal": i.internal}
                        for n, i in topics.items()
                    ]
                )
            else:
                rows = [
                    (n, len(i.partitions), max((len(p.replicas) for p in i.partitions.values()), default=0))
                    for n, i in topics.items()
                ]
                table(rows, ["TOPIC", "PARTITIONS", "REPLICATION"])
            return 0
        if args.action == "create":
            configs = dict(parse_kv(args.config, "--config"))
            result = admin.create_topics(
                [NewTopic(args.topic, args.partitions, args.replication_factor, configs)],
                timeout_ms=args.timeout_ms,
            )
            err = result.get(args.topic)
            if isinstance(err, KafkaResponseError) and err.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                if args.if_not_exists:
                    err = None
                else:
                    raise CliError(f"topic {args.topic!r} already exists")
            if err is not None:
                raise err
            if args.json:
                emit_json({"created": args.topic})
            else:
                print(f"Created topic {args.topic}.")
            return 0
        if args.action == "delete":
            result = admin.delete_topics(args.topics, timeout_ms=args.timeout_ms)
            failed = []
            for name in args.topics:
                err = result.get(name)
                if isinstance(err, KafkaResponseError) and err.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    if args.if_exists:
                        continue
                    err = CliError(f"topic {name!r} does not exist")
                if err is not None:
                    failed.append(str(err))
            if args.json:
                emit_json({"deleted": [n for n in args.topics if result.get(n) is None], "errors": failed})
            else:
                for name in args.topics:
                    if result.get(name) is None:
                        print(f"Deleted topic {name}.")
            if failed:
                raise CliError("; ".join(failed))
            return 0
        if args.action == "alter":
            _require_topic(admin, args.topic)
            sets = dict(parse_kv(args.config, "--config"))
            if not sets and not args.delete_config and args.partitions is None:
                raise CliError(
                    "nothing to alter: give --partitions N, --config KEY=VALUE and/or --delete-config KEY"
                )
            if args.partitions is not None:
                err = admin.create_partitions({args.topic: args.partitions}).get(args.topic)
                if err is not None:
                    raise err
            if sets or args.delete_config:
                admin.alter_configs((TOPIC, args.topic), sets, args.delete_config)
            if args.json:
                emit_json(
                    {
                        "altered": args.topic,
                        "partitions": args.partitions,
                        "set": sets,
                        "deleted": args.delete_config,
                    }
                )
            else:
                if args.partitions is not None:
                    print(f"Topic {args.topic} now has {args.partitions} partitions.")
                if sets or args.delete_config:
                    print(f"Altered configs of topic {args.topic}.")
            return 0
        # describe
        names = args.topics or list(admin.list_topics())
        infos = admin.describe_topics(names)
        missing = [n for n, i in infos.items() if isinstance(i, KafkaError)]
        if missing and args.topics:
            raise CliError(f"topic {missing[0]!r} does not exist")
        tps = [
            TopicPartition(n, p)
            for n, i in infos.items()
            if not isinstance(i, KafkaError)
            for p in i.partitions
        ]
        earliest = admin.list_offsets(dict.fromkeys(tps, "earliest")) if tps else {}
        latest = admin.list_offsets(dict.fromkeys(tps, "latest")) if tps else {}
        configs = admin.describe_configs([(TOPIC, n) for n in names if n not in missing])
        result = []
        for name, info in infos.items():
            if isinstance(info, KafkaError):
                continue
            entries = configs.get((TOPIC, name))
            overrides = (
                {k: e.value for k, e in entries.items() if not e.is_default}
                if isinstance(entries, dict)
                else {}
            )
            parts = []
            for p in sorted(info.partitions.values(), key=lambda p: p.partition):
                tp = TopicPartition(name, p.partition)
                lo, hi = earliest.get(tp), latest.get(tp)
                parts.append(
                    {
                        "partition": p.partition,
                        "leader": p.leader,
                        "replicas": list(p.replicas),
                        "isr": list(p.isr),
                        "earliest_offset": lo.offset if isinstance(lo, OffsetAndTimestamp) else None,
                        "latest_offset": hi.offset if isinstance(hi, OffsetAndTimestamp) else None,
                    }
                )
            result.append(
                {"name": name, "internal": info.internal, "configs": overrides, "partitions": parts}
            )
        if args.json:
            emit_json(result)
            return 0
        for i, t in enumerate(result):
            if i:
                print()
            conf = ",".join(f"{k}={v}" for k, v in sorted(t["configs"].items()))
            print(f"Topic: {t['name']}\tPartitionCount: {len(t['partitions'])}\tConfigs: {conf}")
            table(
                [
                    (
                        p["partition"],
                        p["leader"],
                        ",".join(map(str, p["replicas"])),
                        ",".join(map(str, p["isr"])),
                        p["earliest_offset"],
                        p["latest_offset"],
                    )
                    for p in t["partitions"]
                ],
                ["PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"],
            )
        return 0


def _client_props(args: argparse.Namespace) -> dict[str, str]:
    return {**command_config(args), **dict(parse_kv(args.property, "--property"))}


def cmd_produce(args: argparse.Namespace) -> int:
    headers = [(k, v.encode()) for k, v in parse_kv(args.header, "--header")]
    with _admin(args):
        pass  # fail fast and clearly when the broker is unreachable
    config = {
        "bootstrap.servers": args.bootstrap_server,
        "acks": args.acks,
        "compression.type": args.compression,
        "max.block.ms": args.timeout_ms,
        "delivery.timeout.ms": max(args.timeout_ms, 30000 + 5),
        **_client_props(args),
    }
    source: TextIO = open(args.file, encoding="utf-8") if args.file else sys.stdin  # noqa: SIM115
    sent = 0
    errors: list[BaseException] = []
    counts: dict[int, int] = {}

    def delivered(err: BaseException | None, md: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            counts[md.partition] = counts.get(md.partition, 0) + 1

    try:
        with Producer(config) as producer:
            n = producer._lt.run(
                producer._core.cluster.wait_for_topic(args.topic, args.timeout_ms / 1000, fail_unknown=True)
            )
            if args.partition is not None and not 0 <= args.partition < n:
                raise CliError(f"topic {args.topic!r} has no partition {args.partition} ({n} partitions)")
            for line in source:
                line = line.rstrip("\n").rstrip("\r")
                key: bytes | None = None
                value = line
                if args.key_separator:
                    k, sep, v = line.partition(args.key_separator)
                    if sep:
                        key, value = k.encode(), v
                producer.send(
                    args.topic,
                    value.encode(),
                    key,
                    partition=args.partition,
                    headers=headers or None,
                    on_delivery=delivered,
                )
                sent += 1
            producer.flush()
    except KafkaResponseError as exc:
        if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CliError(
                f"topic {args.topic!r} does not exist (and the broker does not create topics on use)"
            ) from None
        raise
    finally:
        if args.file:
            source.close()
    ok = sent - len(errors)
    if args.json:
        emit_json({"topic": args.topic, "produced": ok, "failed": len(errors), "partitions": counts})
    else:
        print(f"Produced {ok} record(s) to {args.topic}.", file=sys.stderr)
    if errors:
        raise CliError(f"{len(errors)} record(s) not delivered: {errors[0]}")
    return 0


def _formatter(args: argparse.Namespace) -> Callable[[ConsumerRecord], str]:
    if args.json:

        def as_json(r: ConsumerRecord) -> str:
            return json.dumps(
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "timestamp_type": "LogAppendTime" if r.timestamp_type else "CreateTime",
                    "key": _text(r.key),  # type: ignore[arg-type]
                    "value": _text(r.value),  # type: ignore[arg-type]
                    "headers": [[k, _text(v)] for k, v in r.headers],
                }
            )

        return as_json

    def s(data: Any) -> str:
        return "null" if data is None else data.decode("utf-8", "backslashreplace")

    if args.format:
        fmt = args.format.encode().decode("unicode_escape")

        def formatted(r: ConsumerRecord) -> str:
            return fmt.format(
                topic=r.topic,
                partition=r.partition,
                offset=r.offset,
                timestamp=r.timestamp,
                key=s(r.key),
                value=s(r.value),
                headers=",".join(f"{k}={s(v)}" for k, v in r.headers),
            )

        return formatted
    sep = args.separator

    def plain(r: ConsumerRecord) -> str:
        fields = []
        if args.print_timestamp:
            fields.append(f"{'LogAppendTime' if r.timestamp_type else 'CreateTime'}:{r.timestamp}")
        if args.print_partition:
            fields.append(f"Partition:{r.partition}")
        if args.print_offset:
            fields.append(f"Offset:{r.offset}")
        if args.print_headers:
            fields.append(",".join(f"{k}:{s(v)}" for k, v in r.headers) or "NO_HEADERS")
        if args.print_key:
            fields.append(s(r.key))
        fields.append(s(r.value))
        return sep.join(fields)

    return plain


def cmd_consume(args: argparse.Namespace) -> int:
    if args.offset not in (None, "earliest", "latest") and args.partition is None:
        raise CliError("--offset N needs --partition")
    if args.group and (args.offset or args.from_time or args.partition is not None):
        raise CliError("--group cannot be combined with --offset, --from-time or --partition")
    with _admin(args) as admin:
        n = _require_topic(admin, args.topic)
    if args.partition is not None and not 0 <= args.partition < n:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} ({n} partitions)")
    reset = "earliest" if args.from_beginning or args.offset == "earliest" else "latest"
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap_server,
        "auto.offset.reset": reset,
        "isolation.level": args.isolation_level,
        "default.api.timeout.ms": args.timeout_ms,
        **_client_props(args),
    }
    if args.group:
        config["group.id"] = args.group
    fmt = _formatter(args)
    count = 0
    interrupted = False
    consumer = Consumer(config=config)
    try:
        if args.group:
            consumer.subscribe([args.topic])
        else:
            parts = [args.partition] if args.partition is not None else list(range(n))
            tps = [TopicPartition(args.topic, p) for p in parts]
            consumer.assign(tps)
            if args.offset not in (None, "earliest", "latest"):
                try:
                    consumer.seek(tps[0], int(args.offset))
                except ValueError:
                    raise CliError(
                        f"--offset must be a number >= 0, earliest or latest, not {args.offset!r}"
                    ) from None
            elif args.from_time:
                when = parse_time(args.from_time)
                found = consumer.offsets_for_times(dict.fromkeys(tps, when))
                for tp, ot in found.items():
                    if ot is None:
                        consumer.seek_to_end(tp)
                    else:
                        consumer.seek(tp, ot.offset)
        idle_limit = args.idle_timeout_ms / 1000 if args.idle_timeout_ms is not None else None
        last = time.monotonic()
        out = sys.stdout
        while args.max_messages is None or count < args.max_messages:
            left = None if args.max_messages is None else args.max_messages - count
            records = consumer.poll(0.5, max_records=left)
            if records:
                out.write("".join(fmt(r) + "\n" for r in records))
                out.flush()
                count += len(records)
                last = time.monotonic()
            elif idle_limit is not None and time.monotonic() - last >= idle_limit:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        with contextlib.suppress(KeyboardInterrupt):
            consumer.close()
    if not args.json or interrupted:
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def _group_exists(admin: AdminClient, group: str) -> Any:
    desc = admin.describe_groups([group]).get(group)
    if desc is not None and desc.error is not None:
        raise desc.error
    if desc is None or (desc.state == "Dead" and not admin.list_consumer_group_offsets(group)):
        raise CliError(f"consumer group {group!r} does not exist")
    return desc


def cmd_groups(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        if args.action == "list":
            groups = admin.list_groups()
            described = admin.describe_groups(list(groups)) if groups else {}
            rows = [
                {
                    "group": g,
                    "state": described[g].state if g in described else None,
                    "protocol_type": ptype,
                    "members": len(described[g].members) if g in described else None,
                }
                for g, ptype in groups.items()
            ]
            if args.json:
                emit_json(rows)
            else:
                table(
                    [(r["group"], r["state"], r["protocol_type"], r["members"]) for r in rows],
                    ["GROUP", "STATE", "TYPE", "MEMBERS"],
                )
            return 0
        if args.action == "delete":
            result = admin.delete_groups(args.groups)
            failed = []
            for g in args.groups:
                err = result.get(g)
                if isinstance(err, KafkaResponseError) and err.code == ErrorCode.NON_EMPTY_GROUP:
                    failed.append(f"group {g!r} still has members")
                elif isinstance(err, KafkaResponseError) and err.code == ErrorCode.GROUP_ID_NOT_FOUND:
                    failed.append(f"consumer group {g!r} does not exist")
                elif err is not None:
                    failed.append(str(err))
                elif not args.json:
                    print(f"Deleted group {g}.")
            if args.json:
                emit_json({"deleted": [g for g in args.groups if result.get(g) is None], "errors": failed})
            if failed:
                raise CliError("; ".join(failed))
            return 0
        if args.action in ("describe", "lag"):
            desc = _group_exists(admin, args.group)
            lags = admin.consumer_group_lag(args.group)
            rows = [
                {
                    "topic": lag.partition.topic,
                    "partition": lag.partition.partition,
                    "current_offset": lag.committed,
                    "log_end_offset": lag.end_offset,
                    "lag": lag.lag,
                    "consumer_id": lag.member_id or None,
                    "host": lag.host or None,
                    "client_id": lag.client_id or None,
                }
                for lag in lags
            ]
            total = sum(r["lag"] or 0 for r in rows)
            if args.json:
                payload: dict[str, Any] = {
                    "group": args.group,
                    "state": desc.state,
                    "total_lag": total,
                    "partitions": rows,
                }
                if args.action == "describe":
                    payload["protocol"] = desc.protocol
                    payload["members"] = [
                        {
                            "member_id": m.member_id,
                            "client_id": m.client_id,
                            "host": m.host,
                            "assignment": [[tp.topic, tp.partition] for tp in sorted(m.assignment)],
                        }
                        for m in desc.members
                    ]
                emit_json(payload)
                return 0
            print(f"Group {args.group}: state {desc.state}, {len(desc.members)} member(s), total lag {total}")
            if args.action == "describe":
                table(
                    [
                        (
                            args.group,
                            r["topic"],
                            r["partition"],
                            r["current_offset"],
                            r["log_end_offset"],
                            r["lag"],
                            r["consumer_id"],
                            r["host"],
                            r["client_id"],
                        )
                        for r in rows
                    ],
                    [
                        "GROUP",
                        "TOPIC",
                        "PARTITION",
                        "CURRENT-OFFSET",
                        "LOG-END-OFFSET",
                        "LAG",
                        "CONSUMER-ID",
                        "HOST",
                        "CLIENT-ID",
                    ],
                )
            else:
                per_topic: dict[str, int] = {}
                for r in rows:
                    per_topic[r["topic"]] = per_topic.get(r["topic"], 0) + (r["lag"] or 0)
                table(
                    [
                        (r["topic"], r["partition"], r["current_offset"], r["log_end_offset"], r["lag"])
                        for r in rows
                    ],
                    ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"],
                )
            return 0
        return _reset_offsets(admin, args)


def _reset_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    """Plan (and with --execute commit) a reset; the planning is `client.offset_reset`'s."""
    # Checked first, as Kafka's tool does: which partitions an active group has
    # committed is still changing, so nothing below would be a stable answer.
    if args.execute:
        admin.run(ensure_group_inactive, args.group)
    tps: list[TopicPartition] | None = None
    if not args.all_topics:
        tps = []
        for spec in args.topic:
            topic, _, parts = spec.partition(":")
            n = _require_topic(admin, topic)
            if parts:
                try:
                    wanted = [int(p) for p in parts.split(",")]
                except ValueError:
                    raise CliError(f"bad partition list in {spec!r}") from None
                bad = [p for p in wanted if not 0 <= p < n]
                if bad:
                    raise CliError(f"topic {topic!r} has no partition {bad[0]}")
            else:
                wanted = list(range(n))
            tps.extend(TopicPartition(topic, p) for p in wanted)
    if args.to_earliest:
        strategy = ResetStrategy.earliest()
    elif args.to_latest:
        strategy = ResetStrategy.latest()
    elif args.to_offset is not None:
        strategy = ResetStrategy.to_offset(args.to_offset)
    elif args.shift_by is not None:
        strategy = ResetStrategy.shift_by(args.shift_by)
    else:
        strategy = ResetStrategy.to_timestamp(parse_time(args.to_datetime))
    plan = admin.run(plan_offset_reset, args.group, tps, strategy)
    if tps is None and not plan:
        raise CliError(f"consumer group {args.group!r} has no committed offsets; name topics with --topic")
    rows = [
        {
            "topic": r.partition.topic,
            "partition": r.partition.partition,
            "current_offset": r.current_offset,
            "new_offset": r.new_offset,
        }
        for r in plan
    ]
    if args.execute:
        admin.run(execute_offset_reset, args.group, plan)
    if args.json:
        emit_json({"group": args.group, "executed": bool(args.execute), "partitions": rows})
    else:
        table(
            [(args.group, r["topic"], r["partition"], r["current_offset"], r["new_offset"]) for r in rows],
            ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
        )
        if not args.execute:
            print("Dry run: no offsets changed (add --execute to apply).", file=sys.stderr)
    return 0


# -- perf ------------------------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on stderr, redrawn at most every 0.2 s."""

    def __init__(self, total: int, enabled: bool, unit_bytes: int = 0) -> None:
        self.total = max(total, 1)
        self.enabled = enabled
        self.start = time.perf_counter()
        self.last = 0.0
        self.unit_bytes = unit_bytes

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        frac = min(done / self.total, 1.0)
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        rate = done / elapsed
        mb = rate * self.unit_bytes / 1e6
        sys.stderr.write(
            f"\r[{bar}] {frac * 100:5.1f}% {done:,}/{self.total:,}  {rate:,.0f} rec/s  {mb:,.1f} MB/s "
        )
        sys.stderr.flush()

    def finish(self, done: int) -> None:
        if self.enabled:
            self.update(done, force=True)
            sys.stderr.write("\n")
            sys.stderr.flush()


def _perf_produce(args: argparse.Namespace) -> dict[str, Any]:
    with _admin(args):
        pass
    config = {
        "bootstrap.servers": args.bootstrap_server,
        "acks": args.acks,
        "batch.size": args.batch_size,
        "linger.ms": args.linger_ms,
        "compression.type": args.compression,
        "max.request.size": max(1048576, args.batch_size + 1024),
        **_client_props(args),
    }
    payload = bytes((i * 31 + 7) & 0xFF for i in range(args.record_size))
    n = args.num_records
    progress = Progress(n, args.progress or sys.stderr.isatty(), args.record_size)
    latencies: list[float] = []
    errors: list[BaseException] = []
    with Producer(config) as producer:
        producer.partitions_for(args.topic)

        def sampled(sent_at: float) -> Callable[[BaseException | None, Any], None]:
            def cb(err: BaseException | None, _md: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    latencies.append((time.perf_counter() - sent_at) * 1000)

            return cb

        start = time.perf_counter()
        send = producer.send
        topic = args.topic
        interval = 1.0 / args.throughput if args.throughput > 0 else 0.0
        for i in range(n):
            if i % 1000 == 0:
                send(topic, payload, on_delivery=sampled(time.perf_counter()))
                progress.update(i)
                if interval:
                    ahead = start + i * interval - time.perf_counter()
                    if ahead > 0:
                        time.sleep(ahead)
            else:
                send(topic, payload)
        producer.flush()
        elapsed = time.perf_counter() - start
    progress.finish(n)
    if errors:
        raise CliError(f"{len(errors)} sampled record(s) failed: {errors[0]}")
    latencies.sort()
    return {
        "records": n,
        "record_size": args.record_size,
        "seconds": round(elapsed, 3),
        "records_per_sec": round(n / elapsed, 1),
        "mb_per_sec": round(n * args.record_size / elapsed / 1e6, 2),
        "avg_latency_ms": round(sum(latencies) / len(latencies), 2) if latencies else None,
        "max_latency_ms": round(latencies[-1], 2) if latencies else None,
        "p99_latency_ms": round(latencies[int(len(latencies) * 0.99)], 2) if latencies else None,
    }


def _perf_consume(args: argparse.Namespace) -> dict[str, Any]:
    with _admin(args) as admin:
        n_parts = _require_topic(admin, args.topic)
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap_server,
        "auto.offset.reset": "earliest",
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 4 * 1048576,
        **_client_props(args),
    }
    if args.group:
        config["group.id"] = args.group
    want = args.messages
    progress = Progress(want, args.progress or sys.stderr.isatty())
    got = 0
    nbytes = 0
    with Consumer(config=config) as consumer:
        if args.group:
            consumer.subscribe([args.topic])
        else:
            consumer.assign([TopicPartition(args.topic, p) for p in range(n_parts)])
        start = time.perf_counter()
        first = None
        idle_since = time.monotonic()
        while got < want:
            records = consumer.poll(1.0, max_records=min(100000, want - got))
            if not records:
                if time.monotonic() - idle_since > args.timeout_ms / 1000:
                    raise CliError(
                        f"only {got} of {want} records arrived within {args.timeout_ms} ms of silence"
                    )
                continue
            idle_since = time.monotonic()
            if first is None:
                first = time.perf_counter()
            got += len(records)
            for r in records:
                if r.value is not None:
                    nbytes += len(r.value)  # type: ignore[arg-type]
            progress.update(got)
        elapsed = time.perf_counter() - start
    progress.finish(got)
    return {
        "records": got,
        "mb": round(nbytes / 1e6, 3),
        "seconds": round(elapsed, 3),
        "records_per_sec": round(got / elapsed, 1),
        "mb_per_sec": round(nbytes / elapsed / 1e6, 2),
        "first_record_after_sec": round((first or start) - start, 3),
    }


def cmd_perf(args: argparse.Namespace) -> int:
    if args.action == "produce":
        if args.num_records <= 0 or args.record_size < 0:
            raise CliError("--num-records must be > 0 and --record-size >= 0")
        s = _perf_produce(args)
        if args.json:
            emit_json(s)
        else:
            print(
                f"{s['records']} records sent, {s['records_per_sec']:.1f} records/sec ({s['mb_per_sec']:.2f} MB/sec), "
                f"{s['avg_latency_ms']} ms avg latency, {s['p99_latency_ms']} ms p99, {s['max_latency_ms']} ms max latency."
            )
        return 0
    if args.messages <= 0:
        raise CliError("--messages must be > 0")
    s = _perf_consume(args)
    if args.json:
        emit_json(s)
    else:
        print(
            f"{s['records']} records consumed ({s['mb']:.1f} MB) in {s['seconds']:.2f} s: "
            f"{s['records_per_sec']:.1f} records/sec, {s['mb_per_sec']:.2f} MB/sec."
        )
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "topics": cmd_topics,
    "produce": cmd_produce,
    "consume": cmd_consume,
    "groups": cmd_groups,
    "perf": cmd_perf,
    "transactions": cmd_transactions,
    "users": cmd_users,
    "acls": cmd_acls,
    "quotas": cmd_quotas,
    "configs": cmd_configs,
    "partitions": cmd_partitions,
}


def main(argv: list[str]) -> int:
    """Run one client command (``argv`` starts with the command name); returns the exit code."""
    args = build_parser().parse_args(argv)
    if sys.platform != "win32":
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `minikafka consume ... | head` ends quietly
    try:
        return HANDLERS[args.command](args)
    except CliError as exc:
        print(f"minikafka: error: {exc}", file=sys.stderr)
    except KafkaError as exc:
        print(f"minikafka: error: {exc}", file=sys.stderr)
    except (OSError, ValueError) as exc:
        print(f"minikafka: error: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        print("minikafka: interrupted", file=sys.stderr)
        return 130
    return 1


__all__ = ["COMMANDS", "main"]

if __name__ == "__main__":  # python -m client.cli COMMAND ...: the client commands without broker/cli.py
    sys.exit(main(sys.argv[1:]))
