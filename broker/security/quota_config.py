"""Client quota configs: entities, keys, Kafka's precedence, and the checks of the admin APIs.

An entity is ``(user, client_id)``: each a name, `DEFAULT` (``<default>``,
what Kafka's requests send as a null name) or None when the entity has no
such part. So ``("alice", None)`` is user alice, ``(None, DEFAULT)`` the
default client-id, ``(DEFAULT, "app")`` client-id app of any user without a
more specific quota. Names are kept as clients send them (storage sanitizes
them: broker/security/quota_store.py).

Keys (Kafka's QuotaConfig): ``producer_byte_rate`` and ``consumer_byte_rate``
(bytes per second, whole numbers), ``request_percentage`` (percent of one
request thread's time) and ``controller_mutation_rate`` (partitions created or
deleted per second, a token bucket: broker/security/quotas.py `MutationQuota`).

`QuotaTable` answers, per key, which quota applies to a connection, as Kafka's
default ClientQuotaCallback does (ClientQuotaManager.scala):

1. ``/config/users/<user>/clients/<client-id>``
2. ``/config/users/<user>/clients/<default>``
3. ``/config/users/<user>``
4. ``/config/users/<default>/clients/<client-id>``
5. ``/config/users/<default>/clients/<default>``
6. ``/config/users/<default>``
7. ``/config/clients/<client-id>``
8. ``/config/clients/<default>``

It also names the *quota entity* that is measured (`QuotaTable.tags`):
connections that resolve to the same ``(user, client-id)`` tags share one
rate. With quotas at one level only, the tags are that level's
(``("", client)``, ``(user, "")`` or ``(user, client)``); with several, the
first level above that has an entry decides.

`parse_filter`/`matches` and `check_entity`/`check_ops` are the checks of
DescribeClientQuotas and AlterClientQuotas, with Kafka's errors and messages
(ClientQuotasImage.describe, ClientQuotaControlManager): they raise
`QuotaError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.errors import ErrorCode

DEFAULT = "<default>"  # also zk_users.DEFAULT: Kafka's name of the default entity
USER, CLIENT_ID, IP = "user", "client-id", "ip"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
# key -> whether its values are whole numbers (Kafka's LONG) rather than DOUBLE
QUOTA_KEYS: dict[str, bool] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}
_LONG_MAX = 2**63 - 1

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[str | None, str | None]  # (user, client-id): a name, DEFAULT, or None (not part of it)
Quotas = dict[Entity, dict[str, float]]

# the levels a key has entries at (Kafka's QuotaTypes bits)
_CLIENT_LEVEL, _USER_LEVEL, _USER_CLIENT_LEVEL = 1, 2, 4


class QuotaError(Exception):
    """A request or entity Kafka refuses: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def entity_text(entity: Entity) -> str:
    """How Kafka's ClientQuotaEntity prints, e.g. ``ClientQuotaEntity(entries={user=alice})``."""
    user, client = entity
    parts = []
    if user is not None:
        parts.append(f"user={None if user == DEFAULT else user}")
    if client is not None:
        parts.append(f"client-id={None if client == DEFAULT else client}")
    return "ClientQuotaEntity(entries={" + ", ".join(parts) + "})"


def wire_entity(entity: Entity) -> list[dict[str, str | None]]:
    """The entity as the APIs' ``[{entity_type, entity_name}]`` (a default: a null name)."""
    user, client = entity
    out: list[dict[str, str | None]] = []
    if user is not None:
        out.append({"entity_type": USER, "entity_name": None if user == DEFAULT else user})
    if client is not None:
        out.append({"entity_type": CLIENT_ID, "entity_name": None if client == DEFAULT else client})
    return out


def format_value(key: str, value: float) -> str:
    """A value as Kafka stores it: ``1048576`` for whole-number keys, ``200.0`` for the others."""
    if QUOTA_KEYS.get(key, False):
        return str(int(value))
    return repr(float(value))


# -- AlterClientQuotas ---------------------------------------------------------------------------
def check_entity(components: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity of an alteration's ``(entity_type, entity_name)`` list (a null name: the default)."""
    seen: dict[str, str | None] = {}
    for entity_type, name in components:
        if entity_type in seen:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid client quota entity, duplicate entity entry {entity_type}",
            )
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if not seen:
        raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Invalid quota entity combination, IP entity should not be combined with User or ClientId",
            )
        raise QuotaError(
            ErrorCode.INVALID_REQUEST, "IP quotas (connection_creation_rate) are not supported by this broker"
        )

    def name_of(entity_type: str) -> str | None:
        if entity_type not in seen:
            return None
        name = seen[entity_type]
        return DEFAULT if name is None else name

    return (name_of(USER), name_of(CLIENT_ID))


