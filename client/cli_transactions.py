"""``minikafka transactions list|describe``: the transactional ids of a cluster and their state.

- ``list [--state S ...] [--producer-id N ...]``: ListTransactions on every
  broker, one row per transactional id (its coordinator, producer id, state);
  states are Kafka's names, case-insensitive (``ongoing`` = ``Ongoing``).
- ``describe ID...``: DescribeTransactions from each id's coordinator:
  producer id and epoch, state, timeout, when its last transaction started
  (and, while one is open, how long it has run), and the open transaction's
  partitions. Ids that do not exist are
  reported on the error line (exit 1) after the table of those that do.

Both print a table, or JSON with ``--json``, like the other client commands.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from typing import Any

from client.admin_transactions import TransactionDescription
from client.cli_support import CliError, add_common, admin_client, emit_json, table
from client.errors import KafkaError, KafkaResponseError
from protocol.errors import ErrorCode

# Kafka's TransactionState names, as ListTransactions filters take them.
STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)
_BY_LOWER = {s.lower(): s for s in STATES}
_OPEN = frozenset({"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"})  # a transaction runs


def add_transactions_parser(sub: Any) -> None:
    """Add ``transactions`` and its actions to the ``minikafka`` subparsers ``sub``."""
    txns = sub.add_parser("transactions", help="list and describe transactional ids")
    tsub = txns.add_subparsers(dest="action", required=True)
    p = tsub.add_parser("list", help="transactional ids of the cluster, with producer id and state")
    add_common(p)
    p.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help=f"only ids in this state (repeatable or comma separated): {', '.join(STATES)}",
    )
    p.add_argument("--producer-id", action="append", type=int, default=[], help="only this producer id")
    p = tsub.add_parser("describe", help="state, producer, timeout and partitions of transactional ids")
    add_common(p)
    p.add_argument("transactional_ids", nargs="+", metavar="TRANSACTIONAL_ID")


def _states(given: list[str]) -> list[str]:
    out = []
    for item in given:
        for name in filter(None, (s.strip() for s in item.split(","))):
            state = _BY_LOWER.get(name.lower())
            if state is None:
                raise CliError(f"unknown transaction state {name!r}; states: {', '.join(STATES)}")
            out.append(state)
    return out


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return (
        dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _row(d: TransactionDescription, now_ms: int) -> dict[str, Any]:
    return {
        "transactional_id": d.transactional_id,
        "coordinator": d.coordinator,
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "state": d.state,
        "timeout_ms": d.timeout_ms,
        "start_time_ms": d.start_time_ms,
        "duration_ms": (
            max(now_ms - d.start_time_ms, 0) if d.start_time_ms is not None and d.state in _OPEN else None
        ),
        "partitions": [[tp.topic, tp.partition] for tp in d.partitions],
    }


def _failure(txn_id: str, error: KafkaError) -> str:
    if isinstance(error, KafkaResponseError) and error.code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
        return f"transactional id {txn_id!r} does not exist"
    return str(error)


def cmd_transactions(args: argparse.Namespace) -> int:
    """Run ``transactions list`` or ``transactions describe``; returns the exit code."""
    if args.action == "list":
        states = _states(args.state)
        with admin_client(args) as admin:
            listings = admin.list_transactions(states, args.producer_id)
        if args.json:
            emit_json(
                [
                    {
                        "transactional_id": t.transactional_id,
                        "coordinator": t.coordinator,
                        "producer_id": t.producer_id,
                        "state": t.state,
                    }
                    for t in listings
                ]
            )
        else:
            table(
                [(t.transactional_id, t.coordinator, t.producer_id, t.state) for t in listings],
                ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"],
            )
        return 0
    with admin_client(args) as admin:
        described = admin.describe_transactions(args.transactional_ids)
    now_ms = int(time.time() * 1000)
    rows = [_row(d, now_ms) for d in described.values() if isinstance(d, TransactionDescription)]
    failed = [
        _failure(txn_id, e) for txn_id, e in described.items() if not isinstance(e, TransactionDescription)
    ]
    if args.json:
        emit_json(rows)
    elif rows or not failed:
        table(
            [
                (
                    r["transactional_id"],
                    r["coordinator"],
                    r["producer_id"],
                    r["producer_epoch"],
                    r["state"],
                    r["timeout_ms"],
                    _iso(r["start_time_ms"]),
                    r["duration_ms"],
                    ",".join(f"{t}-{p}" for t, p in r["partitions"]) or None,
                )
                for r in rows
            ],
            [
                "TRANSACTIONAL-ID",
                "COORDINATOR",
                "PRODUCER-ID",
                "EPOCH",
                "STATE",
                "TIMEOUT-MS",
                "START-TIME",
                "DURATION-MS",
                "PARTITIONS",
            ],
        )
    if failed:
        raise CliError("; ".join(failed))
    return 0
