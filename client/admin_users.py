"""The SCRAM user calls of the admin client: `describe_user_scram_credentials` and
`alter_user_scram_credentials`.

As Kafka's Admin does:

- DescribeUserScramCredentials (API 50) goes to any broker (an open connection
  with the fewest requests in flight, else a known broker, else bootstrap).
  It answers mechanisms and iteration counts, never salts or keys.
- AlterUserScramCredentials (API 51) carries, per upsertion, the salt, the
  iteration count and the SaltedPassword (RFC 5802's ``Hi(password, salt, i)``)
  computed here: the password never leaves the client. The default salt is
  Kafka's: the UTF-8 bytes of a random 130-bit number written in base 36. It
  goes to any broker; a broker that answers NOT_CONTROLLER (a ZooKeeper-mode
  Kafka) sends the call on to the controller.
- Users whose alterations are invalid before anything is sent (an empty name
  or password, an unknown mechanism) fail alone with Kafka's errors and
  messages; the request carries only the others.

Mechanisms are named as Kafka names them, ``SCRAM-SHA-256`` and
``SCRAM-SHA-512`` (case-insensitive here); on the wire they are codes 1 and 2.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, error_for
from protocol.errors import ErrorCode
from protocol.scram import MAX_ITERATIONS, salted_password

if TYPE_CHECKING:
    pass

DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51

MECHANISM_CODES: dict[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES: dict[int, str] = {code: name for name, code in MECHANISM_CODES.items()}
DEFAULT_MECHANISM = "SCRAM-SHA-512"
DEFAULT_ITERATIONS = 4096

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class ScramUpsertion:
    """Set (create or replace) one SCRAM credential of ``user``.

    ``salt`` None: a fresh random salt (`random_salt`). The broker accepts
    ``iterations`` from 4096 to 16384 (else UNACCEPTABLE_CREDENTIAL).
    """

    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ScramDeletion:
    """Remove one SCRAM credential of ``user`` (RESOURCE_NOT_FOUND when it has none)."""

    user: str
    mechanism: str


def random_salt() -> bytes:
    """A salt as Kafka's Admin makes one: a random 130-bit number in base 36, UTF-8 (up to 26 bytes)."""
    n = secrets.randbits(130)
    digits = []
    while True:
        n, d = divmod(n, 36)
        digits.append(_BASE36[d])
        if n == 0:
            return "".join(reversed(digits)).encode("ascii")


def mechanism_code(name: str) -> int | None:
    """The wire code of a mechanism name (case-insensitive), None for an unknown one."""
    return MECHANISM_CODES.get(name.upper())


class UserAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (it provides ``cluster``, ``_retrying``, ``_controller``)."""

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[tuple[str, int]] | KafkaError]:
        """``{user: [(mechanism name, iterations), ...]}`` in the broker's order, or the user's error.

        ``users`` None or empty: every user that has credentials. A named user
        without credentials maps to a RESOURCE_NOT_FOUND error, one named twice
        to DUPLICATE_RESOURCE (each with the broker's message). A failure of the
        whole request raises.
        """
        names = list(users) if users is not None else []
        body = {"users": [{"name": u} for u in names] if names else None}

        async def call() -> Any:
            resp = await self.cluster.send_any(DESCRIBE_USER_SCRAM_CREDENTIALS, body)
            if resp.error_code:
                raise error_for(resp.error_code, resp.error_message, "DescribeUserScramCredentials")
            return resp

        resp = await self._retrying(call)
        out: dict[str, list[tuple[str, int]] | KafkaError] = {}
        for r in resp.results:
            if r.error_code:
                out[r.user] = error_for(r.error_code, r.error_message, f"user {r.user!r}")
            else:
                out[r.user] = [
                    (MECHANISM_NAMES.get(c.mechanism, f"UNKNOWN({c.mechanism})"), c.iterations)
                    for c in r.credential_infos
                ]
        return out

    async def alter_user_scram_credentials(
        self, upsertions: Iterable[ScramUpsertion] = (), deletions: Iterable[ScramDeletion] = ()
    ) -> dict[str, KafkaError | None]:
        """Apply the changes; per user named in them, None or the error that left that user unchanged.

        Kafka's per-user errors: UNACCEPTABLE_CREDENTIAL (empty name or
        password, iterations out of range), UNSUPPORTED_SASL_MECHANISM,
        DUPLICATE_RESOURCE (the same user and mechanism twice),
        RESOURCE_NOT_FOUND (deleting a credential that does not exist). A
        failure of the whole request (no broker, a timeout) raises.
        """
        ups, dels = list(upsertions), list(deletions)
        users = list(dict.fromkeys([d.user for d in dels] + [u.user for u in ups]))
        invalid = _invalid_users(ups, dels)
        body = {
            "deletions": [
                {"name": d.user, "mechanism": mechanism_code(d.mechanism)}
                for d in dels
                if d.user not in invalid
            ],
            "upsertions": await asyncio.to_thread(
                _upsertion_bodies, [u for u in ups if u.user not in invalid]
            ),
        }
        out: dict[str, KafkaError | None] = dict.fromkeys(users)
        out.update(invalid)
        if not body["deletions"] and not body["upsertions"]:
            return out
        to_controller = False

        async def call() -> Any:
            nonlocal to_controller
            if to_controller:
                resp = await self.cluster.send(await self._controller(), ALTER_USER_SCRAM_CREDENTIALS, body)
            else:
                resp = await self.cluster.send_any(ALTER_USER_SCRAM_CREDENTIALS, body)
            if any(r.error_code == ErrorCode.NOT_CONTROLLER for r in resp.results):
                to_controller = True
                raise error_for(ErrorCode.NOT_CONTROLLER, context="AlterUserScramCredentials")
            return resp

        resp = await self._retrying(call)
        answered = set()
        for r in resp.results:
            answered.add(r.user)
            if r.user in out and r.user not in invalid:
                out[r.user] = (
                    error_for(r.error_code, r.error_message, f"user {r.user!r}") if r.error_code else None
                )
        for user in users:
            if user not in answered and user not in invalid:
                out[user] = KafkaError(f"the broker response did not contain a result for user {user!r}")
        return out


def _invalid_users(ups: list[ScramUpsertion], dels: list[ScramDeletion]) -> dict[str, KafkaError]:
    """The users with an alteration Kafka's Admin refuses before sending, with its error and message."""
    out: dict[str, KafkaError] = {}
    for alteration in [*dels, *ups]:
        user = alteration.user
        if user in out:
            continue
        if not user:
            out[user] = error_for(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty", "user ''")
        elif isinstance(alteration, ScramUpsertion) and not alteration.password:
            out[user] = error_for(
                ErrorCode.UNACCEPTABLE_CREDENTIAL, "Password must not be empty", f"user {user!r}"
            )
        elif mechanism_code(alteration.mechanism) is None:
            out[user] = error_for(
                ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism", f"user {user!r}"
            )
    return out


def _upsertion_bodies(ups: list[ScramUpsertion]) -> list[dict[str, Any]]:
    """The wire form of valid upsertions (PBKDF2 runs here: called in a worker thread)."""
    out = []
    for u in ups:
        mechanism = u.mechanism.upper()
        salt = u.salt if u.salt is not None else random_salt()
        # A count outside 1..MAX_ITERATIONS is refused by the broker whatever the key: don't spend
        # minutes (or fail) deriving one for it.
        rounds = u.iterations if 1 <= u.iterations <= MAX_ITERATIONS else 1
        out.append(
            {
                "name": u.user,
                "mechanism": MECHANISM_CODES[mechanism],
                "iterations": u.iterations,
                "salt": salt,
                "salted_password": salted_password(mechanism, u.password, salt, rounds),
            }
        )
    return out
