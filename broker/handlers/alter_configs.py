"""AlterConfigs: v0-1.

Behavior:
- Topic resources: the given configs replace the topic's whole set of
  overrides (Kafka's non-incremental semantics: names left out return to their
  defaults); validated first (unknown name or bad value: INVALID_CONFIG naming
  the key), persisted, and applied to every partition log at once.
- validate_only checks and changes nothing.
- Before anything else, as Kafka: a resource named twice in the request, a
  config key named twice, or a null value answer INVALID_REQUEST with Kafka's
  message (IncrementalAlterConfigs too, where DELETE takes a null value).
- Broker resources: INVALID_REQUEST (broker configs are static here).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
- Authorization (with an authorizer configured), as KafkaApis: ALTER_CONFIGS on
  the topic (else TOPIC_AUTHORIZATION_FAILED) or, for broker and
  client-metrics resources, on the cluster (else CLUSTER_AUTHORIZATION_FAILED);
  checked first, answered with no message.
Version notes: v0 and v1 share one layout; v2 is flexible.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker import registry, topic_configs
from broker.context import RequestContext
from broker.handlers.describe_configs import BROKER_LOGGER, GROUP, denial
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode, KafkaError

API_KEY = 33
DELETE = 1  # IncrementalAlterConfigs' config_operation that takes no value


def alter_response(
    ctx: RequestContext, req: Any, overrides_of: Any, incremental: bool = False
) -> dict[str, Any]:
    """Shared by AlterConfigs and IncrementalAlterConfigs: `overrides_of(resource)` gives the new overrides."""
    responses = []
    named = Counter((r.resource_type, r.resource_name) for r in req.resources)
    for r in req.resources:
        code, message = 0, None
        # Kafka's legacy AlterConfigs has no ACL for broker-logger and group resources (it refuses them).
        refused = None
        malformed = _malformed(r, incremental, named[(r.resource_type, r.resource_name)] > 1)
        if malformed is None and (incremental or r.resource_type not in (BROKER_LOGGER, GROUP)):
            refused = denial(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
        if malformed is not None:
            code, message = ErrorCode.INVALID_REQUEST, malformed
        elif refused is not None:
            code = refused  # answered without a message, as Kafka
        else:
            try:
                if r.resource_type != topic_configs.TOPIC:
                    raise KafkaError(
                        "only topic configs can be changed; broker configs are static",
                        ErrorCode.INVALID_REQUEST,
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


def _malformed(r: Any, incremental: bool, repeated: bool) -> str | None:
    """Kafka's preprocessing of both APIs (ConfigAdminManager.preprocess), before anything else:
    a resource named twice, a config key named twice, a null value (but for an incremental
    DELETE) are INVALID_REQUEST with its message."""
    if repeated:
        return "Each resource must appear at most once."
    names = [c.name for c in r.configs]
    if len(set(names)) != len(names):
        return "Error due to duplicate config keys"
    nulls = [
        c.name for c in r.configs if c.value is None and not (incremental and c.config_operation == DELETE)
    ]
    if nulls:
        return "Null value not supported for : " + ", ".join(nulls)
    return None


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    def overrides(r: Any) -> dict[str, str]:
        return {c.name: c.value for c in r.configs}

    return alter_response(ctx, req, overrides)


registry.register(API_KEY, 0, 2, handle)
