"""DescribeConfigs: v0-4.

Behavior:
- Topic resources (type 2): every topic-level config with its effective value,
  source 1 (set on the topic), 4 (from the broker's properties/env/flags) or 5
  (default); null or empty configuration_keys means all (Kafka's ConfigHelper);
  unknown names are left out.
  Synonyms (include_synonyms) list the topic override and the broker key behind it.
  A broker-level default set dynamically shows as source 2 or 3 (broker/topic_configs.py).
- Broker resources (type 4): this broker's id, every broker key with its
  effective value and source (dynamic per-broker 2, dynamic cluster default 3,
  static 4, default 5); "" the cluster default's dynamic keys only; another
  id INVALID_REQUEST (broker/broker_configs.py).
- Broker-logger resources (type 8, this broker's id): every logger and its
  level, source 6 (broker/dynamic/loggers.py).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; other resource types: INVALID_REQUEST.
- Authorization (with an authorizer configured), as KafkaApis (ConfigHelper):
  DESCRIBE_CONFIGS on the topic (else TOPIC_AUTHORIZATION_FAILED), on the
  cluster for broker, broker-logger and client-metrics resources (else
  CLUSTER_AUTHORIZATION_FAILED), on the group for group resources (else
  GROUP_AUTHORIZATION_FAILED); checked before anything else, with Kafka's message.
Version notes: v0 has is_default instead of config_source and no synonyms; v1
  adds include_synonyms; v2 is v1's layout; v3 adds config_type (Kafka's ids)
  and, with include_documentation, a one-line description of each topic
  config and dynamic broker config; v4 is flexible.
"""

from __future__ import annotations

from typing import Any

from broker import broker_configs, registry, topic_configs
from broker.context import RequestContext
from broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode, KafkaError

API_KEY = 32
BROKER_LOGGER, CLIENT_METRICS, GROUP = 8, 16, 32

_MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


def acl_resource(resource_type: int, name: str) -> tuple[ResourceType, str, ErrorCode] | None:
    """The ACL resource guarding a config resource, and the error a denial answers (Kafka's
    mapping for the config APIs); None for a type with none."""
    if resource_type == topic_configs.TOPIC:
        return ResourceType.TOPIC, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (topic_configs.BROKER, BROKER_LOGGER, CLIENT_METRICS):
        return ResourceType.CLUSTER, CLUSTER_NAME, ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource_type == GROUP:
        return ResourceType.GROUP, name, ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def denial(ctx: RequestContext, operation: AclOperation, resource_type: int, name: str) -> ErrorCode | None:
    """The config resource's authorization error if ``operation`` is not allowed on it, else None."""
    guard = acl_resource(resource_type, name)
    if guard is not None and not ctx.authorized(operation, guard[0], guard[1]):
        return guard[2]
    return None


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    synonyms = ctx.version >= 1 and req.include_synonyms
    docs = ctx.version >= 3 and req.include_documentation
    results = []
    for r in req.resources:
        keys = list(r.configuration_keys) if r.configuration_keys else None  # null or empty: all, as Kafka
        code, message, configs = 0, None, []
        try:
            refused = denial(ctx, AclOperation.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
            if refused is not None:
                raise KafkaError(_MESSAGES[refused], refused)
            if r.resource_type == topic_configs.TOPIC:
                configs = topic_configs.describe_topic(ctx.broker, r.resource_name, keys, synonyms, docs)
            elif r.resource_type == topic_configs.BROKER:
                configs = broker_configs.describe_broker(ctx.broker, r.resource_name, keys, synonyms, docs)
            elif r.resource_type == BROKER_LOGGER:
                configs = broker_configs.describe_loggers(ctx.broker, r.resource_name, keys)
            else:
                raise KafkaError(f"unsupported resource type {r.resource_type}", ErrorCode.INVALID_REQUEST)
        except KafkaError as exc:
            code, message = exc.code, str(exc)
        results.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "configs": configs,
            }
        )
    return {"throttle_time_ms": 0, "results": results}


registry.register(API_KEY, 0, 4, handle)
