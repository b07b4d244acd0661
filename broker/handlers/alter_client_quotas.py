"""AlterClientQuotas: v0-1.

Behavior (Kafka's KafkaApis, ClientQuotaControlManager):
- Needs ALTER_CONFIGS on the cluster, else every entry answers
  CLUSTER_AUTHORIZATION_FAILED and nothing changes.
- Each entry names an entity (``user`` and/or ``client-id``; a null name is
  the default entity) and ops: set ``key`` to ``value``, or ``remove`` it.
  Keys: producer_byte_rate, consumer_byte_rate (whole numbers),
  request_percentage, controller_mutation_rate.
- Per entry, INVALID_REQUEST with Kafka's message and no change: an empty
  entity, a repeated or unknown entity type, an empty name, an ``ip`` entity
  (IP quotas are not supported here), a repeated key, an unknown key, a
  value not above 0, a fractional or too large value for a whole-number key.
  An entity named by several entries: each answers INVALID_REQUEST and none
  is applied. Other entries are applied.
- ``validate_only``: the checks and answers only.
- Durable before the answer: the data directory on a single broker,
  ZooKeeper in a cluster (Kafka's ``/config/users/<user>``,
  ``/config/clients/<client-id>``, ``/config/users/<user>/clients/<client-id>``
  and a change notification: every broker applies it).
Version notes: v1 is flexible. One answer per distinct entity, in request order.
"""

from __future__ import annotations

import logging
from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from broker.security.quota_config import Entity, QuotaError, check_entity, check_ops, entity_text
from protocol.errors import ErrorCode

API_KEY = 49

log = logging.getLogger("minikafka.quotas")


def _entry(entity: Any, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name} for e in entity],
    }


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if not ctx.cluster_authorized(AclOperation.ALTER_CONFIGS):
        return {
            "throttle_time_ms": 0,
            "entries": [
                _entry(e.entity, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
                for e in req.entries
            ],
        }
    answers: list[dict[str, Any]] = []
    by_entity: dict[Entity, tuple[dict[str, Any], dict[str, float | None]]] = {}
    repeated: set[Entity] = set()
    for entry in req.entries:
        answer = _entry(entry.entity)
        try:
            entity = check_entity((e.entity_type, e.entity_name) for e in entry.entity)
        except QuotaError as exc:
            answer.update(error_code=exc.code, error_message=exc.message)
            answers.append(answer)
            continue
        if entity in by_entity:
            repeated.add(entity)
            continue
        answers.append(answer)
        try:
            ops = check_ops(((o.key, o.value, o.remove) for o in entry.ops), entity)
        except QuotaError as exc:
            answer.update(error_code=exc.code, error_message=exc.message)
            ops = {}
        by_entity[entity] = (answer, ops)
    for entity in repeated:
        by_entity[entity][0].update(
            error_code=ErrorCode.INVALID_REQUEST,
            error_message=f"Ignoring duplicate entity {entity_text(entity)}",
        )
    changes = {e: ops for e, (answer, ops) in by_entity.items() if not answer["error_code"] and ops}
    if changes and not req.validate_only:
        try:
            await ctx.broker.security.quotas.alter(changes)
        except Exception:
            log.exception("writing client quotas failed")
            for entity in changes:
                by_entity[entity][0].update(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
    return {"throttle_time_ms": 0, "entries": answers}


registry.register(API_KEY, 0, 1, handle)
