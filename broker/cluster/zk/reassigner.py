"""`Reassigner`: the controller's part in partition reassignment, writing what `reassignment` decides.

On every snapshot the controller acts on (`act`), in this order:

1. AlterPartitionReassignments requests waiting in the `ReassignmentQueue`;
2. entries of ``/admin/reassign_partitions`` not yet started (an entry the
   API also asked for this round is left to the API, as Kafka lets the
   latest request win);
3. reassignments whose target replicas are all in the ISR: completed.

The changes of one topic go in one ZooKeeper transaction, fenced by the
controller epoch: the topic znode (conditional on its version: a topic
changed meanwhile is planned again from the next snapshot) and the partition
states that go with them, written or only checked, conditional on the
versions the decision was made on (Kafka serialises a leader's ISR changes
with the controller's on its event thread; here a state changed meanwhile
fails the transaction). Entries of
``/admin/reassign_partitions`` that are done, refused or superseded are then
removed, and the znode deleted once empty, as Kafka's controller does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

from kazoo.client import TransactionRequest

from broker.cluster.assignment import FullAssignment
from broker.cluster.zk import znodes
from broker.cluster.zk.reassignment import (
    Answer,
    Change,
    completions,
    reassigning,
    start,
    zk_requests,
)
from broker.cluster.zk.reassignment_queue import ReassignmentQueue
from broker.cluster.zk.session import ZkSession
from broker.cluster.zk.snapshot import Snapshot, TopicPartition

log = logging.getLogger("minikafka.cluster")


def topic_znode(
    snap: Snapshot, topic: str, changed: dict[int, FullAssignment], topic_id: uuid.UUID | None = None
) -> bytes:
    """``topic``'s znode as in ``snap`` with the partitions in ``changed`` replaced (and ``topic_id``
    as its ID, when given: a topic written by a Kafka without IDs gets one)."""
    replicas, adding, removing = {}, {}, {}
    for index, assigned in snap.assignments[topic].items():
        tp = (topic, index)
        new = changed.get(index)
        if new is None:
            replicas[index] = assigned
            adding[index] = snap.adding.get(tp, [])
            removing[index] = snap.removing.get(tp, [])
        else:
            replicas[index], adding[index], removing[index] = (
                list(new.replicas),
                list(new.adding),
                list(new.removing),
            )
    return znodes.encode_assignment(replicas, topic_id or snap.topic_ids.get(topic), adding, removing)


class Reassigner:
    def __init__(
        self,
        session: ZkSession,
        fenced_transaction: Callable[[], TransactionRequest],
        commit: Callable[[TransactionRequest], Awaitable[bool]],
    ) -> None:
        self.session = session
        self._transaction = fenced_transaction
        self._commit = commit
        self.queue = ReassignmentQueue()

    async def act(self, snap: Snapshot, controller_epoch: int, written: set[TopicPartition]) -> bool:
        """Write this round's reassignment changes; True if anything was written."""
        changes = self.queue.plan(snap, controller_epoch, written)
        from_api = {c.tp for c in changes}
        requested = zk_requests(snap)
        drop = dict(requested.drop)
        for tp in from_api & set(snap.reassign_requests):
            drop[tp] = "superseded by AlterPartitionReassignments"
        for tp, target in requested.start.items():
            if tp in written:
                continue
            outcome = start(snap, tp, target, controller_epoch)
            if isinstance(outcome, Change):
                changes.append(outcome)
                written.add(tp)
            else:
                drop[tp] = str(outcome[1])
        for change in completions(snap, controller_epoch):
            if change.tp not in written:
                changes.append(change)
                written.add(change.tp)
        wrote = False
        by_topic: dict[str, list[Change]] = {}
        for change in changes:
            by_topic.setdefault(change.tp[0], []).append(change)
        for topic, topic_changes in sorted(by_topic.items()):
            wrote = True
            if await self._write_topic(snap, topic, topic_changes):
                for change in topic_changes:
                    self.queue.landed(change.tp)
        if drop:
            wrote = True
            await self._drop_zk_requests(snap, drop)
        return wrote

    async def _write_topic(self, snap: Snapshot, topic: str, changes: list[Change]) -> bool:
        txn = self._transaction()
        txn.set_data(
            znodes.topic_path(topic),
            topic_znode(snap, topic, {c.tp[1]: c.assignment for c in changes}),
            snap.topic_versions[topic],
        )
        for change in changes:
            if change.state is not None:
                txn.set_data(
                    znodes.state_path(*change.tp),
                    znodes.encode_state(change.state.state),
                    change.state.expected_version,
                )
            elif change.tp in snap.states:
                # decided on this state: a leader's ISR change since (adding a replica this change
                # removes) must make the write fail, to be planned again from the new state
                txn.check(znodes.state_path(*change.tp), snap.states[change.tp].version)
        if not await self._commit(txn):
            log.debug("controller: reassignment write for %s lost a race", topic)
            return False
        for change in changes:
            a = change.assignment
            what = (
                f"reassigning to {list(a.target)} (adding {list(a.adding)}, removing {list(a.removing)})"
                if a.reassigning
                else f"replicas {list(a.replicas)}"
            )
            state = change.state.state if change.state is not None else None
            log.info(
                "controller: %s-%d %s%s",
                topic,
                change.tp[1],
                what,
                ""
                if state is None
                else f"; leader {state.leader} epoch {state.leader_epoch} ISR {list(state.isr)}",
            )
        return True

    async def _drop_zk_requests(self, snap: Snapshot, drop: dict[TopicPartition, str]) -> None:
        for (topic, index), reason in sorted(drop.items()):
            log.info("controller: /admin/reassign_partitions: %s-%d: %s", topic, index, reason)
        remaining = {tp: r for tp, r in snap.reassign_requests.items() if tp not in drop}
        txn = self._transaction()
        if remaining:
            txn.set_data(
                znodes.REASSIGN_PARTITIONS, znodes.encode_reassignments(remaining), snap.reassign_version
            )
        else:
            txn.delete(znodes.REASSIGN_PARTITIONS, snap.reassign_version)
        await self._commit(txn)

    # -- the API ------------------------------------------------------------------------------------
    async def alter(
        self, targets: dict[TopicPartition, list[int] | None], allow_rf_change: bool, timeout_s: float
    ) -> dict[TopicPartition, Answer]:
        """Queue ``targets`` (None: cancel) for the controller; the answers once each is written."""
        return await self.queue.wait(self.queue.add(targets, allow_rf_change), timeout_s)

    @staticmethod
    def ongoing(
        snap: Snapshot, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, FullAssignment]:
        """The reassignments in progress, of ``partitions`` (None: all)."""
        under_way = reassigning(snap)
        if partitions is None:
            return under_way
        return {tp: under_way[tp] for tp in partitions if tp in under_way}
