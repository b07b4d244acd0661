"""``minikafka users list|add|delete``: the SCRAM credentials of a cluster's users.

- ``list [NAME...]``: DescribeUserScramCredentials, one row per user and
  mechanism with its iteration count (every user with credentials when no
  name is given). Names without credentials are reported on the error line
  (exit 1) after the table of those that have some.
- ``add NAME [--mechanism M ...] [--iterations N] [--password P | --password-file F]``:
  AlterUserScramCredentials upserting one credential per mechanism
  (default SCRAM-SHA-512, 4096 iterations), salted here with a fresh salt.
  Without --password/--password-file the password is asked for (twice) when
  stdin is a terminal, else read as the first line of stdin.
- ``delete NAME [--mechanism M ...]``: removes those credentials (default:
  every mechanism the user has); a user without them fails with the broker's
  RESOURCE_NOT_FOUND message.

Each prints a table or a sentence, or JSON with ``--json``, like the other
client commands; ``--command-config`` reaches a secured listener.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from client.admin_users import (
    DEFAULT_ITERATIONS,
    DEFAULT_MECHANISM,
    MECHANISM_CODES,
    ScramDeletion,
    ScramUpsertion,
)
from client.cli_support import CliError, add_common, admin_client, emit_json, table
from client.errors import KafkaError, KafkaResponseError
from protocol.errors import ErrorCode

MECHANISMS = tuple(MECHANISM_CODES)


def add_users_parser(sub: Any) -> None:
    """Add ``users`` and its actions to the ``minikafka`` subparsers ``sub``."""
    users = sub.add_parser("users", help="list, add and delete SCRAM credentials of users")
    usub = users.add_subparsers(dest="action", required=True)
    p = usub.add_parser("list", help="users with SCRAM credentials: mechanisms and iterations")
    add_common(p)
    p.add_argument("names", nargs="*", metavar="NAME", help="only these users (default: all)")

    p = usub.add_parser("add", help="set a user's SCRAM credentials (creates or replaces them)")
    add_common(p)
    p.add_argument("name", metavar="NAME")
    _mechanism_flag(p, f"mechanism to set (repeatable; default {DEFAULT_MECHANISM})")
    p.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"SCRAM iteration count, 4096..16384 (default {DEFAULT_ITERATIONS})",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--password", help="the password (visible to other local users: prefer a file)")
    source.add_argument("--password-file", metavar="FILE", help="read the password from FILE's first line")

    p = usub.add_parser("delete", help="remove SCRAM credentials of a user")
    add_common(p)
    p.add_argument("name", metavar="NAME")
    _mechanism_flag(p, "mechanism to remove (repeatable; default: every one the user has)")


def _mechanism_flag(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument(
        "--mechanism",
        action="append",
        default=[],
        type=str.upper,
        choices=MECHANISMS,
        metavar="{" + ",".join(MECHANISMS) + "}",
        help=help_text,
    )


def read_password(args: argparse.Namespace) -> str:
    """The password from --password, --password-file's first line, a prompt (a tty) or stdin's first line."""
    if args.password is not None:
        password = args.password
    elif args.password_file is not None:
        try:
            with open(args.password_file, encoding="utf-8") as f:
                password = f.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise CliError(f"cannot read --password-file {args.password_file}: {reason}") from None
    elif sys.stdin.isatty():
        try:
            password = getpass.getpass(f"Password for {args.name}: ")
            if password and getpass.getpass("Retype it: ") != password:
                raise CliError("the passwords do not match")
        except EOFError:
            password = ""
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise CliError(
            f"no password for user {args.name!r}: give --password, --password-file or one on stdin"
        )
    return password


def _missing(user: str, error: KafkaError) -> str:
    if isinstance(error, KafkaResponseError) and error.code == ErrorCode.RESOURCE_NOT_FOUND:
        return f"user {user!r} has no SCRAM credentials"
    return str(error)


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        described = admin.describe_user_scram_credentials(args.names or None)
    found = {u: c for u, c in described.items() if not isinstance(c, KafkaError)}
    failed = [_missing(u, e) for u, e in described.items() if isinstance(e, KafkaError)]
    if args.json:
        emit_json(
            [
                {"user": u, "credentials": [{"mechanism": m, "iterations": i} for m, i in creds]}
                for u, creds in found.items()
            ]
        )
    elif found or not failed:
        table(
            [(u, m, i) for u, creds in found.items() for m, i in creds], ["USER", "MECHANISM", "ITERATIONS"]
        )
    if failed:
        raise CliError("; ".join(failed))
    return 0


def _add(args: argparse.Namespace) -> int:
    mechanisms = list(dict.fromkeys(args.mechanism)) or [DEFAULT_MECHANISM]
    password = read_password(args)
    ups = [ScramUpsertion(args.name, m, password, args.iterations) for m in mechanisms]
    with admin_client(args) as admin:
        error = admin.alter_user_scram_credentials(ups, []).get(args.name)
    if error is not None:
        raise error
    if args.json:
        emit_json({"user": args.name, "set": mechanisms, "iterations": args.iterations})
    else:
        for m in mechanisms:
            print(f"Set the {m} credential of user {args.name} ({args.iterations} iterations).")
    return 0


def _delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        mechanisms = list(dict.fromkeys(args.mechanism))
        if not mechanisms:
            creds = admin.describe_user_scram_credentials([args.name]).get(args.name)
            if isinstance(creds, KafkaResponseError) and creds.code == ErrorCode.RESOURCE_NOT_FOUND:
                mechanisms = list(MECHANISMS)  # let the broker say the user has none
            elif isinstance(creds, KafkaError):
                raise creds
            else:
                mechanisms = [m for m, _ in creds or [] if m in MECHANISM_CODES]
        dels = [ScramDeletion(args.name, m) for m in mechanisms]
        error = admin.alter_user_scram_credentials([], dels).get(args.name)
    if error is not None:
        raise error
    if args.json:
        emit_json({"user": args.name, "deleted": mechanisms})
    else:
        for m in mechanisms:
            print(f"Deleted the {m} credential of user {args.name}.")
    return 0


def cmd_users(args: argparse.Namespace) -> int:
    """Run ``users list``, ``users add`` or ``users delete``; returns the exit code."""
    if args.action == "list":
        return _list(args)
    if args.action == "add":
        return _add(args)
    return _delete(args)
