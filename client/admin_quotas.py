"""The client quota calls of the admin client: `describe_client_quotas` and `alter_client_quotas`.

As Kafka's Admin does (DescribeClientQuotas, API 48; AlterClientQuotas,
API 49), both to any broker (an open connection with the fewest requests in
flight, else a known broker, else bootstrap):

- An entity (`QuotaEntity`) has a user, a client-id, or both (an ``ip``
  when a broker reports one); `DEFAULT` names the default entity of a type,
  which the wire carries as a null name.
- Keys: ``producer_byte_rate``, ``consumer_byte_rate`` (bytes per second),
  ``request_percentage`` (percent of one request thread),
  ``controller_mutation_rate``; values are floats. An alteration maps a key
  to a value, or to None to remove it.
- `describe_client_quotas` takes filter components (`QuotaFilterComponent`:
  an entity type and a name, `DEFAULT`, or None for any name) and ``strict``
  (leave out entities with types the filter does not name). A refused filter
  raises the broker's error.
- `alter_client_quotas` answers per entity None or the error that left it
  unchanged (INVALID_REQUEST with the broker's message, ...);
  ``validate_only`` checks without changing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, error_for

if TYPE_CHECKING:
    pass

DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49

DEFAULT = "<default>"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


@dataclass(frozen=True)
class QuotaEntity:
    """Who a quota applies to: each part a name, `DEFAULT`, or None when not part of the entity."""

    user: str | None = None
    client_id: str | None = None
    ip: str | None = None

    def wire(self) -> list[dict[str, str | None]]:
        """The ``[{entity_type, entity_name}]`` of the APIs (a default: a null name)."""
        parts = ((USER, self.user), (CLIENT_ID, self.client_id), (IP, self.ip))
        return [
            {"entity_type": t, "entity_name": None if n == DEFAULT else n} for t, n in parts if n is not None
        ]

    def __str__(self) -> str:
        parts = ((USER, self.user), (CLIENT_ID, self.client_id), (IP, self.ip))
        return ", ".join(f"{t}={n}" for t, n in parts if n is not None) or "(empty entity)"


@dataclass(frozen=True)
class QuotaFilterComponent:
    """Entities whose ``entity_type`` part is ``match`` (a name or `DEFAULT`), or any (None)."""

    entity_type: str
    match: str | None = None

    def wire(self) -> dict[str, Any]:
        if self.match is None:
            return {"entity_type": self.entity_type, "match_type": MATCH_ANY, "match": None}
        if self.match == DEFAULT:
            return {"entity_type": self.entity_type, "match_type": MATCH_DEFAULT, "match": None}
        return {"entity_type": self.entity_type, "match_type": MATCH_EXACT, "match": self.match}


def entity_of(parts: Iterable[Any]) -> QuotaEntity:
    """The entity of a response's ``[{entity_type, entity_name}]`` (unknown types are left out)."""
    found: dict[str, str] = {}
    for p in parts:
        found[p.entity_type] = DEFAULT if p.entity_name is None else p.entity_name
    return QuotaEntity(found.get(USER), found.get(CLIENT_ID), found.get(IP))


class QuotaAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (it provides ``cluster`` and ``_retrying``)."""

    async def describe_client_quotas(
        self, components: Iterable[QuotaFilterComponent] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """``{entity: {key: value}}`` of the entities that pass the filter (no components and not
        strict: every entity). A refused filter raises the broker's error."""
        body = {"components": [c.wire() for c in components], "strict": strict}

        async def call() -> Any:
            resp = await self.cluster.send_any(DESCRIBE_CLIENT_QUOTAS, body)
            if resp.error_code:
                raise error_for(resp.error_code, resp.error_message, "DescribeClientQuotas")
            return resp

        resp = await self._retrying(call)
        return {entity_of(e.entity): {v.key: v.value for v in e["values"]} for e in resp.entries or []}

    async def alter_client_quotas(
        self, alterations: Mapping[QuotaEntity, Mapping[str, float | None]], *, validate_only: bool = False
    ) -> dict[QuotaEntity, KafkaError | None]:
        """Set (a value) or remove (None) quota keys per entity; per entity None or its error."""
        entities = list(alterations)
        body = {
            "entries": [
                {
                    "entity": entity.wire(),
                    "ops": [
                        {"key": k, "value": 0.0 if v is None else float(v), "remove": v is None}
                        for k, v in alterations[entity].items()
                    ],
                }
                for entity in entities
            ],
            "validate_only": validate_only,
        }
        out: dict[QuotaEntity, KafkaError | None] = dict.fromkeys(entities)
        if not entities:
            return out
        resp = await self._retrying(lambda: self.cluster.send_any(ALTER_CLIENT_QUOTAS, body))
        answered = set()
        for e in resp.entries:
            entity = entity_of(e.entity)
            answered.add(entity)
            if entity in out:
                out[entity] = error_for(e.error_code, e.error_message, str(entity)) if e.error_code else None
        for entity in entities:
            if entity not in answered:
                out[entity] = KafkaError(f"the broker response did not contain a result for {entity}")
        return out
