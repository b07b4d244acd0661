"""DeleteTopics: v1-3.

Behavior:
- Deletes each named topic and its partition directories; parked fetches on
  it are woken (and then answer UNKNOWN_TOPIC_OR_PARTITION).
- Unknown topic: UNKNOWN_TOPIC_OR_PARTITION; an internal topic
  (__consumer_offsets): INVALID_REQUEST, the topic stays.
Version notes: v1-3 share one layout.
"""

from __future__ import annotations

from typing import Any

from broker import registry
from broker.cluster.view import INTERNAL_TOPICS
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

API_KEY = 20


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    results = []
    for name in req.topic_names:
        code = 0
        try:
            if name in INTERNAL_TOPICS:
                raise KafkaError("internal topics cannot be deleted", ErrorCode.INVALID_REQUEST)
            ctx.broker.admin.delete_topic(name)
        except KafkaError as exc:
            code = exc.code
        results.append({"name": name, "error_code": code})
    return {"throttle_time_ms": 0, "responses": results}


registry.register(API_KEY, 1, 3, handle)
