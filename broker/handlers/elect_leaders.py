"""ElectLeaders: v0-2 (kafka-leader-election, Admin.electLeaders).

Behavior:
- ``election_type`` 0 (PREFERRED) moves leadership to each partition's
  preferred replica (the first in assignment order) when it is alive and in
  the ISR; 1 (UNCLEAN) elects a leader for a partition that has none, an
  out-of-sync replica if no in-sync one is alive. v0 has no type: PREFERRED.
- ``topic_partitions`` null: every partition; the answer then leaves out
  those whose wanted leader already leads (ELECTION_NOT_NEEDED), as KafkaApis.
- Per partition, as Kafka's controller answers: NONE (elected),
  ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
  ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION,
  INVALID_TOPIC_EXCEPTION (being deleted), REQUEST_TIMED_OUT (not done within
  ``timeout_ms``), NOT_CONTROLLER (clients send it to the controller).
- Any other election type: INVALID_REQUEST for every partition.
- Authorization (with an authorizer configured), as KafkaApis: ALTER on the
  CLUSTER, else every partition asked for and (v1+) the top level answer
  CLUSTER_AUTHORIZATION_FAILED (a request for all partitions names none:
  the refusal lists no topic the principal may not see).
- The answer comes once the elections are written to ZooKeeper (a single
  broker has nothing to elect: every partition's only replica leads).
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation
from protocol.errors import ErrorCode

API_KEY = 43
ELECTION_TYPES = (0, 1)  # PREFERRED, UNCLEAN


def _response(answers: dict[tuple[str, int], tuple[int, str | None]], top_error: int) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), (code, message) in sorted(answers.items()):
        by_topic.setdefault(topic, []).append(
            {"partition_id": index, "error_code": code, "error_message": message}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": top_error,
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }


async def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    asked = (
        None
        if req.topic_partitions is None
        else [(t.topic, p) for t in req.topic_partitions for p in t.partitions]
    )
    election_type = req.election_type if ctx.version >= 1 else 0
    if not ctx.cluster_authorized(AclOperation.ALTER):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    elif election_type not in ELECTION_TYPES:
        code, message = ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}"
    else:
        answers = await cluster.elect_leaders(election_type, asked, max(req.timeout_ms, 0) / 1000)
        if asked is None:  # as KafkaApis: of every partition, only those an election concerned
            answers = {tp: a for tp, a in answers.items() if a[0] != ErrorCode.ELECTION_NOT_NEEDED}
        return _response(answers, ErrorCode.NONE)
    return _response({tp: (code, message) for tp in asked or ()}, code)


registry.register(API_KEY, 0, 2, handle)
