"""CreateTopics: v2-7.

Behavior:
- Validates each topic: legal name (Kafka's characters, <= 249, not "." or
  ".."): INVALID_TOPIC_EXCEPTION; partitions >= 1 (-1: num.partitions):
  INVALID_PARTITIONS; replication factor -1 (default.replication.factor) or
  1..live brokers: INVALID_REPLICATION_FACTOR; manual assignments must name
  distinct live brokers, as many for every partition:
  INVALID_REPLICA_ASSIGNMENT;
  topic configs by their topic-level names, none null, and Kafka's tiered
  storage rules (broker/topic_configs.py `check_overrides`): INVALID_CONFIG; existing topic:
  TOPIC_ALREADY_EXISTS; the same name twice in one request: INVALID_REQUEST.
  The name is checked first (illegal, then existing), as Kafka does, so a
  topic that exists answers TOPIC_ALREADY_EXISTS whatever else is asked.
- Placement (no assignments given): Kafka's, rack-aware when the live brokers
  have a ``broker.rack`` (`broker.cluster.assignment`); while only some of
  them have one the topic answers UNKNOWN_SERVER_ERROR, as Kafka does
  (ZooKeeper mode; its answer carries no message, this one says why).
- validate_only checks everything and creates nothing.
- v5+: a topic that is (or, with validate_only, would be) created is answered
  with its partition count, replication factor and every topic config with
  its value and source, as DescribeConfigs gives them; v7+ with its new topic
  ID (zero with validate_only). A failed topic: -1, -1, no configs.
- Authorization (with an authorizer configured), as KafkaApis: CREATE on the
  cluster, else on each topic: TOPIC_AUTHORIZATION_FAILED ("Authorization
  failed."; after the INVALID_REQUEST of a duplicate). Without
  DESCRIBE_CONFIGS on a topic, v5+ answers it with topic_config_error_code
  TOPIC_AUTHORIZATION_FAILED and no description (no configs, -1, -1, zero
  topic ID), unless its creation failed (then 0, as every failed topic).
Version notes: v2-4 share one layout; v5 adds the created topic's
  description and is flexible; v6 is v5's layout (its clients understand
  THROTTLING_QUOTA_EXCEEDED); v7 adds topic_id.
- Quotas: a topic's partitions count against its client's
  controller_mutation_rate (not with validate_only); from v6 a topic is
  refused with THROTTLING_QUOTA_EXCEEDED once the quota is exceeded, below v6
  it is created and the answer throttled (broker/security/quotas.py).
"""

from __future__ import annotations

from typing import Any

from broker import registry, topic_configs
from broker.authorized_operations import denied, unrestricted
from broker.cluster.assignment import check_replicas
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.security.quotas import MutationQuota
from broker.topic_results import per_topic
from protocol.errors import ErrorCode, KafkaError
from storage import naming

API_KEY = 19
STRICT_QUOTA_SINCE = 6  # controller_mutation_rate refuses topics from v6 (KIP-599)


def _create(ctx: RequestContext, t: Any, validate_only: bool, quota: MutationQuota | None) -> dict[str, Any]:
    """Create (or validate) one topic; what v5+ reports about it."""
    broker = ctx.broker
    # the name first, as Kafka: "create if missing" callers rely on TOPIC_ALREADY_EXISTS whatever
    # else the request says
    error = naming.topic_name_error(t.name)
    if error is not None:
        raise KafkaError(error, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if broker.cluster.topic(t.name) is not None:
        raise KafkaError(f"topic {t.name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
    nulls = [c.name for c in t.configs if c.value is None]
    if nulls:
        raise KafkaError(
            f"Null value not supported for topic configs: {','.join(nulls)}", ErrorCode.INVALID_CONFIG
        )
    live = {b.node_id for b in broker.cluster.brokers()}
    partitions = t.num_partitions
    assignment: dict[int, list[int]] | None = None
    factor = t.replication_factor
    if t.assignments:
        if partitions != -1 or factor != -1:
            raise KafkaError(
                "assignments given with partitions or replication factor", ErrorCode.INVALID_REQUEST
            )
        assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        if sorted(assignment) != list(range(len(assignment))):
            raise KafkaError("assignment partitions must be 0..n-1", ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        sizes = {len(r) for r in assignment.values()}
        for index, replicas in assignment.items():
            check_replicas(index, replicas, live)
        if len(sizes) != 1:
            raise KafkaError(
                "every partition needs the same number of replicas", ErrorCode.INVALID_REPLICA_ASSIGNMENT
            )
        partitions, factor = len(assignment), sizes.pop()
    else:
        if partitions == -1:
            partitions = int(broker.config["num.partitions"])
        if partitions < 1:
            raise KafkaError(f"partitions must be at least 1, got {partitions}", ErrorCode.INVALID_PARTITIONS)
        if factor == -1:
            factor = int(broker.config["default.replication.factor"])
        if factor < 1 or factor > len(live):
            raise KafkaError(
                f"replication factor: {factor} larger than available brokers: {len(live)}",
                ErrorCode.INVALID_REPLICATION_FACTOR,
            )
    if quota is not None and not validate_only:
        quota.admit(partitions)
    configs = {c.name: c.value for c in t.configs}
    topic_configs.check_overrides(broker, t.name, {k: str(v) for k, v in configs.items()}, {})
    topic_id = broker.admin.create_topic(
        t.name,
        partitions,
        configs,
        validate_only=validate_only,
        replication_factor=factor,
        assignment=assignment,
    )
    described = {"topic_id": topic_id, "num_partitions": partitions, "replication_factor": factor}
    if ctx.version >= 5:
        overrides = {k: str(v) for k, v in configs.items() if v is not None}
        described["configs"] = topic_configs.describe_overrides(broker, overrides, None, False)
    return described


def _uncreatable(ctx: RequestContext, names: list[str]) -> frozenset[str]:
    if unrestricted(ctx) or ctx.cluster_authorized(AclOperation.CREATE):
        return frozenset()
    return denied(ctx, AclOperation.CREATE, ResourceType.TOPIC, names)


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    described: dict[str, dict[str, Any]] = {}
    names = [t.name for t in req.topics]
    uncreatable = _uncreatable(ctx, names)
    hidden = denied(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names)
    quota = ctx.broker.security.quotas.mutation_quota(ctx, STRICT_QUOTA_SINCE)

    def create(t: Any) -> None:
        if t.name in uncreatable:
            raise KafkaError("Authorization failed.", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        described[t.name] = _create(ctx, t, req.validate_only, quota)

    results = per_topic(req.topics, create)
    for result in results:
        name = result["name"]
        if result["error_code"] == 0 and name not in hidden:
            result.update(described[name])
        else:
            result.update(num_partitions=-1, replication_factor=-1, configs=[])
        # Kafka keeps the config error unless the creation itself was tried and failed.
        if name in hidden and (result["error_code"] == 0 or name in uncreatable or names.count(name) > 1):
            result["topic_config_error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    answer = {"throttle_time_ms": 0, "topics": results}
    return answer if quota is None else quota.finish(answer)


registry.register(API_KEY, 2, 7, handle)
