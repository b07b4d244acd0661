"""``minikafka partitions reassign``: move partition replicas, as ``kafka-reassign-partitions``.

Files are kafka-reassign-partitions' JSON:
``{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}, ...]}``
(its ``log_dirs`` are accepted and must be ``any``), and for ``--generate``
``{"version": 1, "topics": [{"topic": "t"}, ...]}``.

- ``--generate --topics-to-move-json-file F --broker-list 4,5,6``: prints the
  current assignment of those topics and a proposed one on the listed brokers
  (Kafka's placement, rack-aware when the brokers have racks unless
  ``--disable-rack-aware``, same replication factor); nothing changes.
- ``--execute --reassignment-json-file F [--throttle B]``: prints the current
  assignment (keep it to roll back) and starts the moves; refused while other
  reassignments are in progress unless ``--additional``. ``--throttle`` sets
  Kafka's replication throttle as kafka-reassign-partitions does: the rate
  (``leader.`` and ``follower.replication.throttled.rate``) on every broker
  of the moving partitions, and per topic ``leader.replication.throttled.replicas``
  (the current replicas of the moving partitions) and
  ``follower.replication.throttled.replicas`` (the replicas being added).
- ``--verify --reassignment-json-file F``: per partition, completed, still in
  progress, or not at its target. Once no reassignment is in progress in the
  cluster, the throttles are removed (unless ``--preserve-throttles``).
- ``--cancel --reassignment-json-file F``: cancels those still in progress
  (each partition goes back to its original replicas) and removes the
  throttles (unless ``--preserve-throttles``).
- ``--list``: every reassignment in progress.
- ``--decommission BROKER``: moves every replica off BROKER onto the other
  live brokers (each replaced in place by the live broker holding the fewest
  replicas that the partition lacks, so replication factors and preferred
  positions stay), prints the plan and the rollback, starts it, and with
  ``--wait`` waits until it completes.

``--json`` prints one JSON document instead of the text. Errors: one line, exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from client.admin import BROKER, TOPIC, AdminClient
from client.cli_support import CliError, add_common, admin_client, emit_json
from client.errors import KafkaError
from client.types import TopicPartition
from protocol.errors import KafkaError as PlacementError
from protocol.placement import assign_replicas

ACTIONS = ("generate", "execute", "verify", "cancel", "list")


def add_reassign_parser(psub: Any) -> None:
    p = psub.add_parser(
        "reassign", help="move partition replicas between brokers (kafka-reassign-partitions)"
    )
    add_common(p)
    action = p.add_mutually_exclusive_group(required=True)
    for name in ACTIONS:
        action.add_argument(f"--{name}", action="store_true")
    action.add_argument("--decommission", type=int, metavar="BROKER", help="move every replica off BROKER")
    p.add_argument("--reassignment-json-file", type=Path, metavar="FILE")
    p.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE")
    p.add_argument("--broker-list", metavar="IDS", help="with --generate: the brokers to place replicas on")
    p.add_argument("--disable-rack-aware", action="store_true", help="with --generate: ignore racks")
    p.add_argument(
        "--additional", action="store_true", help="with --execute: beside reassignments in progress"
    )
    p.add_argument("--wait", action="store_true", help="with --decommission: until the moves complete")
    p.add_argument(
        "--throttle", type=int, metavar="BYTES/S", help="with --execute/--decommission: cap the copying rate"
    )
    p.add_argument(
        "--preserve-throttles", action="store_true", help="with --verify/--cancel: leave the throttles set"
    )


def cmd_reassign(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        if args.generate:
            return _generate(admin, args)
        if args.list:
            return _list(admin, args)
        if args.decommission is not None:
            return _decommission(admin, args)
        plan = _read_plan(_need(args, "reassignment_json_file"))
        if args.execute:
            return _execute(admin, args, plan)
        if args.verify:
            return _verify(admin, args, plan)
        return _cancel(admin, args, plan)


def _need(args: argparse.Namespace, name: str) -> Path:
    path = getattr(args, name)
    if path is None:
        raise CliError(f"--{name.replace('_', '-')} is required here")
    return path


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CliError(f"{path}: not JSON ({exc})") from None


def _read_plan(path: Path) -> dict[TopicPartition, list[int]]:
    doc = _load(path)
    plan: dict[TopicPartition, list[int]] = {}
    try:
        for entry in doc["partitions"]:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
            dirs = entry.get("log_dirs", ["any"] * len(replicas))
            if any(d != "any" for d in dirs):
                raise CliError(
                    f'{path}: {tp.topic}-{tp.partition}: log_dirs other than "any" are not supported'
                )
            if tp in plan:
                raise CliError(f"{path}: {tp.topic}-{tp.partition} is listed twice")
            plan[tp] = replicas
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"{path}: not a reassignment file ({exc!r})") from None
    if not plan:
        raise CliError(f"{path}: no partitions")
    return plan


def _plan_json(plan: dict[TopicPartition, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "replicas": r, "log_dirs": ["any"] * len(r)}
            for tp, r in sorted(plan.items())
        ],
    }


def _current(
    admin: AdminClient, topics: set[str], *, missing_ok: bool = False
) -> dict[TopicPartition, list[int]]:
    """Each partition's replicas; a topic that does not answer is an error (``missing_ok``: left out)."""
    out = {}
    for name, info in admin.describe_topics(sorted(topics)).items():
        if isinstance(info, KafkaError):
            if missing_ok:
                continue
            raise CliError(f"topic {name}: {info}")
        for index, part in info.partitions.items():
            out[TopicPartition(name, index)] = list(part.replicas)
    return out


