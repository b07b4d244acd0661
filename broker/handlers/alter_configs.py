"""AlterConfigs: v0-1.

Behavior:
- Topic resources: the given configs replace the topic's whole set of
  overrides (Kafka's non-incremental semantics: names left out return to their
  defaults); validated first (unknown name or bad value: INVALID_CONFIG naming
  the key), persisted, and applied to every partition log at once.
- validate_only checks and changes nothing.
- Broker resources: INVALID_REQUEST (broker configs are static here).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
Version notes: v0 and v1 share one layout; v2 is flexible.
"""

from __future__ import annotations

from typing import Any

from broker import registry, topic_configs
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

API_KEY = 33


def alter_response(ctx: RequestContext, req: Any, overrides_of: Any) -> dict[str, Any]:
    """Shared by AlterConfigs and IncrementalAlterConfigs: `overrides_of(resource)` gives the new overrides."""
    responses = []
    for r in req.resources:
        code, message = 0, None
        try:
            if r.resource_type != topic_configs.TOPIC:
                raise KafkaError(
                    "only topic configs can be changed; broker configs are static", ErrorCode.INVALID_REQUEST
                )
            topic_configs.alter_topic(ctx.broker, r.resource_name, overrides_of(r), req.validate_only)
        except KafkaError as exc:
            code, message = exc.code, str(exc)
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
            }
        )
    return {"throttle_time_ms": 0, "responses": responses}


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    def overrides(r: Any) -> dict[str, str]:
        return {c.name: c.value for c in r.configs if c.value is not None}

    return alter_response(ctx, req, overrides)


registry.register(API_KEY, 0, 2, handle)