def check_ops(ops: Iterable[tuple[str, float, bool]], entity: Entity) -> dict[str, float | None]:
    """An alteration's ``(key, value, remove)`` ops as ``{key: value, or None to remove}``."""
    out: dict[str, float | None] = {}
    for key, value, remove in ops:
        if key in out:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Duplicate quota key {key} not updating quota for this entity {entity_text(entity)}",
            )
        out[key] = None if remove else value
    for key, value in out.items():
        if value is None:
            continue
        if key not in QUOTA_KEYS:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
        if not value > 0.0:  # NaN too
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
        if QUOTA_KEYS[key]:
            if value > _LONG_MAX:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for a LONG."
                )
            if abs(value % 1.0) > 1e-6:
                raise QuotaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")
    return out


# -- DescribeClientQuotas ------------------------------------------------------------------------
@dataclass(frozen=True)
class QuotaFilter:
    """A DescribeClientQuotas filter: exact names (DEFAULT for the default) and "any name" types."""

    exact: Mapping[str, str]
    specified: frozenset[str]
    strict: bool

    @property
    def ip_only(self) -> bool:
        return IP in self.exact or IP in self.specified


def parse_filter(components: Iterable[tuple[str, int, str | None]], strict: bool) -> QuotaFilter:
    """The filter of ``(entity_type, match_type, match)`` components (Kafka's checks and messages)."""
    exact: dict[str, str] = {}
    specified: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                )
            exact[entity_type] = DEFAULT
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError(
                    ErrorCode.INVALID_REQUEST,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )
            specified.add(entity_type)
        else:
            raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
    types = set(exact) | specified
    if IP in types and (USER in types or CLIENT_ID in types):
        raise QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component.",
        )
    return QuotaFilter(exact, frozenset(specified), strict)


def matches(entity: Entity, flt: QuotaFilter) -> bool:
    """Whether ``entity`` passes the filter (Kafka's ClientQuotasImage.matches)."""
    parts = {t: n for t, n in ((USER, entity[0]), (CLIENT_ID, entity[1])) if n is not None}
    if flt.strict and len(parts) != len(flt.exact) + len(flt.specified):
        return False
    for entity_type, name in flt.exact.items():
        if parts.get(entity_type) != name:
            return False
    return all(entity_type in parts for entity_type in flt.specified)


# -- enforcement ---------------------------------------------------------------------------------
class QuotaTable:
    """Every entity's quotas, indexed per key for Kafka's precedence (immutable: replaced on change)."""

    def __init__(self, quotas: Quotas) -> None:
        self.quotas = quotas
        self._by_key: dict[str, dict[Entity, float]] = {}
        self._levels: dict[str, int] = {}
        for entity, values in quotas.items():
            user, client = entity
            level = _USER_CLIENT_LEVEL if user and client else _USER_LEVEL if user else _CLIENT_LEVEL
            for key, value in values.items():
                self._by_key.setdefault(key, {})[entity] = value
                self._levels[key] = self._levels.get(key, 0) | level

    def has(self, key: str) -> bool:
        """Whether any entity has a ``key`` quota."""
        return key in self._by_key

    def tags(self, key: str, user: str, client_id: str) -> tuple[str, str]:
        """The (user, client-id) whose rate a connection counts towards (Kafka's quotaMetricTags;
        an empty string: that part is not in the quota entity)."""
        levels = self._levels.get(key, 0)
        if levels in (0, _CLIENT_LEVEL):
            return ("", client_id)
        if levels == _USER_LEVEL:
            return (user, "")
        if levels == _USER_CLIENT_LEVEL:
            return (user, client_id)
        found = self._by_key[key]
        if (user, client_id) in found or (user, DEFAULT) in found:
            return (user, client_id)
        if (user, None) in found:
            return (user, "")
        if (DEFAULT, client_id) in found or (DEFAULT, DEFAULT) in found:
            return (user, client_id)
        if (DEFAULT, None) in found:
            return (user, "")
        return ("", client_id)

    def bound(self, key: str, tags: tuple[str, str]) -> float | None:
        """The quota of the measured entity ``tags`` (Kafka's quotaLimit), None when unlimited."""
        found = self._by_key.get(key)
        if not found:
            return None
        user, client = tags
        if user and client:
            chain: tuple[Entity, ...] = (
                (user, client),
                (user, DEFAULT),
                (DEFAULT, client),
                (DEFAULT, DEFAULT),
            )
        elif user:
            chain = ((user, None), (DEFAULT, None))
        elif client:
            chain = ((None, client), (None, DEFAULT))
        else:
            return None
        for entity in chain:
            value = found.get(entity)
            if value is not None:
                return value
        return None