def _generate(admin: AdminClient, args: argparse.Namespace) -> int:
    doc = _load(_need(args, "topics_to_move_json_file"))
    try:
        topics = {str(t["topic"]) for t in doc["topics"]}
    except (KeyError, TypeError) as exc:
        raise CliError(f"{args.topics_to_move_json_file}: not a topics file ({exc!r})") from None
    if args.broker_list is None:
        raise CliError("--broker-list is required with --generate")
    try:
        listed = [int(b) for b in args.broker_list.split(",") if b.strip()]
    except ValueError:
        raise CliError(f"--broker-list: not a list of broker ids: {args.broker_list!r}") from None
    twice = sorted({b for b in listed if listed.count(b) > 1})
    if twice:
        raise CliError(f"Broker list contains duplicate entries: {','.join(map(str, twice))}")
    current = _current(admin, topics)
    known = {b.node_id: b.rack for b in admin.describe_cluster().brokers}
    brokers = sorted(b for b in listed if b in known)  # as Kafka: only the brokers that are alive
    racks = None if args.disable_rack_aware else {b: known.get(b) for b in brokers}
    proposed: dict[TopicPartition, list[int]] = {}
    for topic in sorted(topics):
        parts = sorted(tp.partition for tp in current if tp.topic == topic)
        rf = len(current[TopicPartition(topic, parts[0])]) if parts else 1
        try:
            placed = assign_replicas(len(parts), rf, brokers, racks=racks)
        except PlacementError as exc:  # fewer brokers than replicas, racks on some brokers only
            raise CliError(f"topic {topic}: {exc}") from None
        proposed.update({TopicPartition(topic, p): placed[p] for p in parts})
    if args.json:
        emit_json({"current": _plan_json(current), "proposed": _plan_json(proposed)})
    else:
        print("Current partition replica assignment")
        print(json.dumps(_plan_json(current)))
        print()
        print("Proposed partition reassignment configuration")
        print(json.dumps(_plan_json(proposed)))
    return 0


THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _moves(
    admin: AdminClient, current: dict[TopicPartition, list[int]], plan: dict[TopicPartition, list[int]]
) -> dict[TopicPartition, tuple[list[int], list[int]]]:
    """{partition: (source replicas, target replicas)} of every move the throttles must cover: those
    in progress (their original replicas are the sources) and those of ``plan`` (Kafka's
    calculateProposedMoveMap)."""
    ongoing = admin.list_partition_reassignments()
    moves = {tp: ([r for r in o.replicas if r not in o.adding], list(o.target)) for tp, o in ongoing.items()}
    for tp, target in plan.items():
        sources = moves[tp][0] if tp in moves else current[tp]
        if sources != target:
            moves[tp] = (sources, target)
    return moves


def _set_throttles(
    admin: AdminClient,
    current: dict[TopicPartition, list[int]],
    plan: dict[TopicPartition, list[int]],
    rate: int,
) -> None:
    """Kafka's throttle for a reassignment: the rate on every broker of the plan's moves, and per
    topic moving, its sources leader-throttled and its added replicas follower-throttled."""
    moves = _moves(admin, current, plan)
    brokers = sorted({b for tp in plan for b in (*current[tp], *plan[tp])})
    for broker in brokers:
        admin.alter_configs((BROKER, str(broker)), {key: str(rate) for key in THROTTLE_RATES})
    for topic in sorted({tp.topic for tp in plan if tp in moves}):
        mine = sorted(tp for tp in moves if tp.topic == topic)
        leaders = [f"{tp.partition}:{b}" for tp in mine for b in moves[tp][0]]
        followers = [f"{tp.partition}:{b}" for tp in mine for b in moves[tp][1] if b not in moves[tp][0]]
        admin.alter_configs(
            (TOPIC, topic),
            {THROTTLED_REPLICAS[0]: ",".join(leaders), THROTTLED_REPLICAS[1]: ",".join(followers)},
        )


