"""WriteTxnMarkers: v1 (sent by transaction coordinators to partition leaders).

Behavior:
- Each marker (producer id and epoch, COMMIT when transaction_result is
  true, else ABORT, coordinator epoch) is appended to every partition listed
  (`broker.txn.markers.write_local`): answered per partition once durable and
  replicated. A partition this broker does not lead: NOT_LEADER_OR_FOLLOWER;
  unknown: UNKNOWN_TOPIC_OR_PARTITION; a marker older than the partition's
  producer epoch INVALID_PRODUCER_EPOCH, or from an older coordinator epoch
  TRANSACTION_COORDINATOR_FENCED. Markers on `__consumer_offsets` settle the
  transaction's offset commits.
Version notes: v1 is flexible; v0 is not served (Kafka 4.0 removed it, KIP-896):
  a request at v0 closes the connection, as any unsupported version.
- Authorization (with an authorizer configured), as KafkaApis: ALTER or
  CLUSTER_ACTION on the cluster, else every partition of every marker answers
  CLUSTER_AUTHORIZATION_FAILED and nothing is written.
Leaves out: throttling.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from broker.txn.markers import write_local
from protocol.errors import ErrorCode

API_KEY = 27


async def _marker(ctx: RequestContext, m: Any) -> dict[str, Any]:
    broker = ctx.broker
    tps = [(t.name, p) for t in m.topics for p in t.partition_indexes]
    codes = await write_local(
        broker.replicas,
        broker.group_commit,
        broker.groups,
        tps,
        m.producer_id,
        m.producer_epoch,
        m.transaction_result,
        m.coordinator_epoch,
    )
    topics = [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p, "error_code": codes[(t.name, p)]} for p in t.partition_indexes
            ],
        }
        for t in m.topics
    ]
    return {"producer_id": m.producer_id, "topics": topics}


async def _handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    return {"markers": [await _marker(ctx, m) for m in req.markers]}


def _refused(req: Any) -> dict[str, Any]:
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return {
        "markers": [
            {
                "producer_id": m.producer_id,
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {"partition_index": p, "error_code": code} for p in t.partition_indexes
                        ],
                    }
                    for t in m.topics
                ],
            }
            for m in req.markers
        ]
    }


def handle(ctx: RequestContext, req: Any) -> Any:
    if not ctx.cluster_authorized(AclOperation.ALTER) and not ctx.cluster_authorized(
        AclOperation.CLUSTER_ACTION
    ):
        return _refused(req)
    return _handle(ctx, req)


registry.register(API_KEY, 1, 1, handle)
