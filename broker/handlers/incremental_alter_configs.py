"""IncrementalAlterConfigs: v0.

Behavior:
- Topic resources: per config SET (0), DELETE (1, back to the default), APPEND
  (2) / SUBTRACT (3) for list configs (cleanup.policy); the result is validated
  (INVALID_CONFIG naming the key), persisted and applied at once.
- validate_only checks and changes nothing; broker resources: INVALID_REQUEST;
  unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
- Authorization (with an authorizer configured), as KafkaApis: ALTER_CONFIGS on
  the topic (else TOPIC_AUTHORIZATION_FAILED), on the group for group
  resources (else GROUP_AUTHORIZATION_FAILED), on the cluster for broker,
  broker-logger and client-metrics resources (else
  CLUSTER_AUTHORIZATION_FAILED); checked first, answered with no message.
Version notes: v1 is v0 in the flexible encoding.
"""

from __future__ import annotations

from typing import Any

from broker import registry, topic_configs
from broker.context import RequestContext
from broker.handlers.alter_configs import alter_response

API_KEY = 44


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return alter_response(
        ctx,
        req,
        lambda r: topic_configs.incremental_overrides(ctx.broker, r.resource_name, r.configs),
        incremental=True,
    )


registry.register(API_KEY, 0, 1, handle)
