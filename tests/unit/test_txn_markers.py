"""The coordinator's marker channel (broker/txn/markers.py), with partition leaders faked.

Kafka's TransactionMarkerRequestCompletionHandler: a leader answering a retriable error
(UNKNOWN_TOPIC_OR_PARTITION included: it may not host the partition yet) is asked again, with
leaders looked up afresh; a partition whose topic is gone from the cluster is given up, as are
markers the partition refuses as stale.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from broker.cluster.view import PartitionState, TopicState
from broker.txn import markers
from broker.txn.markers import MarkerWriter
from protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(30)

TP = tuple[str, int]


class View:
    """A cluster of brokers 1 (this one) and 2, every partition led by broker 2."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = {
            name: TopicState(
                name, uuid.uuid4(), tuple(PartitionState(i, 2, 0, (2,), (2,)) for i in range(count))
            )
            for name, count in topics.items()
        }

    def topic(self, name: str) -> TopicState | None:
        return self.topics.get(name)


class Replicas:
    node_id = 1


def writer(view: View, answers: list[dict[TP, ErrorCode]]) -> tuple[MarkerWriter, list[list[TP]]]:
    """A MarkerWriter whose WriteTxnMarkers to broker 2 get ``answers`` in turn (then NONE)."""
    w = MarkerWriter(Replicas(), None, None, view, None)  # type: ignore[arg-type]
    asked: list[list[TP]] = []

    async def remote(leader: int, tps: list[TP], *marker: Any) -> dict[TP, ErrorCode]:
        assert leader == 2
        asked.append(sorted(tps))
        answer = answers.pop(0) if answers else {}
        return {tp: answer.get(tp, ErrorCode.NONE) for tp in tps}

    w._remote = remote  # type: ignore[method-assign]
    return w, asked


async def test_unknown_partition_at_its_leader_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markers, "RETRY_BACKOFF_S", 0.0)
    view = View({"a": 2})
    w, asked = writer(view, [{("a", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}])
    await asyncio.wait_for(w.write(7, 0, True, 3, frozenset({("a", 0), ("a", 1)}), lambda: True), 5)
    assert asked == [[("a", 0), ("a", 1)], [("a", 1)]]


async def test_a_deleted_topic_and_stale_markers_are_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markers, "RETRY_BACKOFF_S", 0.0)
    view = View({"a": 1, "b": 1})
    first = {("a", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("b", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    w, asked = writer(view, [first, first])

    async def delete_a() -> None:
        while len(asked) < 2:
            await asyncio.sleep(0)
        del view.topics["a"]  # deleted while its leader did not know it: nothing left to mark

    deleting = asyncio.ensure_future(delete_a())
    await asyncio.wait_for(w.write(7, 0, False, 3, frozenset({("a", 0), ("b", 0)}), lambda: True), 5)
    await asyncio.wait_for(deleting, 5)
    assert asked[0] == [("a", 0), ("b", 0)]
    assert all(batch == [("a", 0)] for batch in asked[1:])