def _clear_throttles(admin: AdminClient, plan: dict[TopicPartition, list[int]], *, quiet: bool) -> None:
    """Remove the rates from every live broker and every broker ``plan`` names, and the throttled
    replicas lists from its topics (Kafka's clearAllThrottles)."""
    brokers = sorted(
        {b.node_id for b in admin.describe_cluster().brokers} | {b for r in plan.values() for b in r}
    )
    for broker in brokers:
        with contextlib.suppress(KafkaError):  # a broker that is down: nothing to clear there now
            admin.alter_configs((BROKER, str(broker)), delete_configs=THROTTLE_RATES)
    if not quiet:
        print(f"Clearing broker-level throttles on brokers {','.join(map(str, brokers))}")
    for topic in sorted({tp.topic for tp in plan}):
        with contextlib.suppress(KafkaError):  # a topic deleted meanwhile
            admin.alter_configs((TOPIC, topic), delete_configs=THROTTLED_REPLICAS)
        if not quiet:
            print(f"Clearing topic-level throttles on topic {topic}")


def _start(admin: AdminClient, args: argparse.Namespace, plan: dict[TopicPartition, list[int]]) -> int:
    """Kafka's executeAssignment: the rollback, the throttle, then the moves; exit 1 if any failed."""
    current = _current(admin, {tp.topic for tp in plan})
    missing = [tp for tp in plan if tp not in current]
    if missing:
        raise CliError(f"unknown partitions: {_names(missing)}")
    rollback = {tp: current[tp] for tp in plan}
    if not args.json:
        print("Current partition replica assignment\n")
        print(json.dumps(_plan_json(rollback)))
        print("\nSave this to use as the --reassignment-json-file option during rollback")
    if args.throttle is not None:
        if args.throttle < 0:
            raise CliError(f"--throttle must be a number of bytes per second, not {args.throttle}")
        _set_throttles(admin, current, plan, args.throttle)
        if not args.json:
            print(
                "Warning: You must run --verify periodically, until the reassignment completes, "
                "to ensure the throttle is removed."
            )
            print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    results = admin.alter_partition_reassignments(dict(plan))
    failed = {tp: e for tp, e in results.items() if e is not None}
    started = sorted(tp for tp in plan if tp not in failed)
    if args.json:
        emit_json(
            {
                "rollback": _plan_json(rollback),
                "started": [{"topic": tp.topic, "partition": tp.partition} for tp in started],
                "failed": [
                    {"topic": tp.topic, "partition": tp.partition, "error": str(e)}
                    for tp, e in failed.items()
                ],
            }
        )
    elif failed:
        print("Error reassigning partition(s):")
        for tp, error in sorted(failed.items()):
            print(f"{tp.topic}-{tp.partition}: {error}")
    else:
        print(
            f"Successfully started partition reassignment{'s' if len(started) != 1 else ''} for {_names(started)}"
        )
    return 1 if failed else 0


def _execute(admin: AdminClient, args: argparse.Namespace, plan: dict[TopicPartition, list[int]]) -> int:
    ongoing = admin.list_partition_reassignments()
    if ongoing and not args.additional:
        raise CliError(
            "Cannot execute because there is an existing partition assignment. "
            "Use --additional to override this and create a new partition assignment in addition to the existing one."
        )
    return _start(admin, args, plan)


def _verify(admin: AdminClient, args: argparse.Namespace, plan: dict[TopicPartition, list[int]]) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    current = _current(admin, {tp.topic for tp in plan}, missing_ok=True)
    states: dict[TopicPartition, str] = {}
    for tp, target in sorted(plan.items()):
        if tp in ongoing:
            states[tp] = "in_progress"
        elif current.get(tp) == target:
            states[tp] = "completed"
        else:
            states[tp] = "elsewhere"
    if args.json:
        emit_json(
            [
                {"topic": tp.topic, "partition": tp.partition, "state": s, "replicas": current.get(tp)}
                for tp, s in states.items()
            ]
        )
    else:
        print("Status of partition reassignment:")
        for tp, state in states.items():
            name = f"{tp.topic}-{tp.partition}"
            if state == "in_progress":
                print(f"Reassignment of partition {name} is still in progress.")
            elif state == "completed":
                print(f"Reassignment of partition {name} is completed.")
            else:
                have = ",".join(map(str, current.get(tp) or []))
                want = ",".join(map(str, plan[tp]))
                print(
                    f"There is no active reassignment of partition {name}, "
                    f"but replica set is {have} rather than {want}."
                )
    # as Kafka: the throttles go once no reassignment is left anywhere, not only this file's
    if not args.preserve_throttles and not admin.list_partition_reassignments():
        _clear_throttles(admin, plan, quiet=args.json)
    return 0


