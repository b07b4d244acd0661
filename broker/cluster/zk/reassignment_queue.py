"""`ReassignmentQueue`: AlterPartitionReassignments requests held by the controller until each partition
has its answer.

A request becomes a `ReassignRequest` (each partition's target replicas,
None to cancel). On each snapshot it acts on, the controller asks `plan` for
the changes of the waiting partitions (`reassignment.start`); a refusal is
answered at once, a change once its topic's ZooKeeper transaction lands
(`landed`). A transaction that lost a race (the topic or a partition state
changed meanwhile) leaves its partitions waiting for the next snapshot, as
does a partition the controller writes anyway in that round. Kafka answers
once the reassignment is started, not finished; so does this. A caller that
times out gets REQUEST_TIMED_OUT for what is left; once this broker is no
longer the controller everything waiting is answered NOT_CONTROLLER.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from broker.cluster.zk.reassignment import Answer, Change, start
from broker.cluster.zk.snapshot import Snapshot, TopicPartition
from protocol.errors import ErrorCode


@dataclass(eq=False)
class ReassignRequest:
    targets: dict[TopicPartition, list[int] | None]
    allow_rf_change: bool
    answers: dict[TopicPartition, Answer] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def answer(self, tp: TopicPartition, code: int, message: str | None = None) -> None:
        self.answers[tp] = (code, message)
        self.targets.pop(tp, None)
        if not self.targets:
            self.done.set()


class ReassignmentQueue:
    def __init__(self) -> None:
        self._requests: list[ReassignRequest] = []
        self._writing: dict[TopicPartition, ReassignRequest] = {}  # the changes of this round

    def add(self, targets: dict[TopicPartition, list[int] | None], allow_rf_change: bool) -> ReassignRequest:
        req = ReassignRequest(dict(targets), allow_rf_change)
        if targets:
            self._requests.append(req)
        else:
            req.done.set()
        return req

    async def wait(self, req: ReassignRequest, timeout_s: float) -> dict[TopicPartition, Answer]:
        try:
            async with asyncio.timeout(timeout_s):
                await req.done.wait()
        except TimeoutError:
            self._forget(req)
            late = "the reassignment was not started in time"
            return {**req.answers, **{tp: (ErrorCode.REQUEST_TIMED_OUT, late) for tp in req.targets}}
        self._forget(req)
        return req.answers

    def plan(self, snap: Snapshot, controller_epoch: int, written: set[TopicPartition]) -> list[Change]:
        """The changes the waiting requests ask for, leaving alone (and adding to) ``written``; refusals
        are answered now."""
        changes: list[Change] = []
        self._writing.clear()
        for req in list(self._requests):
            for tp, target in sorted(req.targets.items()):
                if tp in written:
                    continue  # the controller writes this partition anyway, or an earlier request does
                outcome = start(snap, tp, target, controller_epoch, allow_rf_change=req.allow_rf_change)
                if isinstance(outcome, Change):
                    changes.append(outcome)
                    written.add(tp)
                    self._writing[tp] = req
                else:
                    req.answer(tp, *outcome)
        return changes

    def landed(self, tp: TopicPartition) -> None:
        req = self._writing.pop(tp, None)
        if req is not None:
            req.answer(tp, ErrorCode.NONE)

    def fail_all(self, code: int, message: str) -> None:
        for req in self._requests:
            for tp in list(req.targets):
                req.answer(tp, code, message)
        self._requests.clear()
        self._writing.clear()

    def _forget(self, req: ReassignRequest) -> None:
        if req in self._requests:
            self._requests.remove(req)
        for tp in [tp for tp, r in self._writing.items() if r is req]:
            del self._writing[tp]
