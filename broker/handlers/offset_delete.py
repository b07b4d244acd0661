"""OffsetDelete: v0.

Behavior:
- Deletes a group's committed offsets for the partitions named (tombstones in
  ``__consumer_offsets``, answered once stored).
- A partition of a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION.
- Group errors, top-level with no partitions: unknown or dead group
  GROUP_ID_NOT_FOUND; a group with members whose protocol type is not
  "consumer": NON_EMPTY_GROUP; not its coordinator, loading: as the other group APIs.
- A consumer group with members keeps the offsets of topics a member
  subscribes to: GROUP_SUBSCRIBED_TO_TOPIC for those partitions.
- A partition with nothing committed answers 0, as Kafka does.
- Authorization (with an authorizer configured), as KafkaApis: DELETE on the
  group, else the top-level GROUP_AUTHORIZATION_FAILED; READ on each topic,
  else its partitions answer TOPIC_AUTHORIZATION_FAILED (before
  UNKNOWN_TOPIC_OR_PARTITION) and are not deleted.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.authorized_operations import denied, split_denied
from broker.context import RequestContext
from broker.groups import deferred
from broker.groups.model import TopicPartition
from broker.security.acls import AclOperation, ResourceType
from broker.topic_results import partition_codes, split_unknown
from protocol.errors import ErrorCode

API_KEY = 47


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, req.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
    forbidden = denied(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in req.topics))
    refused, allowed = split_denied(req.topics, forbidden)
    codes, present = split_unknown(ctx.broker.cluster.topics(), allowed)
    codes.update(refused)
    asked = [tp for tp, _ in present]

    def respond(answer: tuple[ErrorCode, dict[TopicPartition, ErrorCode]]) -> dict[str, Any]:
        error, results = answer
        if error != ErrorCode.NONE:
            return {"error_code": error, "throttle_time_ms": 0, "topics": []}
        return {
            "error_code": 0,
            "throttle_time_ms": 0,
            "topics": partition_codes(req.topics, {**results, **codes}),
        }

    return deferred(
        lambda cb: ctx.broker.groups.delete_offsets(req.group_id, asked, lambda e, r: cb((e, r))), respond
    )


registry.register(API_KEY, 0, 0, handle)
