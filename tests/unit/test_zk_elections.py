"""Leader elections asked for and leader-imbalance checks, without ZooKeeper (pure functions and the queue)."""

from __future__ import annotations

import asyncio

from broker.cluster.view import BrokerNode
from broker.cluster.zk.election_queue import ElectionQueue
from broker.cluster.zk.elections import PREFERRED, UNCLEAN, elect, imbalance, imbalanced_partitions
from broker.cluster.zk.snapshot import Snapshot, StateRecord
from broker.cluster.zk.znodes import LeaderAndIsr
from protocol.errors import ErrorCode


def _snap(live: list[int], parts: dict[int, tuple[list[int], LeaderAndIsr]]) -> Snapshot:
    snap = Snapshot()
    snap.brokers = {b: BrokerNode(b, "h", 9000 + b) for b in live}
    snap.broker_czxid = {b: 1 for b in live}
    snap.assignments = {"t": {p: replicas for p, (replicas, _) in parts.items()}}
    snap.states = {("t", p): StateRecord(state, version=4, mzxid=10) for p, (_, state) in parts.items()}
    return snap


def test_preferred_election_moves_leadership_to_a_live_in_sync_first_replica() -> None:
    snap = _snap([1, 2, 3], {0: ([1, 2, 3], LeaderAndIsr(2, 5, (2, 3, 1), 1))})
    outcome = elect(snap, ("t", 0), PREFERRED, 7)
    assert outcome.error == ErrorCode.NONE and outcome.write is not None
    assert outcome.write.state == LeaderAndIsr(1, 6, (2, 3, 1), 7)
    assert outcome.write.expected_version == 4


def test_preferred_election_answers_why_it_did_nothing() -> None:
    leading = _snap([1, 2], {0: ([1, 2], LeaderAndIsr(1, 5, (1, 2), 1))})
    assert elect(leading, ("t", 0), PREFERRED, 7).error == ErrorCode.ELECTION_NOT_NEEDED
    out_of_sync = _snap([1, 2], {0: ([1, 2], LeaderAndIsr(2, 5, (2,), 1))})
    assert elect(out_of_sync, ("t", 0), PREFERRED, 7).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    dead = _snap([2], {0: ([1, 2], LeaderAndIsr(2, 5, (2, 1), 1))})
    assert elect(dead, ("t", 0), PREFERRED, 7).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert elect(dead, ("t", 9), PREFERRED, 7).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    dead.deleting = ["t"]
    assert elect(dead, ("t", 0), PREFERRED, 7).error == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_unclean_election_only_for_a_partition_without_a_live_leader() -> None:
    led = _snap([1, 2], {0: ([1, 2], LeaderAndIsr(2, 5, (2,), 1))})
    assert elect(led, ("t", 0), UNCLEAN, 7).error == ErrorCode.ELECTION_NOT_NEEDED
    offline = _snap([3], {0: ([1, 2, 3], LeaderAndIsr(-1, 5, (1,), 1))})
    outcome = elect(offline, ("t", 0), UNCLEAN, 7)
    assert outcome.write is not None and outcome.write.state == LeaderAndIsr(3, 6, (3,), 7)
    nobody = _snap([], {0: ([1, 2, 3], LeaderAndIsr(-1, 5, (1,), 1))})
    assert elect(nobody, ("t", 0), UNCLEAN, 7).error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_imbalance_is_counted_per_preferred_broker_against_the_percentage() -> None:
    # Broker 1 is preferred leader of partitions 0-9 and leads 9 of them: 10% moved, not above 10%.
    parts = {p: ([1, 2], LeaderAndIsr(1, 1, (1, 2), 1)) for p in range(10)}
    parts[0] = ([1, 2], LeaderAndIsr(2, 2, (2, 1), 1))
    snap = _snap([1, 2], parts)
    assert imbalance(snap)[1] == ([("t", 0)], 10)
    assert imbalanced_partitions(snap, 10) == []
    assert imbalanced_partitions(snap, 9) == [("t", 0)]
    # Two moved (20%): both go back, except one whose preferred replica is out of sync.
    parts[1] = ([1, 2], LeaderAndIsr(2, 2, (2,), 1))
    snap = _snap([1, 2], parts)
    assert imbalanced_partitions(snap, 10) == [("t", 0)]


