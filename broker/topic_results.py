"""Per-topic results of the topic admin APIs (CreateTopics, CreatePartitions), the
per-partition error answers of the offset APIs (OffsetCommit, OffsetDelete), and partitions
grouped by topic as requests and records list them (`partitions_by_topic`).

Kafka answers each topic of such a request on its own: a topic named twice
gets INVALID_REQUEST, a `KafkaError` raised for one topic becomes that
topic's error code and message, and the other topics go ahead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from protocol.errors import ErrorCode, KafkaError


def partitions_by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """{topic: its partition indexes}, topics and indexes in ascending order."""
    topics: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        topics.setdefault(topic, []).append(p)
    return topics


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


def partition_codes(topics: Sequence[Any], codes: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    """{name, partitions: [{partition_index, error_code}]} for each request topic (``.name`` and
    ``.partitions`` of ``.partition_index``), in request order, codes from ``codes``."""
    return [
        {
            "name": t.name,
            "partitions": [
                {"partition_index": p.partition_index, "error_code": codes[(t.name, p.partition_index)]}
                for p in t.partitions
            ],
        }
        for t in topics
    ]


def split_unknown(
    known: Mapping[str, Any], topics: Sequence[Any]
) -> tuple[dict[tuple[str, int], int], list[tuple[tuple[str, int], Any]]]:
    """Partitions of request ``topics`` that the cluster lacks (UNKNOWN_TOPIC_OR_PARTITION each),
    and the ``((topic, index), request partition)`` pairs of the ones it has. ``known``: name ->
    topic state with a ``partitions`` list."""
    unknown: dict[tuple[str, int], int] = {}
    present: list[tuple[tuple[str, int], Any]] = []
    for t in topics:
        info = known.get(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if info is None or not 0 <= p.partition_index < len(info.partitions):
                unknown[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                present.append((tp, p))
    return unknown, present
