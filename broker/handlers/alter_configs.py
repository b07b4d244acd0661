"""AlterConfigs: v0-1.

Behavior:
- Topic resources: the given configs replace the topic's whole set of
  overrides (Kafka's non-incremental semantics: names left out return to their
  defaults); validated first (unknown name or bad value: INVALID_CONFIG naming
  the key), persisted, and applied to every partition log at once.
- Broker resources (``""``: the cluster default; this broker's id): the given
  configs replace that level's whole set of dynamic broker configs, checked as
  Kafka checks them (a static key, a per-broker key at the default level, a
  bad value, another broker's id: INVALID_REQUEST with Kafka's message),
  stored (ZooKeeper's ``/config/brokers/<id|<default>>`` with a change
  notification in a cluster, the data directory on one broker) and applied
  at once (broker/broker_configs.py, broker/dynamic/).
- validate_only checks and changes nothing.
- Before anything else, as Kafka: a resource named twice in the request, a
  config key named twice, or a null value answer INVALID_REQUEST with Kafka's
  message (IncrementalAlterConfigs too, where DELETE takes a null value).
  Broker-logger resources: INVALID_REQUEST "Unknown resource type 8" (only
  IncrementalAlterConfigs changes log levels).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION.
- Authorization (with an authorizer configured), as KafkaApis: ALTER_CONFIGS on
  the topic (else TOPIC_AUTHORIZATION_FAILED) or, for broker and
  client-metrics resources, on the cluster (else CLUSTER_AUTHORIZATION_FAILED),
  answered with no message. Kafka checks it after its preprocessing, so a
  broker resource's own errors (above) come first; for topics it is checked
  before anything but the request's shape.
Version notes: v0 and v1 share one layout; v2 is flexible.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from broker import broker_configs, registry, topic_configs
from broker.context import RequestContext
from broker.dynamic import loggers
from broker.dynamic.configs import PasswordStorageError
from broker.dynamic.keys import DynamicConfigError
from broker.handlers.describe_configs import BROKER_LOGGER, CLIENT_METRICS, GROUP, denial
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode, KafkaError

API_KEY = 33
DELETE = 1  # IncrementalAlterConfigs' config_operation that takes no value

log = logging.getLogger("minikafka.config")


class _Denied(Exception):
    """ALTER_CONFIGS refused: answered with this code and no message, as Kafka."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


async def alter_response(
    ctx: RequestContext, req: Any, overrides_of: Any, broker_change_of: Any, incremental: bool = False
) -> dict[str, Any]:
    """Shared by AlterConfigs and IncrementalAlterConfigs: `overrides_of(resource)` gives a topic's
    new overrides, `broker_change_of(resource)` the change of a broker level's set."""
    responses = []
    named = Counter((r.resource_type, r.resource_name) for r in req.resources)
    for r in req.resources:
        code, message = 0, None
        try:
            malformed = _malformed(r, incremental, named[(r.resource_type, r.resource_name)] > 1)
            if malformed is not None:
                raise KafkaError(malformed, ErrorCode.INVALID_REQUEST)
            if r.resource_type == topic_configs.BROKER:
                await _alter_broker(ctx, r, broker_change_of(r), req.validate_only)
            elif r.resource_type == BROKER_LOGGER and incremental:
                _alter_loggers(ctx, r, req.validate_only)
            elif r.resource_type not in (topic_configs.TOPIC, CLIENT_METRICS, GROUP):
                raise KafkaError(f"Unknown resource type {r.resource_type}", ErrorCode.INVALID_REQUEST)
            else:
                refused = None
                # Kafka's legacy AlterConfigs has no ACL for group resources (it refuses them).
                if incremental or r.resource_type != GROUP:
                    refused = denial(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
                if refused is not None:
                    code = refused  # answered without a message, as Kafka
                elif r.resource_type != topic_configs.TOPIC:
                    raise KafkaError(
                        "only topic and broker configs can be changed here", ErrorCode.INVALID_REQUEST
                    )
                else:
                    topic_configs.alter_topic(ctx.broker, r.resource_name, overrides_of(r), req.validate_only)
        except KafkaError as exc:
            code, message = exc.code, str(exc)
        except _Denied as exc:
            code, message = exc.code, None
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
            }
        )
    return {"throttle_time_ms": 0, "responses": responses}


async def _alter_broker(ctx: RequestContext, r: Any, change: Any, validate_only: bool) -> None:
    """A BROKER resource: Kafka's preprocessing (id, then the new set checked), authorization, then
    the write. Raises KafkaError with the answer."""
    dynamic = ctx.broker.dynamic
    per_broker = broker_configs.per_broker_level(ctx.broker, r.resource_name)
    try:
        prepared = await dynamic.prepare(per_broker, change)
    except DynamicConfigError as exc:
        raise KafkaError(str(exc), ErrorCode.INVALID_REQUEST) from None
    except KafkaError:
        raise
    except Exception:  # ZooKeeper unreachable, a check that broke
        log.exception("reading or checking the dynamic broker configs of %r failed", r.resource_name)
        raise KafkaError("reading the broker configs failed", ErrorCode.UNKNOWN_SERVER_ERROR) from None
    refused = denial(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name)
    if refused is not None:
        raise _Denied(refused)
    if validate_only:
        return
    try:
        await dynamic.commit(prepared)
    except DynamicConfigError as exc:  # a concurrent change made it invalid
        raise KafkaError(str(exc), ErrorCode.INVALID_REQUEST) from None
    except PasswordStorageError as exc:
        raise KafkaError(
            f"Invalid config value for resource ConfigResource(type=BROKER, name='{r.resource_name}'): {exc}",
            ErrorCode.INVALID_CONFIG,
        ) from None
    except Exception:
        log.exception("storing the dynamic broker configs of %r failed", r.resource_name)
        raise KafkaError("storing the broker configs failed", ErrorCode.UNKNOWN_SERVER_ERROR) from None
    where = f"broker {ctx.broker.node_id}" if per_broker else "the cluster default"
    shown = {k: ("[hidden]" if broker_configs.sensitive(k) else v) for k, v in prepared.props.items()}
    log.info("dynamic configs of %s now %s", where, shown)


def _alter_loggers(ctx: RequestContext, r: Any, validate_only: bool) -> None:
    """A BROKER_LOGGER resource, as Kafka's RuntimeLoggerManager: authorization, id, checks, levels."""
    if denial(ctx, AclOperation.ALTER_CONFIGS, r.resource_type, r.resource_name) is not None:
        raise KafkaError("Cluster authorization failed.", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    loggers.check_node(r.resource_name, ctx.broker.node_id)
    loggers.check(r.configs)
    if not validate_only:
        loggers.apply(r.configs)


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


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    def overrides(r: Any) -> dict[str, str]:
        return {c.name: c.value for c in r.configs}

    return await alter_response(ctx, req, overrides, lambda r: broker_configs.replacing_change(r.configs))


registry.register(API_KEY, 0, 2, handle)
