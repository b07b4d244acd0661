"""SCRAM credentials: salted and hashed, never the password, kept where Kafka keeps them.

In memory: ``{user: {mechanism: ScramCredential}}``, answering the SCRAM
server's lookups without I/O. Durable copies, each credential in Kafka's text
form ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``:

- single broker: ``<data dir>/__minikafka_scram_credentials.json``,
  ``{"version": 1, "users": {"alice": {"SCRAM-SHA-512": "salt=..."}}}``,
  replaced atomically; re-read when its modification time changes (a copy
  restored from a backup takes effect without a restart).
- cluster: ZooKeeper ``/config/users/<name>``, Kafka's entity config znode
  ``{"version":1,"config":{"SCRAM-SHA-512":"salt=...",...}}`` (shared with the
  user's quota keys, which are kept as they are), each change followed by a
  ``/config/changes/config_change_<seq>`` notification
  ``{"version":2,"entity_path":"users/<name>"}`` as Kafka writes it; every broker
  re-reads the users when a notification appears (broker/security/zk_users.py).

`alter` validates a whole AlterUserScramCredentials request the way Kafka does
and answers per user; a user that fails validation changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from broker.security import scram
from broker.security.durable_file import ConfigMapFile
from broker.security.scram import ScramCredential
from protocol.errors import ErrorCode

log = logging.getLogger("minikafka.security")

FILE = "__minikafka_scram_credentials.json"
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
CODE_OF = {name: code for code, name in MECHANISM_CODES.items()}

UserConfigs = dict[str, dict[str, str]]  # user -> {config key: value}, SCRAM mechanisms among the keys


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class Result:
    user: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


def credentials_of(configs: UserConfigs) -> dict[str, dict[str, ScramCredential]]:
    """The SCRAM credentials in user configs; malformed entries are logged and left out."""
    out: dict[str, dict[str, ScramCredential]] = {}
    for user, config in configs.items():
        for mechanism in MECHANISM_CODES.values():
            text = config.get(mechanism)
            if text is None:
                continue
            try:
                out.setdefault(user, {})[mechanism] = scram.parse_credential(mechanism, text)
            except ValueError as exc:
                log.warning("ignoring the malformed %s credential of user %r: %s", mechanism, user, exc)
    return out


class CredentialStore:
    """SCRAM credentials by user and mechanism, with their durable copy (``write``)."""

    def __init__(self, write: Callable[[dict[str, dict[str, str | None]]], Awaitable[None]]) -> None:
        """``write({user: {mechanism: text or None to delete}})`` makes changes durable (and, in a
        cluster, visible to every broker) before `alter` answers."""
        self._write = write
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self.lock = asyncio.Lock()  # alterations, and re-reads of the durable copy, one at a time

    def replace_all(self, configs: UserConfigs) -> None:
        self._users = credentials_of(configs)

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def describe(self, users: Iterable[str] | None) -> list[Result | tuple[str, list[tuple[int, int]]]]:
        """DescribeUserScramCredentials: ``(user, [(mechanism code, iterations)])`` per user with
        credentials (every one when ``users`` is None), or a `Result` error for a user asked for
        twice (DUPLICATE_RESOURCE) or without credentials (RESOURCE_NOT_FOUND)."""
        if users is None:
            names = sorted(self._users)
            duplicates: set[str] = set()
        else:
            asked = list(users)
            names = list(dict.fromkeys(asked))
            duplicates = {u for u in names if asked.count(u) > 1}
        out: list[Result | tuple[str, list[tuple[int, int]]]] = []
        for user in names:
            if user in duplicates:
                out.append(
                    Result(
                        user,
                        ErrorCode.DUPLICATE_RESOURCE,
                        "Cannot describe SCRAM credentials for the same user twice in a single request",
                    )
                )
                continue
            creds = self._users.get(user)
            if not creds:
                out.append(
                    Result(
                        user,
                        ErrorCode.RESOURCE_NOT_FOUND,
                        "Attempt to describe a user credential that does not exist",
                    )
                )
                continue
            out.append((user, [(CODE_OF[m], c.iterations) for m, c in sorted(creds.items())]))
        return out

    async def alter(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> list[Result]:
        """AlterUserScramCredentials: validate per user, write the valid users' changes, answer per user.

        One alteration at a time (`lock`): each validates against, and then updates, what the
        previous one left, and the file is never written by two at once."""
        async with self.lock:
            return await self._alter(deletions, upsertions)

    async def _alter(self, deletions: list[Deletion], upsertions: list[Upsertion]) -> list[Result]:
        errors: dict[str, Result] = {}
        seen: dict[str, set[int]] = {}
        for user, mechanism in [(d.user, d.mechanism) for d in deletions] + [
            (u.user, u.mechanism) for u in upsertions
        ]:
            if user in errors:
                continue
            if mechanism not in MECHANISM_CODES:
                errors[user] = Result(user, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            elif not user:
                errors[user] = Result(user, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            elif mechanism in seen.setdefault(user, set()):
                errors[user] = Result(
                    user,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                )
            seen[user].add(mechanism)
        for d in deletions:
            if d.user not in errors and self.lookup(MECHANISM_CODES[d.mechanism], d.user) is None:
                errors[d.user] = Result(
                    d.user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
        made: dict[str, dict[str, ScramCredential | None]] = {}
        for u in upsertions:
            if u.user in errors:
                continue
            problem = _unacceptable(u)
            if problem is None:
                mechanism = MECHANISM_CODES[u.mechanism]
                try:
                    made.setdefault(u.user, {})[mechanism] = scram.credential_from_salted_password(
                        mechanism, u.salted_password, u.salt, u.iterations
                    )
                    continue
                except ValueError as exc:
                    problem = str(exc)
            errors[u.user] = Result(u.user, ErrorCode.UNACCEPTABLE_CREDENTIAL, problem)
        for d in deletions:
            if d.user not in errors:
                made.setdefault(d.user, {})[MECHANISM_CODES[d.mechanism]] = None
        made = {user: c for user, c in made.items() if user not in errors}
        if made:
            await self._write(
                {
                    user: {m: None if c is None else scram.format_credential(c) for m, c in change.items()}
                    for user, change in made.items()
                }
            )
            for user, change in made.items():
                for mechanism, cred in change.items():
                    if cred is None:
                        self._users.get(user, {}).pop(mechanism, None)
                    else:
                        self._users.setdefault(user, {})[mechanism] = cred
                if user in self._users and not self._users[user]:
                    del self._users[user]
        users = list(dict.fromkeys([d.user for d in deletions] + [u.user for u in upsertions]))
        return [errors.get(user, Result(user)) for user in users]


MAX_SALT_BYTES = 256
"""Longer salts are refused (UNACCEPTABLE_CREDENTIAL): a credential's text form must stay parseable."""


def _unacceptable(u: Upsertion) -> str | None:
    """Why an upsertion cannot be stored, or None."""
    mechanism = MECHANISM_CODES[u.mechanism]
    if not scram.MIN_ITERATIONS <= u.iterations <= scram.MAX_ITERATIONS:
        return (
            f"Iterations {u.iterations} not in the range"
            f" [{scram.MIN_ITERATIONS}, {scram.MAX_ITERATIONS}] allowed for {mechanism}"
        )
    if not u.salt or not u.salted_password:
        return "Salt and salted password must not be empty"
    if len(u.salt) > MAX_SALT_BYTES:
        return f"Salt longer than {MAX_SALT_BYTES} bytes"
    return None


def local_users_file(data_dir: Path) -> ConfigMapFile:
    """The single broker's durable user configs (module docstring)."""
    return ConfigMapFile(data_dir / FILE, "users", "a credentials file")
