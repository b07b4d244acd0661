"""What every ``minikafka`` client command shares: the one-line error, tables, JSON, common flags.

`client.cli` and the command modules beside it (`client.cli_transactions`)
build on these, so each command module stays small and none imports another.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from client.admin import AdminClient

DEFAULT_BOOTSTRAP = "localhost:9092"


class CliError(Exception):
    """A failure to report as one line (exit code 1)."""


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], out: TextIO | None = None) -> None:
    """Print an aligned table: numbers right-aligned, text left-aligned, ``-`` for None."""
    out = out or sys.stdout
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, v in enumerate(row):
            widths[i] = max(widths[i], len(v))
    numeric = [
        all(isinstance(row[i], int) or row[i] is None for row in rows) and bool(rows)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)]
        return "  ".join(parts).rstrip()

    print(line(list(headers)), file=out)
    for row in cells:
        print(line(row), file=out)


def emit_json(obj: Any) -> None:
    print(json.dumps(obj, indent=None, sort_keys=False))


def add_common(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """``--bootstrap-server``, ``--timeout-ms`` and (unless ``json_flag`` is false) ``--json``."""
    p.add_argument(
        "--bootstrap-server",
        default=os.environ.get("MINIKAFKA_BOOTSTRAP_SERVER", DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT",
        help=f"broker(s) to connect to (default {DEFAULT_BOOTSTRAP})",
    )
    p.add_argument(
        "--timeout-ms", type=int, default=30000, help="timeout of each admin request (default 30000)"
    )
    p.add_argument(
        "--command-config",
        metavar="FILE",
        default=os.environ.get("MINIKAFKA_COMMAND_CONFIG"),
        help="client properties file (security.protocol, sasl.*, ssl.*), as Kafka's tools take it",
    )
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable JSON output")


def command_config(args: argparse.Namespace) -> dict[str, str]:
    """The ``--command-config`` file's ``key=value`` lines (``#``/``!`` comments), or {}."""
    path = getattr(args, "command_config", None)
    return read_properties(path, "--command-config") if path else {}


def read_properties(path: str, flag: str) -> dict[str, str]:
    """A properties file's ``key=value`` lines (``#``/``!`` comments); `CliError` naming ``flag``."""
    try:
        text = open(path, encoding="utf-8").read()  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot read {flag} {path}: {exc.strerror}") from None
    out = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CliError(f"{path}:{number}: expected key=value, got {line!r}")
        out[key.strip()] = value.strip()
    return out


def admin_client(args: argparse.Namespace) -> AdminClient:
    """An admin client for ``args.bootstrap_server`` that has reached a broker once (else it raises)."""
    admin = AdminClient(
        command_config(args),
        bootstrap_servers=args.bootstrap_server,
        default_api_timeout_ms=args.timeout_ms,
    )
    try:
        admin.check_connection()
    except BaseException:
        admin.close()
        raise
    return admin
