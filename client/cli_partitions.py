"""``minikafka partitions elect-leaders``: leader elections, as ``kafka-leader-election``
(``partitions reassign`` is `client.cli_reassign`).

- ``elect-leaders --election-type preferred|unclean`` with the partitions as
  ``--topic T [--partition P]`` (no partition: all of the topic's),
  ``--all-topic-partitions``, or ``--path-to-json-file F`` (kafka-leader-election's
  file: ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``).
- Prints which partitions got a new leader, which already had the wanted one,
  and one line per partition that failed (exit 1 if any did); ``--json``:
  ``{"elected": [...], "not_needed": [...], "failed": [{"topic", "partition", "error"}]}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from client.admin_leaders import ELECTION_TYPES
from client.cli_reassign import add_reassign_parser, cmd_reassign
from client.cli_support import CliError, add_common, admin_client, emit_json
from client.errors import KafkaError, KafkaResponseError
from client.types import TopicPartition
from protocol.errors import ErrorCode


def add_partitions_parser(sub: Any) -> None:
    """Add ``partitions`` and its actions to the ``minikafka`` subparsers ``sub``."""
    parts = sub.add_parser("partitions", help="elect partition leaders, reassign replicas")
    psub = parts.add_subparsers(dest="action", required=True)
    add_reassign_parser(psub)
    p = psub.add_parser("elect-leaders", help="move leadership to preferred replicas, or elect one uncleanly")
    add_common(p)
    p.add_argument("--election-type", required=True, choices=sorted(ELECTION_TYPES), type=str.lower)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", help="the topic whose partitions to elect")
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    which.add_argument(
        "--path-to-json-file", type=Path, metavar="FILE", help='{"partitions": [...]} as Kafka'
    )
    p.add_argument("--partition", type=int, help="with --topic: only this partition")


def _partitions(args: argparse.Namespace) -> list[TopicPartition] | None:
    if args.partition is not None and args.topic is None:
        raise CliError("--partition needs --topic")
    if args.all_topic_partitions:
        return None
    if args.topic is not None:
        if args.partition is not None:
            return [TopicPartition(args.topic, args.partition)]
        with admin_client(args) as admin:
            info = admin.describe_topics([args.topic])[args.topic]
        if isinstance(info, KafkaError):
            raise info
        return [TopicPartition(args.topic, index) for index in sorted(info.partitions)]
    try:
        doc = json.loads(args.path_to_json_file.read_text())
        out = [TopicPartition(str(e["topic"]), int(e["partition"])) for e in doc["partitions"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"{args.path_to_json_file}: not a partitions file ({exc!r})") from None
    if len(set(out)) != len(out):
        raise CliError(f"{args.path_to_json_file}: a partition is listed twice")
    return out


def cmd_partitions(args: argparse.Namespace) -> int:
    """Run ``partitions elect-leaders`` or ``partitions reassign``; returns the exit code."""
    if args.action == "reassign":
        return cmd_reassign(args)
    partitions = _partitions(args)
    with admin_client(args) as admin:
        results = admin.elect_leaders(ELECTION_TYPES[args.election_type], partitions)
    elected, not_needed, failed = [], [], []
    for tp, error in sorted(results.items()):
        if error is None:
            elected.append(tp)
        elif isinstance(error, KafkaResponseError) and error.code == ErrorCode.ELECTION_NOT_NEEDED:
            not_needed.append(tp)
        else:
            failed.append((tp, error))
    kind = args.election_type.upper()
    if args.json:
        emit_json(
            {
                "elected": [{"topic": tp.topic, "partition": tp.partition} for tp in elected],
                "not_needed": [{"topic": tp.topic, "partition": tp.partition} for tp in not_needed],
                "failed": [
                    {"topic": tp.topic, "partition": tp.partition, "error": str(e)} for tp, e in failed
                ],
            }
        )
    else:
        if elected:
            print(f"Successfully completed leader election ({kind}) for partitions {_names(elected)}")
        if not_needed:
            print(f"Valid replica already elected for partitions {_names(not_needed)}")
        for tp, error in failed:
            print(
                f"Error completing leader election ({kind}) for partition {tp.topic}-{tp.partition}: {error}"
            )
        if not results:  # all partitions asked for: the broker names only those an election concerned
            print(f"No partition needed a leader election ({kind}).")
    return 1 if failed else 0


def _names(tps: list[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in tps)
