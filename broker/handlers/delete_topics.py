"""DeleteTopics: v1-6.

Behavior:
- Deletes each topic and its partition directories; parked fetches on it are
  woken (and then answer UNKNOWN_TOPIC_OR_PARTITION).
- v6 names each topic by name or by topic ID. By ID: an unknown one answers
  UNKNOWN_TOPIC_ID with a null name; the answer to a topic deleted by name
  carries its ID. Both a name and an ID, or neither, for one topic:
  INVALID_REQUEST; so is a name or an ID given twice (each copy answers it),
  as Kafka 4's controller does.
- Unknown topic name: UNKNOWN_TOPIC_OR_PARTITION; an internal topic
  (__consumer_offsets): INVALID_REQUEST, the topic stays.
- In a cluster the controller deletes a topic after the request marks it:
  the answer waits (up to timeout_ms; 0: it does not wait) until the topic is
  gone from this broker's view and from ZooKeeper, else REQUEST_TIMED_OUT, as Kafka's
  DelayedDeleteTopics, so a delete followed by a create of the same name works.
- Authorization (with an authorizer configured), as KafkaApis: DELETE on each
  topic, else TOPIC_AUTHORIZATION_FAILED (whether or not it exists); a topic
  named by ID that the principal may not even DESCRIBE answers
  TOPIC_AUTHORIZATION_FAILED with a null name (IDs are not secret, names are).
  Checked after the request's INVALID_REQUEST cases.
- Quotas: a deleted topic's partitions count against the client's
  controller_mutation_rate; from v5 a topic is refused with
  THROTTLING_QUOTA_EXCEEDED once the quota is exceeded, below v5 the answer is
  throttled instead (broker/security/quotas.py).
Version notes: v1-4 share one layout; v5 adds error_message, v6 topics by ID
  (flexible from v4).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

from broker import registry
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.security.quotas import MutationQuota
from protocol.errors import ErrorCode, KafkaError
from protocol.schema import ZERO_UUID

API_KEY = 20
GONE_POLL_S = 0.05
STRICT_QUOTA_SINCE = 5  # controller_mutation_rate refuses topics from v5 (KIP-599)


def _result(name: str | None, topic_id: uuid.UUID, code: int, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}


def _delete(ctx: RequestContext, name: str, quota: MutationQuota | None) -> dict[str, Any]:
    if not ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, name):
        return _result(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    state = ctx.broker.cluster.topic(name)
    topic_id = ZERO_UUID if state is None else state.topic_id
    try:
        if name in INTERNAL_TOPICS:
            raise KafkaError("internal topics cannot be deleted", ErrorCode.INVALID_REQUEST)
        if quota is not None and state is not None:
            quota.admit(len(state.partitions))
        ctx.broker.admin.delete_topic(name)
    except KafkaError as exc:
        return _result(name, ZERO_UUID, exc.code, str(exc))
    return _result(name, topic_id, 0)


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    if ctx.version < 6:
        wanted = [(name, ZERO_UUID) for name in req.topic_names]
    else:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    quota = ctx.broker.security.quotas.mutation_quota(ctx, STRICT_QUOTA_SINCE)
    names = Counter(name for name, topic_id in wanted if topic_id == ZERO_UUID)
    ids = Counter(topic_id for _, topic_id in wanted if topic_id != ZERO_UUID)
    results = []
    for name, topic_id in wanted:
        if topic_id == ZERO_UUID:
            if name is None:
                results.append(
                    _result(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "neither name nor id given")
                )
            elif names[name] > 1:
                results.append(_result(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "duplicate topic name"))
            else:
                results.append(_delete(ctx, name, quota))
        elif name is not None:
            results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST, "both name and id given"))
        elif ids[topic_id] > 1:
            results.append(_result(None, topic_id, ErrorCode.INVALID_REQUEST, "duplicate topic id"))
        else:
            found = ctx.broker.cluster.topic_name(topic_id)
            if found is None:
                results.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id"))
            elif not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, found):
                results.append(
                    _result(
                        None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
                    )
                )
            else:
                result = _delete(ctx, found, quota)
                result["topic_id"] = topic_id
                results.append(result)
    answer = {"throttle_time_ms": 0, "responses": results}
    if quota is not None:
        answer = quota.finish(answer)
    going = [(r, r["name"]) for r in results if r["error_code"] == 0 and r["name"] is not None]
    going = [(r, name) for r, name in going if _present(ctx, name)]
    if not going or req.timeout_ms <= 0:
        return answer
    return _when_gone(ctx, answer, going, req.timeout_ms)


def _present(ctx: RequestContext, name: str) -> bool:
    """Whether ``name`` is still in this broker's view or still being deleted (a cluster's view
    drops a topic when it is marked, its znodes go later: only then can it be created again)."""
    return ctx.broker.cluster.topic(name) is not None or ctx.broker.admin.deleting(name)


async def _when_gone(
    ctx: RequestContext, answer: dict[str, Any], going: list[tuple[dict[str, Any], str]], timeout_ms: int
) -> dict[str, Any]:
    """Answer once the deleted topics are gone (`_present`: a cluster's controller deletes them
    after the request marked them), or REQUEST_TIMED_OUT for those still
    there after ``timeout_ms``, as Kafka's DelayedDeleteTopics: a client that deletes and then
    creates the same topic does not get TOPIC_ALREADY_EXISTS."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    while True:
        going = [(r, name) for r, name in going if _present(ctx, name)]
        if not going:
            return answer
        if loop.time() >= deadline:
            for r, _ in going:
                r.update(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message="deletion still in progress")
            return answer
        await asyncio.sleep(GONE_POLL_S)


registry.register(API_KEY, 1, 6, handle)