def _cancel(admin: AdminClient, args: argparse.Namespace, plan: dict[TopicPartition, list[int]]) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    results = admin.alter_partition_reassignments({tp: None for tp in sorted(ongoing)}) if ongoing else {}
    cancelled = sorted(tp for tp, e in results.items() if e is None)
    failed = {tp: e for tp, e in results.items() if e is not None}
    if args.json:
        emit_json(
            {
                "cancelled": [{"topic": tp.topic, "partition": tp.partition} for tp in cancelled],
                "failed": [
                    {"topic": tp.topic, "partition": tp.partition, "error": str(e)}
                    for tp, e in failed.items()
                ],
            }
        )
    else:
        if cancelled:
            print(f"Successfully cancelled partition reassignments for: {_names(cancelled)}")
        else:
            print("None of the specified partition reassignments are active.")
        for tp, error in sorted(failed.items()):
            print(f"Error cancelling the reassignment of {tp.topic}-{tp.partition}: {error}")
    if not args.preserve_throttles:
        _clear_throttles(admin, plan, quiet=args.json)
    return 1 if failed else 0


def _list(admin: AdminClient, args: argparse.Namespace) -> int:
    ongoing = admin.list_partition_reassignments()
    if args.json:
        emit_json(
            [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(r.replicas),
                    "adding": list(r.adding),
                    "removing": list(r.removing),
                }
                for tp, r in sorted(ongoing.items())
            ]
        )
    elif not ongoing:
        print("No partition reassignments found.")
    else:
        print("Current partition reassignments:")
        for tp, r in sorted(ongoing.items()):
            parts = [f"replicas: {_ids(r.replicas)}."]
            parts += [f"adding: {_ids(r.adding)}."] if r.adding else []
            parts += [f"removing: {_ids(r.removing)}."] if r.removing else []
            print(f"{tp.topic}-{tp.partition}: {' '.join(parts)}")
    return 0


def decommission_plan(
    current: dict[TopicPartition, list[int]], broker: int, live: list[int]
) -> dict[TopicPartition, list[int]]:
    """The moves that empty ``broker``: in each partition holding it, the live broker (not ``broker``,
    not already a replica) holding the fewest replicas takes its place; ties go to the lower id."""
    load = Counter({b: 0 for b in live if b != broker})
    for replicas in current.values():
        load.update(r for r in replicas if r in load)
    plan = {}
    for tp, replicas in sorted(current.items()):
        if broker not in replicas:
            continue
        candidates = sorted((n, b) for b, n in load.items() if b not in replicas)
        if not candidates:
            raise CliError(
                f"cannot move {tp.topic}-{tp.partition} off broker {broker}: "
                f"every other live broker already holds a replica"
            )
        chosen = candidates[0][1]
        load[chosen] += 1
        plan[tp] = [chosen if r == broker else r for r in replicas]
    return plan


def _decommission(admin: AdminClient, args: argparse.Namespace) -> int:
    live = [b.node_id for b in admin.describe_cluster().brokers]
    current = _current(admin, set(admin.list_topics(internal=True)))
    plan = decommission_plan(current, args.decommission, live)
    if not plan:
        print(f"Broker {args.decommission} holds no replica.")
        return 0
    if not args.json:
        print(f"Moving {len(plan)} replicas off broker {args.decommission}:")
        print(json.dumps(_plan_json(plan)))
    code = _start(admin, args, plan)
    if code or not args.wait:
        return code
    while True:
        ongoing = admin.list_partition_reassignments(list(plan))
        if not ongoing:
            break
        time.sleep(1.0)
    if args.throttle is not None:
        _clear_throttles(admin, plan, quiet=args.json)
    if not args.json:
        print(f"Broker {args.decommission} holds no replica any more.")
    return 0


def _names(tps: list[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in tps)


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(map(str, ids))
