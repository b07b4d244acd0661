"""Per-topic results of the topic admin APIs (CreateTopics, CreatePartitions).

Kafka answers each topic of such a request on its own: a topic named twice
gets INVALID_REQUEST, a `KafkaError` raised for one topic becomes that
topic's error code and message, and the other topics go ahead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from protocol.errors import ErrorCode, KafkaError


def per_topic(topics: Sequence[Any], act: Callable[[Any], None]) -> list[dict[str, Any]]:
    """``act`` on each request topic (it has ``.name``); one {name, error_code, error_message} each."""
    counts = Counter(t.name for t in topics)
    results = []
    for t in topics:
        code, message = 0, None
        if counts[t.name] > 1:
            code, message = ErrorCode.INVALID_REQUEST, f"topic {t.name} named more than once"
        else:
            try:
                act(t)
            except KafkaError as exc:
                code, message = exc.code, str(exc)
        results.append({"name": t.name, "error_code": code, "error_message": message})
    return results
