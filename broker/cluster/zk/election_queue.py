"""`ElectionQueue`: leader elections asked of this broker as controller, until each partition has its answer.

An ElectLeaders request becomes an `ElectionRequest` (its type, the partitions
still to settle, the answers so far; a request for every partition names them
when it is queued). The controller, on each snapshot it acts
on, plans the elections of the waiting partitions (`plan`) beside its own
state writes; a partition the controller writes anyway in that round waits
for the next snapshot. A partition is settled by an answer without a write
(ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE...) or by its state
write landing (`landed`); a write that lost a race (a leader changed the ISR
meanwhile) is planned again from the next snapshot. Requests end complete or,
once this broker is no longer the controller, with NOT_CONTROLLER. A caller
that times out gets REQUEST_TIMED_OUT for what is left, and the election goes
on without it, as Kafka's controller queues an election whatever its caller's
timeout.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from broker.cluster.zk.controller import StateWrite
from broker.cluster.zk.elections import ELECTION_TYPES, elect
from broker.cluster.zk.snapshot import Snapshot, TopicPartition
from protocol.errors import ErrorCode

log = logging.getLogger("minikafka.cluster")

Answer = tuple[int, str | None]  # (error code, message)


@dataclass(eq=False)
class ElectionRequest:
    election_type: int
    waiting: set[TopicPartition]
    answers: dict[TopicPartition, Answer] = field(default_factory=dict)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    abandoned: bool = False  # its caller timed out; it stays queued until every partition is settled

    def answer(self, tp: TopicPartition, code: int, message: str | None = None) -> None:
        self.answers[tp] = (code, message)
        self.waiting.discard(tp)


class ElectionQueue:
    def __init__(self) -> None:
        self._requests: list[ElectionRequest] = []
        # partition -> (election type, the requests its write answers), for the writes of this round
        self._writing: dict[TopicPartition, tuple[int, list[ElectionRequest]]] = {}

    def __bool__(self) -> bool:
        return bool(self._requests)

    def add(self, election_type: int, partitions: list[TopicPartition]) -> ElectionRequest:
        """Queue an election of ``partitions``; the caller then wakes the controller."""
        req = ElectionRequest(election_type, set(partitions))
        self._requests.append(req)
        return req

    async def wait(self, req: ElectionRequest, timeout_s: float) -> dict[TopicPartition, Answer]:
        """``req``'s answers once every partition has one, or REQUEST_TIMED_OUT for the rest after
        ``timeout_s``. As Kafka, a timeout does not cancel the election: it stays queued."""
        try:
            async with asyncio.timeout(timeout_s):
                await req.done.wait()
        except TimeoutError:
            req.abandoned = True
            late = "the election did not complete in time"
            return {**req.answers, **{tp: (ErrorCode.REQUEST_TIMED_OUT, late) for tp in req.waiting}}
        self._forget(req)
        return req.answers

    def plan(self, snap: Snapshot, controller_epoch: int, written: set[TopicPartition]) -> list[StateWrite]:
        """The state writes of the waiting elections, leaving alone the partitions in ``written`` (and
        adding its own to it); answers what needs no write. Two requests of one type for a partition
        share its write; one of another type waits for the next snapshot, as Kafka runs elections
        one after the other."""
        writes: list[StateWrite] = []
        self._writing.clear()
        for req in self._requests:
            for tp in sorted(req.waiting):
                if tp in self._writing:
                    kind, reqs = self._writing[tp]
                    if kind == req.election_type:
                        reqs.append(req)
                    continue
                if tp in written:
                    continue
                outcome = elect(snap, tp, req.election_type, controller_epoch)
                if outcome.write is None:
                    req.answer(tp, outcome.error, outcome.message)
                    continue
                writes.append(outcome.write)
                written.add(tp)
                self._writing[tp] = (req.election_type, [req])
                log.info(
                    "controller: %s leader election for %s-%d: broker %d",
                    ELECTION_TYPES[req.election_type],
                    tp[0],
                    tp[1],
                    outcome.write.state.leader,
                )
        self._wake_finished()
        return writes

    def landed(self, tp: TopicPartition) -> None:
        """The election write for ``tp`` is in ZooKeeper: its requests have their answer."""
        for req in self._writing.pop(tp, (0, []))[1]:
            req.answer(tp, ErrorCode.NONE)
        self._wake_finished()

    def fail_all(self, code: int, message: str) -> None:
        """Answer everything still waiting with ``code`` (this broker is not the controller)."""
        for req in self._requests:
            for tp in list(req.waiting):
                req.answer(tp, code, message)
        self._writing.clear()
        self._wake_finished()

    def _wake_finished(self) -> None:
        for req in list(self._requests):
            if not req.waiting:
                req.done.set()
                if req.abandoned:
                    self._forget(req)

    def _forget(self, req: ElectionRequest) -> None:
        if req in self._requests:
            self._requests.remove(req)
        for _, reqs in self._writing.values():
            if req in reqs:
                reqs.remove(req)
