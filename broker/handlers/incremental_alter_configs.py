"""IncrementalAlterConfigs: v0.

Behavior:
- Topic resources: per config SET (0), DELETE (1, back to the default), APPEND
  (2) / SUBTRACT (3) for list configs (cleanup.policy); the result is validated
  (INVALID_CONFIG naming the key), persisted and applied at once.
- Broker resources (``""``: the cluster default; this broker's id): the same
  operations on that level's set of dynamic broker configs, checked, stored
  and applied as AlterConfigs does (broker/handlers/alter_configs.py).
- Broker-logger resources (this broker's id): SET a logger's level, DELETE it
  (the logger inherits its parent's again); live, not persisted
  (broker/dynamic/loggers.py). Checked in Kafka's order: authorization (an
  error with Kafka's message), the id, then every operation before any applies.
- validate_only checks and changes nothing; unknown topic:
  UNKNOWN_TOPIC_OR_PARTITION.
- Authorization (with an authorizer configured), as KafkaApis: ALTER_CONFIGS on
  the topic (else TOPIC_AUTHORIZATION_FAILED), on the group for group
  resources (else GROUP_AUTHORIZATION_FAILED), on the cluster for broker,
  broker-logger and client-metrics resources (else
  CLUSTER_AUTHORIZATION_FAILED), answered with no message; checked first,
  except that a broker resource's id and new set are checked before it, as
  Kafka's ConfigAdminManager preprocesses them.
Version notes: v1 is v0 in the flexible encoding.
"""

from __future__ import annotations

from typing import Any

from broker import broker_configs, registry, topic_configs
from broker.context import RequestContext
from broker.handlers.alter_configs import alter_response

API_KEY = 44


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return await alter_response(
        ctx,
        req,
        lambda r: topic_configs.incremental_overrides(ctx.broker, r.resource_name, r.configs),
        lambda r: broker_configs.incremental_change(r.configs),
        incremental=True,
    )


registry.register(API_KEY, 0, 1, handle)
