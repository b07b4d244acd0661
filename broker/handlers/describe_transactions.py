"""DescribeTransactions: v0.

Behavior:
- Per transactional id, as its coordinator has it: state (Kafka's names:
  Empty, Ongoing, PrepareCommit, ...), timeout, the start time of its last
  transaction in any state, as Kafka answers it (-1 before its first one),
  producer id and epoch, and the partitions of the open transaction by
  topic. An id this broker does not coordinate: NOT_COORDINATOR; one it
  does not know: TRANSACTIONAL_ID_NOT_FOUND; replay in progress:
  COORDINATOR_LOAD_IN_PROGRESS; an empty one: INVALID_REQUEST.
Version notes: flexible from v0.
- Authorization (with an authorizer configured), as KafkaApis: DESCRIBE on each
  transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED; the
  partitions of topics the principal may not DESCRIBE are left out.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.authorized_operations import denied
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.topic_results import partitions_by_topic
from protocol.errors import ErrorCode

API_KEY = 65


def _state(ctx: RequestContext, txn_id: str) -> dict[str, Any]:
    if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
        code, txn = ctx.broker.transactions.describe(txn_id)
    else:
        code, txn = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    if txn is None:
        return {
            "error_code": code,
            "transactional_id": txn_id,
            "transaction_state": "",
            "transaction_timeout_ms": 0,
            "transaction_start_time_ms": -1,
            "producer_id": -1,
            "producer_epoch": -1,
            "topics": [],
        }
    topics = partitions_by_topic(txn.partitions)
    for hidden in denied(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topics):
        del topics[hidden]
    return {
        "error_code": 0,
        "transactional_id": txn_id,
        "transaction_state": txn.state.kafka_name,
        "transaction_timeout_ms": txn.timeout_ms,
        "transaction_start_time_ms": txn.start_ms,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
    }


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "transaction_states": [_state(ctx, t) for t in req.transactional_ids]}


registry.register(API_KEY, 0, 0, handle)