def test_queue_answers_without_a_write_at_once_and_elected_ones_once_written() -> None:
    async def main() -> None:
        snap = _snap(
            [1, 2],
            {
                0: ([1, 2], LeaderAndIsr(2, 5, (2, 1), 1)),  # electable
                1: ([1, 2], LeaderAndIsr(1, 5, (1, 2), 1)),  # already preferred
                2: ([1, 2], LeaderAndIsr(2, 5, (2, 1), 1)),  # electable, but written this round anyway
            },
        )
        queue = ElectionQueue()
        req = queue.add(PREFERRED, [("t", 0), ("t", 1), ("t", 2), ("u", 0)])
        waiter = asyncio.ensure_future(queue.wait(req, 5))
        writes = queue.plan(snap, 7, written={("t", 2)})
        assert [w.tp for w in writes] == [("t", 0)]
        await asyncio.sleep(0)
        assert not waiter.done()
        queue.landed(("t", 0))
        writes = queue.plan(snap, 7, written=set())  # the next round: partition 2 now
        assert [w.tp for w in writes] == [("t", 2)]
        queue.landed(("t", 2))
        assert await waiter == {
            ("t", 0): (ErrorCode.NONE, None),
            ("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, None),
            ("t", 2): (ErrorCode.NONE, None),
            ("u", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        }
        assert not queue

    asyncio.run(main())


def test_queue_times_out_without_cancelling_and_fails_when_controllership_is_lost() -> None:
    async def main() -> None:
        snap = _snap([1, 2], {0: ([1, 2], LeaderAndIsr(2, 5, (2, 1), 1))})
        queue = ElectionQueue()
        req = queue.add(PREFERRED, [("t", 0)])
        waiter = asyncio.ensure_future(queue.wait(req, 0.05))
        assert [w.tp for w in queue.plan(snap, 7, written=set())] == [("t", 0)]  # the write is slow
        assert (await waiter)[("t", 0)][0] == ErrorCode.REQUEST_TIMED_OUT
        assert queue  # as Kafka, the election goes on without its caller
        queue.landed(("t", 0))
        assert not queue
        req = queue.add(UNCLEAN, [("t", 0)])
        waiter = asyncio.ensure_future(queue.wait(req, 5))
        queue.fail_all(ErrorCode.NOT_CONTROLLER, "gone")
        assert await waiter == {("t", 0): (ErrorCode.NOT_CONTROLLER, "gone")}
        assert not queue

    asyncio.run(main())


def test_elections_of_different_types_for_one_partition_run_one_after_the_other() -> None:
    async def main() -> None:
        # No live in-sync replica: UNCLEAN elects 2; PREFERRED (1 is dead) must not ride on that write.
        snap = _snap([2, 3], {0: ([1, 2, 3], LeaderAndIsr(-1, 5, (1,), 1))})
        queue = ElectionQueue()
        unclean = queue.add(UNCLEAN, [("t", 0)])
        preferred = queue.add(PREFERRED, [("t", 0)])
        waiters = [asyncio.ensure_future(queue.wait(r, 5)) for r in (unclean, preferred)]
        writes = queue.plan(snap, 7, written=set())
        assert [(w.tp, w.state.leader) for w in writes] == [(("t", 0), 2)]
        queue.landed(("t", 0))
        after = _snap([2, 3], {0: ([1, 2, 3], LeaderAndIsr(2, 6, (2,), 7))})
        assert queue.plan(after, 7, written=set()) == []
        assert [await w for w in waiters] == [
            {("t", 0): (ErrorCode.NONE, None)},
            {
                ("t", 0): (
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                    elect(after, ("t", 0), PREFERRED, 7).message,
                )
            },
        ]

    asyncio.run(main())


def test_a_partition_without_replicas_answers_instead_of_failing_the_controller() -> None:
    snap = _snap([1], {0: ([], LeaderAndIsr(-1, 5, (), 1))})
    assert elect(snap, ("t", 0), PREFERRED, 7).error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert elect(snap, ("t", 0), UNCLEAN, 7).error == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
