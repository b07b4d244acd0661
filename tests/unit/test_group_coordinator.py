"""The group coordinator's state machine, driven by a fake clock and an in-memory __consumer_offsets."""

from __future__ import annotations

import pytest

from broker.groups.clock import FakeClock
from broker.groups.coordinator import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig, GroupCoordinator
from broker.groups.hashing import partition_for
from broker.groups.model import GroupState, JoinRequest, JoinResult
from broker.groups.records import GroupKey, OffsetKey, decode_group_value, decode_key
from protocol.errors import ErrorCode
from tests.unit.group_support import (
    RANGE,
    Box,
    MemoryOffsetsLog,
    commit,
    join,
    joined,
    make,
    sync,
    synced,
)

E = ErrorCode
SETTLE = 6000  # members joining a new group together: the 3 s initial delay, extended once


def state(c: GroupCoordinator, group: str = "g") -> GroupState:
    g = c.group(group)
    assert g is not None
    return g.state


def stable_group(c: GroupCoordinator, clock, n: int = 2, group: str = "g", **kw: object) -> list[JoinResult]:
    """Join ``n`` members, wait out the initial delay, sync with partition i for member i."""
    boxes = [join(c, group, client_id=f"c{i}", **kw) for i in range(n)]  # type: ignore[arg-type]
    clock.advance(c.config.initial_rebalance_delay_ms * (n + 1))
    results = [joined(b) for b in boxes]
    leader = next(r for r in results if r.members)
    syncs = [
        sync(
            c,
            r,
            {m.member_id: f"p{i}".encode() for i, m in enumerate(leader.members)} if r is leader else {},
            group,
        )
        for r in results
    ]
    clock.run_due()
    for s in syncs:
        assert synced(s).error == E.NONE
    assert state(c, group) is GroupState.STABLE
    return results


# -- joining ------------------------------------------------------------------------------------


def test_first_join_waits_for_the_initial_delay_and_extends_it_for_new_members() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=3000)
    a = join(c, rebalance=10_000)
    assert state(c) is GroupState.PREPARING_REBALANCE
    clock.advance(2000)
    b = join(c, client_id="other")
    clock.advance(1000)  # first delay over, but a member arrived during it: one more delay
    assert not a.done and not b.done
    clock.advance(2999)
    assert not a.done
    clock.advance(1)
    ra, rb = joined(a), joined(b)
    assert ra.error == rb.error == E.NONE
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader_id == rb.leader_id == ra.member_id  # the first to join leads
    assert [m.member_id for m in ra.members] == [ra.member_id, rb.member_id]
    assert [m.metadata for m in ra.members] == [b"sub-range", b"sub-range"]
    assert rb.members == ()  # only the leader gets the member list
    assert ra.protocol_name == "range"
    assert ra.member_id.startswith("client-") and rb.member_id.startswith("other-")
    assert state(c) is GroupState.COMPLETING_REBALANCE


def test_initial_delay_extensions_stop_at_the_rebalance_timeout() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=3000)
    a = join(c, rebalance=5000)
    for _ in range(10):  # keep adding members every second
        clock.advance(1000)
        join(c, client_id="late", rebalance=5000)
        if a.done:
            break
    # 3000 first, then min(3000, 5000 - 3000) = 2000 more: complete at 5000 ms
    assert a.done and joined(a).generation_id == 1


def test_zero_initial_delay_completes_on_the_next_tick() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=0)
    a = join(c)
    assert not a.done
    clock.run_due()
    assert joined(a).generation_id == 1


def test_member_id_required_then_rejoin_with_the_given_id() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=0)
    first = joined(join(c, require_known=True))
    assert first.error == E.MEMBER_ID_REQUIRED and first.member_id.startswith("client-")
    again = join(c, member_id=first.member_id, require_known=True)
    clock.run_due()
    assert joined(again).error == E.NONE and joined(again).member_id == first.member_id


def test_pending_member_id_expires_after_the_session_timeout() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=0)
    first = joined(join(c, require_known=True, session=6000))
    clock.advance(6000)
    late = joined(join(c, member_id=first.member_id, require_known=True))
    assert late.error == E.UNKNOWN_MEMBER_ID


def test_static_members_skip_member_id_required() -> None:
    c, clock, _ = make(initial_rebalance_delay_ms=0)
    box = join(c, instance="i-1", require_known=True)
    clock.run_due()
    assert joined(box).error == E.NONE and joined(box).member_id.startswith("i-1-")


def test_join_validation_errors() -> None:
    c, clock, _ = make(min_session_timeout_ms=6000, max_session_timeout_ms=300_000)
    assert joined(join(c, session=5999)).error == E.INVALID_SESSION_TIMEOUT
    assert joined(join(c, session=300_001)).error == E.INVALID_SESSION_TIMEOUT
    assert joined(join(c, group="")).error == E.INVALID_GROUP_ID
    assert joined(join(c, group="nope", member_id="ghost")).error == E.UNKNOWN_MEMBER_ID
    assert joined(join(c, protocols=())).error == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size() -> None:
    c, clock, _ = make(max_group_size=2)
    join(c)
    join(c)
    assert joined(join(c)).error == E.GROUP_MAX_SIZE_REACHED


# -- protocol vote -------------------------------------------------------------------------------


def test_protocol_vote_picks_the_most_preferred_common_protocol() -> None:
    c, clock, _ = make()
    rr, rng, sticky = ("roundrobin", b"rr"), ("range", b"rg"), ("sticky", b"st")
    a = join(c, protocols=(rr, rng))
    b = join(c, protocols=(rng, rr, sticky))
    d = join(c, protocols=(sticky, rng, rr))  # sticky is not common; its vote goes to range
    clock.advance(10_000)
    result = joined(a)
    assert result.protocol_name == "range"
    assert [m.metadata for m in result.members] == [b"rg", b"rg", b"rg"]
    assert joined(b).protocol_name == joined(d).protocol_name == "range"


def test_member_without_a_common_protocol_is_rejected() -> None:
    c, clock, _ = make()
    join(c, protocols=(("range", b""),))
    assert joined(join(c, protocols=(("roundrobin", b""),))).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert joined(join(c, protocol_type="connect")).error == E.INCONSISTENT_GROUP_PROTOCOL


# -- sync ------------------------------------------------------------------------------------


def test_followers_wait_for_the_leader_and_assignments_are_persisted_first() -> None:
    c, clock, log = make()
    a, b = join(c), join(c)
    clock.advance(SETTLE)
    ra, rb = joined(a), joined(b)
    follower = sync(c, rb)
    assert not follower.done
    log.hold = True
    leader = sync(c, ra, {ra.member_id: b"A"})  # the leader forgot b: it gets an empty assignment
    clock.run_due()
    assert not leader.done and not follower.done  # not durable yet
    assert state(c) is GroupState.COMPLETING_REBALANCE
    log.release()
    assert synced(leader) == synced(leader).__class__(E.NONE, b"A")
    assert synced(follower).error == E.NONE and synced(follower).assignment == b""
    assert state(c) is GroupState.STABLE
    key, value = log.all_records()[-1]
    assert decode_key(key) == GroupKey("g")
    assert value is not None
    stored = decode_group_value(value)
    assert stored.generation == 1 and stored.protocol == "range" and stored.leader == ra.member_id
    assert [(m.member_id, m.assignment, m.subscription) for m in stored.members] == [
        (ra.member_id, b"A", b"sub-range"),
        (rb.member_id, b"", b"sub-range"),
    ]
    # a late SyncGroup in a Stable group gets the current assignment at once
    assert synced(sync(c, ra)).assignment == b"A"


def test_sync_fencing() -> None:
    c, clock, _ = make()
    results = stable_group(c, clock)
    r = results[0]
    assert synced(sync(c, JoinResult(E.NONE, r.member_id, r.generation_id + 1))).error == E.ILLEGAL_GENERATION
    assert synced(sync(c, JoinResult(E.NONE, "ghost", r.generation_id))).error == E.UNKNOWN_MEMBER_ID
    assert synced(sync(c, r, group="other")).error == E.UNKNOWN_MEMBER_ID
    join(c, member_id=results[1].member_id, protocols=(("range", b"changed"),))  # metadata change: rebalance
    assert synced(sync(c, r)).error == E.REBALANCE_IN_PROGRESS


def test_failed_assignment_write_fails_the_sync_and_rebalances() -> None:
    c, clock, log = make()
    a = join(c)
    clock.advance(SETTLE)
    log.fail_with = E.KAFKA_STORAGE_ERROR
    box = sync(c, joined(a), {joined(a).member_id: b"A"})
    clock.run_due()
    assert synced(box).error == E.NOT_COORDINATOR
    assert state(c) is GroupState.PREPARING_REBALANCE


def test_a_join_during_completing_rebalance_answers_waiting_syncs_with_rebalance_in_progress() -> None:
    c, clock, _ = make()
    a, b = join(c), join(c)
    clock.advance(SETTLE)
    follower = sync(c, joined(b))
    newcomer = join(c)
    assert synced(follower).error == E.REBALANCE_IN_PROGRESS
    assert state(c) is GroupState.PREPARING_REBALANCE
    rejoin_a = join(c, member_id=joined(a).member_id)
    rejoin_b = join(c, member_id=joined(b).member_id)
    assert (
        joined(rejoin_a).generation_id
        == joined(rejoin_b).generation_id
        == joined(newcomer).generation_id
        == 2
    )


# -- heartbeats and timeouts -------------------------------------------------------------------


def test_heartbeat_answers_by_state() -> None:
    c, clock, _ = make()
    a, b = join(c), join(c)
    assert c.heartbeat("g", 0, "ghost", None) == E.UNKNOWN_MEMBER_ID
    clock.advance(SETTLE)
    ra, rb = joined(a), joined(b)
    assert c.heartbeat("g", 1, ra.member_id, None) == E.NONE  # CompletingRebalance
    assert c.heartbeat("g", 0, ra.member_id, None) == E.ILLEGAL_GENERATION
    assert c.heartbeat("nope", 1, ra.member_id, None) == E.UNKNOWN_MEMBER_ID
    assert c.heartbeat("", 1, ra.member_id, None) == E.INVALID_GROUP_ID
    sync(c, rb)
    sync(c, ra, {})
    clock.run_due()
    assert c.heartbeat("g", 1, rb.member_id, None) == E.NONE
    join(c)  # a newcomer: the others must rejoin
    assert c.heartbeat("g", 1, rb.member_id, None) == E.REBALANCE_IN_PROGRESS


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    for _ in range(3):
        clock.advance(3000)
        assert c.heartbeat("g", 1, ra.member_id, None) == E.NONE
    clock.advance(3000)  # b has been silent for 12 s > 10 s session timeout
    assert c.heartbeat("g", 1, rb.member_id, None) == E.UNKNOWN_MEMBER_ID
    assert state(c) is GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", 1, ra.member_id, None) == E.REBALANCE_IN_PROGRESS
    again = joined(join(c, member_id=ra.member_id))  # the only member left rejoined: done at once
    assert again.generation_id == 2 and [m.member_id for m in again.members] == [ra.member_id]


def test_session_timeout_expires_exactly_at_the_deadline() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    g = c.group("g")
    assert g is not None
    clock.advance(9_999)
    c.heartbeat("g", 1, ra.member_id, None)
    assert rb.member_id in g.members
    clock.advance(1)
    assert rb.member_id not in g.members and ra.member_id in g.members


def test_members_waiting_in_join_or_sync_do_not_expire() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    a = join(c, member_id=ra.member_id)  # the leader rejoins: a rebalance; b keeps heartbeating only
    for _ in range(8):
        clock.advance(3000)
        assert c.heartbeat("g", 1, rb.member_id, None) == E.REBALANCE_IN_PROGRESS
    g = c.group("g")
    assert g is not None and ra.member_id in g.members  # 24 s in JoinGroup, session timeout 10 s
    clock.advance(6000)  # rebalance timeout (30 s): b did not rejoin and is dropped
    assert joined(a).generation_id == 2 and rb.member_id not in g.members
    box = join(c)
    a2 = joined(join(c, member_id=ra.member_id))
    b2 = joined(box)
    follower = sync(c, b2)
    for _ in range(8):  # the leader takes its time to assign, heartbeating meanwhile
        clock.advance(3000)
        assert c.heartbeat("g", 3, ra.member_id, None) == E.NONE
    assert b2.member_id in g.members and not follower.done  # 24 s waiting in SyncGroup
    sync(c, a2, {b2.member_id: b"B"})
    clock.run_due()
    assert synced(follower).assignment == b"B"


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock, session=60_000, rebalance=20_000)
    a = join(c, member_id=ra.member_id, session=60_000, rebalance=20_000)
    clock.advance(19_999)
    assert not a.done
    clock.advance(1)
    result = joined(a)
    assert result.generation_id == 2 and [m.member_id for m in result.members] == [ra.member_id]


def test_new_member_waiting_in_its_first_join_is_dropped_after_five_minutes() -> None:
    c, clock, _ = make()
    ra, _rb = stable_group(c, clock, session=60_000, rebalance=600_000)
    newcomer = join(c, session=60_000, rebalance=600_000)
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 30_000):
        clock.advance(30_000)
        c.heartbeat("g", 1, ra.member_id, None)
    assert joined(newcomer).error == E.UNKNOWN_MEMBER_ID


def test_leader_leaving_elects_a_member_that_rejoined() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    newcomer = join(c)
    b = join(c, member_id=rb.member_id)
    assert c.leave_group("g", ra.member_id) == E.NONE
    result = joined(b)
    assert result.leader_id == rb.member_id and len(result.members) == 2
    assert joined(newcomer).leader_id == rb.member_id and joined(newcomer).members == ()


# -- leaving -------------------------------------------------------------------------------


def test_leave_group_rebalances_at_once_and_the_last_leave_empties_the_group() -> None:
    c, clock, log = make()
    ra, rb = stable_group(c, clock)
    assert c.leave_group("g", rb.member_id) == E.NONE
    assert state(c) is GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", 1, rb.member_id, None) == E.UNKNOWN_MEMBER_ID
    assert joined(join(c, member_id=ra.member_id)).generation_id == 2
    assert c.leave_group("g", ra.member_id) == E.NONE
    assert state(c) is GroupState.EMPTY
    g = c.group("g")
    assert g is not None and g.generation_id == 3
    value = log.all_records()[-1][1]
    assert value is not None
    empty = decode_group_value(value)
    assert empty.generation == 3 and empty.members == () and empty.protocol is None
    assert c.leave_group("g", "ghost") == E.UNKNOWN_MEMBER_ID
    assert c.leave_group("nope", "ghost") == E.UNKNOWN_MEMBER_ID


def test_leaving_member_waiting_in_join_is_answered() -> None:
    c, clock, _ = make()
    box = join(c)
    g = c.group("g")
    assert g is not None
    member_id = next(iter(g.members))
    assert c.leave_group("g", member_id) == E.NONE
    assert joined(box).error == E.UNKNOWN_MEMBER_ID


# -- static membership ---------------------------------------------------------------------


def test_static_member_restart_keeps_its_place_without_a_rebalance() -> None:
    c, clock, log = make()
    a = join(c, instance="a")
    b = join(c, instance="b")
    clock.advance(SETTLE)
    ra, rb = joined(a), joined(b)
    sync(c, rb)
    sync(c, ra, {ra.member_id: b"A", rb.member_id: b"B"})
    clock.run_due()
    records_before = len(log.all_records())
    # b restarts: unknown member id, same instance id
    again = join(c, instance="b", client_id="restarted")
    assert not again.done  # answered once the replaced member id is persisted
    clock.run_due()
    rb2 = joined(again)
    assert rb2.error == E.NONE and rb2.member_id != rb.member_id and rb2.member_id.startswith("b-")
    assert rb2.generation_id == 1 and rb2.leader_id == ra.member_id and rb2.members == ()
    assert state(c) is GroupState.STABLE  # no rebalance: a is untouched
    assert c.heartbeat("g", 1, ra.member_id, "a") == E.NONE
    assert synced(sync(c, rb2, instance="b")).assignment == b"B"  # its old assignment
    stored = decode_group_value(log.all_records()[records_before][1] or b"")
    assert stored.generation == 1 and {m.member_id for m in stored.members} == {ra.member_id, rb2.member_id}
    # the old incarnation is fenced everywhere
    assert c.heartbeat("g", 1, rb.member_id, "b") == E.FENCED_INSTANCE_ID
    assert synced(sync(c, rb, instance="b")).error == E.FENCED_INSTANCE_ID
    assert joined(join(c, member_id=rb.member_id, instance="b")).error == E.FENCED_INSTANCE_ID
    box = commit(c, {("t", 0): 1}, generation=1, member_id=rb.member_id, instance="b")
    assert box.value == {("t", 0): E.FENCED_INSTANCE_ID}


def test_static_leader_restart_is_told_the_old_leader_id() -> None:
    c, clock, _ = make()
    ra = stable_group(c, clock, n=1, instance="a")[0]
    again = join(c, instance="a")
    clock.run_due()
    result = joined(again)
    assert result.leader_id == ra.member_id != result.member_id  # so it does not reassign
    g = c.group("g")
    assert g is not None and g.leader_id == result.member_id


def test_static_leader_restart_v9_is_told_it_leads_and_to_skip_the_assignment() -> None:
    """KIP-814: a v9 client learns it is the leader again (so it watches the group's topics) and
    gets the members, but keeps the current assignment."""
    c, clock, _ = make()
    boxes = [join(c, client_id=f"c{i}", instance=f"i{i}") for i in range(2)]
    clock.advance(c.config.initial_rebalance_delay_ms * 3)
    first = [joined(b) for b in boxes]
    leader = next(r for r in first if r.members)
    for r in first:
        sync(c, r, {m.member_id: b"p" for m in leader.members} if r is leader else {})
    clock.run_due()
    instance = "i0" if leader is first[0] else "i1"
    box = Box()
    c.join_group(
        JoinRequest(
            "g",
            "",
            instance,
            "c",
            "/127.0.0.1",
            10_000,
            30_000,
            "consumer",
            RANGE,
            False,
            skip_assignment_supported=True,
        ),
        box,
    )
    clock.run_due()
    result = joined(box)
    assert (result.leader_id, result.skip_assignment, len(result.members)) == (result.member_id, True, 2)
    assert state(c) is GroupState.STABLE


def test_group_max_size_holds_for_members_coming_back_with_their_new_id() -> None:
    c, clock, _ = make(max_group_size=2)
    required = [joined(join(c, require_known=True)) for _ in range(3)]
    assert {r.error for r in required} == {E.MEMBER_ID_REQUIRED}
    admitted = [join(c, member_id=r.member_id, require_known=True) for r in required]
    clock.advance(10_000)
    assert sorted(joined(b).error for b in admitted) == [E.NONE, E.NONE, E.GROUP_MAX_SIZE_REACHED]


def test_static_member_rejoining_while_completing_rebalance_restarts_the_rebalance() -> None:
    c, clock, _ = make()
    a = join(c, instance="a")
    join(c, instance="b")
    clock.advance(SETTLE)
    waiting = sync(c, joined(a))  # the leader's assignment, not yet durable
    replaced = join(c, instance="b")  # b restarts before the group is Stable
    assert state(c) is GroupState.PREPARING_REBALANCE
    assert synced(waiting).error == E.REBALANCE_IN_PROGRESS
    join(c, member_id=joined(a).member_id, instance="a")
    assert joined(replaced).generation_id == 2


def test_static_member_not_rejoining_in_time_is_kept() -> None:
    c, clock, _ = make()
    sa = join(c, instance="a", rebalance=20_000, session=60_000)
    sb = join(c, instance="b", rebalance=20_000, session=60_000)
    clock.advance(SETTLE)
    sync(c, joined(sb))
    sync(c, joined(sa), {})
    clock.run_due()
    again = join(c, member_id=joined(sa).member_id, instance="a", rebalance=20_000, session=60_000)
    clock.advance(20_000)  # b (static, maybe restarting) never rejoined: it stays, unlike a dynamic member
    result = joined(again)
    assert result.generation_id == 2
    assert {m.member_id for m in result.members} == {joined(sa).member_id, joined(sb).member_id}


# -- offsets -------------------------------------------------------------------------------


def test_standalone_commit_with_generation_minus_one_on_an_empty_group() -> None:
    c, clock, log = make()
    box = commit(c, {("t", 0): 42, ("t", 1): 7}, metadata="meta")
    assert not box.done
    assert c.fetch_offsets("g", [("t", 0)])[1] == {("t", 0): None}  # not durable yet: not visible
    clock.run_due()
    assert box.value == {("t", 0): E.NONE, ("t", 1): E.NONE}
    error, offsets = c.fetch_offsets("g", [("t", 0), ("t", 9), ("u", 0)])
    assert error == E.NONE
    assert offsets[("t", 0)] is not None and offsets[("t", 0)].offset == 42
    assert offsets[("t", 0)].metadata == "meta"
    assert offsets[("t", 9)] is None and offsets[("u", 0)] is None
    assert set(c.fetch_offsets("g", None)[1]) == {("t", 0), ("t", 1)}
    assert c.fetch_offsets("unknown", [("t", 0)]) == (E.NONE, {("t", 0): None})
    assert [decode_key(k) for k, _ in log.all_records()] == [OffsetKey("g", "t", 0), OffsetKey("g", "t", 1)]


def test_commit_fencing_for_an_active_group() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    tp = ("t", 0)
    assert commit(c, {tp: 1}).value == {tp: E.UNKNOWN_MEMBER_ID}  # standalone commit, group has members
    assert commit(c, {tp: 1}, generation=1, member_id="ghost").value == {tp: E.UNKNOWN_MEMBER_ID}
    assert commit(c, {tp: 1}, generation=0, member_id=ra.member_id).value == {tp: E.ILLEGAL_GENERATION}
    assert commit(c, {tp: 1}, group="none", generation=3, member_id="x").value == {tp: E.ILLEGAL_GENERATION}
    ok = commit(c, {tp: 5}, generation=1, member_id=ra.member_id)
    clock.run_due()
    assert ok.value == {tp: E.NONE}
    join(c)  # PreparingRebalance: members of generation 1 may still commit
    ok = commit(c, {tp: 6}, generation=1, member_id=rb.member_id)
    clock.run_due()
    assert ok.value == {tp: E.NONE}
    join(c, member_id=ra.member_id)
    join(c, member_id=rb.member_id)
    assert state(c) is GroupState.COMPLETING_REBALANCE
    assert commit(c, {tp: 7}, generation=2, member_id=ra.member_id).value == {tp: E.REBALANCE_IN_PROGRESS}
    assert commit(c, {tp: 7}, generation=1, member_id=ra.member_id).value == {tp: E.ILLEGAL_GENERATION}
    offsets = c.fetch_offsets("g", [tp])[1]
    assert offsets[tp] is not None and offsets[tp].offset == 6


def test_offset_metadata_limit() -> None:
    c, clock, _ = make(offset_metadata_max_bytes=10)
    box = commit(c, {("t", 0): 1}, metadata="x" * 11)
    assert box.value == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}
    box = commit(c, {("t", 0): 1}, metadata="x" * 10)
    clock.run_due()
    assert box.value == {("t", 0): E.NONE}
    box = commit(c, {("t", 1): 1}, metadata=None)
    clock.run_due()
    offsets = c.fetch_offsets("g", [("t", 1)])[1]
    assert offsets[("t", 1)] is not None and offsets[("t", 1)].metadata == ""


def test_failed_commit_is_not_applied() -> None:
    c, clock, log = make()
    log.fail_with = E.KAFKA_STORAGE_ERROR
    box = commit(c, {("t", 0): 3})
    clock.run_due()
    assert box.value == {("t", 0): E.NOT_COORDINATOR}
    assert c.fetch_offsets("g", [("t", 0)])[1] == {("t", 0): None}
    log.fail_with = E.MESSAGE_TOO_LARGE
    box = commit(c, {("t", 0): 3})
    clock.run_due()
    assert box.value == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}


# -- expiry ----------------------------------------------------------------------------------


def test_offsets_of_an_empty_group_expire_after_retention_counted_from_empty() -> None:
    retention = 60 * 60_000
    c, clock, log = make(offsets_retention_ms=retention, offsets_retention_check_interval_ms=60_000)
    rb = stable_group(c, clock, n=1, session=600_000)[0]
    commit(c, {("t", 0): 10}, generation=1, member_id=rb.member_id)
    clock.run_due()
    for _ in range(10):  # the member stays 30 min after its commit (Stable: nothing expires)
        clock.advance(3 * 60_000)
        c.heartbeat("g", 1, rb.member_id, None)
    assert c.leave_group("g", rb.member_id) == E.NONE
    assert state(c) is GroupState.EMPTY
    clock.advance(retention - 60_000)
    assert c.fetch_offsets("g", None)[1]  # 59 min after becoming empty: still there
    clock.advance(2 * 60_000)  # retention passed, plus up to one check interval
    assert c.group("g") is None  # offsets expired, then the empty group was removed
    tail = [(decode_key(k), v) for k, v in log.all_records()[-2:]]
    assert tail == [(OffsetKey("g", "t", 0), None), (GroupKey("g"), None)]


def test_standalone_offsets_expire_from_their_commit_time_and_explicit_retention_wins() -> None:
    c, clock, _ = make(offsets_retention_ms=100_000, offsets_retention_check_interval_ms=1000)
    commit(c, {("t", 0): 1})
    commit(c, {("t", 1): 1}, retention=5000)
    clock.run_due()
    clock.advance(5000)
    assert set(c.fetch_offsets("g", None)[1]) == {("t", 0)}
    clock.advance(95_000)
    assert c.group("g") is None


# -- persistence and replay -------------------------------------------------------------------


def test_replay_restores_groups_members_and_offsets() -> None:
    c, clock, log = make()
    ra, rb = stable_group(c, clock)
    commit(c, {("t", 0): 11}, generation=1, member_id=ra.member_id, metadata="m")
    commit(c, {("t", 0): 12}, generation=1, member_id=ra.member_id)
    commit(c, {("solo", 0): 5}, group="standalone")
    clock.run_due()
    # a broker restart: a new coordinator over the same log
    c2, clock2, _ = make(clock=clock, log=log)
    assert state(c2) is GroupState.STABLE
    g = c2.group("g")
    assert g is not None and g.generation_id == 1 and g.leader_id == ra.member_id
    assert {m: g.members[m].assignment for m in g.members} == {ra.member_id: b"p0", rb.member_id: b"p1"}
    offsets = c2.fetch_offsets("g", [("t", 0)])[1]
    assert offsets[("t", 0)] is not None and offsets[("t", 0)].offset == 12
    assert c2.fetch_offsets("standalone", None)[1][("solo", 0)].offset == 5  # type: ignore[union-attr]
    assert state(c2, "standalone") is GroupState.EMPTY
    # members that come back keep going in the same generation
    assert c2.heartbeat("g", 1, ra.member_id, None) == E.NONE
    assert synced(sync(c2, rb)).assignment == b"p1"
    # one that does not is expired after its session timeout
    clock.advance(5000)
    c2.heartbeat("g", 1, ra.member_id, None)
    clock.advance(5000)
    assert state(c2) is GroupState.PREPARING_REBALANCE


def test_replay_honours_tombstones() -> None:
    c, clock, log = make()
    commit(c, {("t", 0): 1}, group="doomed")
    clock.run_due()
    box_results: list[dict[str, E]] = []
    c.delete_groups(["doomed"], box_results.append)
    clock.run_due()
    c2, _, _ = make(clock=clock, log=log)
    assert c2.group("doomed") is None
    assert c2.describe_group("doomed")[1].state == "Dead"


def test_requests_before_load_answer_load_in_progress() -> None:
    clock = FakeClock()
    c = GroupCoordinator(CoordinatorConfig(), MemoryOffsetsLog(clock), clock)
    assert joined(join(c)).error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert synced(sync(c, JoinResult(E.NONE, "m", 1))).error == E.REBALANCE_IN_PROGRESS
    assert c.heartbeat("g", 1, "m", None) == E.NONE
    assert commit(c, {("t", 0): 1}).value == {("t", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    assert c.fetch_offsets("g", None)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.list_groups()[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    c.load()
    assert c.list_groups() == (E.NONE, [])


def test_unreadable_records_are_skipped_on_replay() -> None:
    c, clock, log = make()
    log.partitions[0].append((b"\x00\x09junk", b"value"))
    log.partitions[0].append((b"\x00", None))
    commit(c, {("t", 0): 1})
    clock.run_due()
    c2, _, _ = make(clock=clock, log=log)
    assert c2.fetch_offsets("g", None)[1][("t", 0)].offset == 1  # type: ignore[union-attr]


# -- describe / list / delete / shutdown -------------------------------------------------------


def test_describe_shows_assignments_only_when_stable() -> None:
    c, clock, _ = make()
    ra, rb = stable_group(c, clock)
    error, summary = c.describe_group("g")
    assert error == E.NONE and summary.state == "Stable" and summary.protocol == "range"
    assert [(m.member_id, m.metadata, m.assignment) for m in summary.members] == [
        (ra.member_id, b"sub-range", b"p0"),
        (rb.member_id, b"sub-range", b"p1"),
    ]
    assert summary.members[0].client_id == "c0" and summary.members[0].client_host == "/127.0.0.1"
    join(c)
    summary = c.describe_group("g")[1]
    assert summary.state == "PreparingRebalance" and summary.protocol == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in summary.members)
    assert c.describe_group("missing")[1].state == "Dead"
    assert [(o.group_id, o.protocol_type, o.state) for o in c.list_groups()[1]] == [
        ("g", "consumer", "PreparingRebalance")
    ]


def test_metrics_snapshot() -> None:
    c, clock, _ = make()
    stable_group(c, clock)
    commit(c, {("t", 3): 7}, group="solo")
    clock.run_due()
    assert c.metrics_snapshot() == {"g": (2, {}), "solo": (0, {("t", 3): 7})}


def test_delete_groups() -> None:
    c, clock, log = make()
    stable_group(c, clock, group="busy")
    commit(c, {("t", 0): 1, ("t", 1): 2}, group="idle")
    clock.run_due()
    out: list[dict[str, E]] = []
    c.delete_groups(["busy", "idle", "missing"], out.append)
    assert not out  # waits for the tombstones to be durable
    clock.run_due()
    assert out == [{"busy": E.NON_EMPTY_GROUP, "idle": E.NONE, "missing": E.GROUP_ID_NOT_FOUND}]
    assert c.group("idle") is None
    tombstones = [(decode_key(k), v) for k, v in log.all_records() if v is None]
    assert tombstones == [
        (OffsetKey("idle", "t", 0), None),
        (OffsetKey("idle", "t", 1), None),
        (GroupKey("idle"), None),
    ]


def test_shutdown_answers_waiting_requests_with_not_coordinator() -> None:
    c, clock, _ = make()
    box = join(c)
    c.shutdown()
    assert joined(box).error == E.NOT_COORDINATOR
    assert joined(join(c)).error == E.NOT_COORDINATOR
    assert clock.pending == 0
    clock.advance(10**7)


@pytest.mark.parametrize("partitions", [1, 7, 50])
def test_records_go_to_the_groups_partition(partitions: int) -> None:
    clock = FakeClock()
    c, _, log = make(clock=clock, log=MemoryOffsetsLog(clock, partitions))
    groups = ("a", "my-group", "kp-group")
    for group in groups:
        commit(c, {("t", 0): 1}, group=group)
    assert {p for p, recs in log.partitions.items() if recs} == {partition_for(g, partitions) for g in groups}


def test_offset_delete_while_a_member_rejoins_with_other_protocols() -> None:
    """A member that rejoins a rebalance without the group's current protocol does not make
    OffsetDelete fail; the current generation's subscriptions still count."""
    from protocol.member_data import encode_subscription

    c, clock, _ = make()
    both = (("range", encode_subscription(["t"])), ("roundrobin", encode_subscription(["t", "u"])))
    results = stable_group(c, clock, n=2, protocols=both)
    box = commit(c, {("t", 0): 5, ("gone", 0): 7}, generation=1, member_id=results[0].member_id)
    clock.run_due()
    join(c, member_id=results[0].member_id, protocols=both[1:])  # the rebalance waits for the other
    assert state(c) is GroupState.PREPARING_REBALANCE
    answers = Box()
    c.delete_offsets("g", [("t", 0), ("gone", 0)], lambda code, codes: answers((code, codes)))
    clock.run_due()
    code, codes = answers.value  # type: ignore[misc]
    assert (code, codes) == (E.NONE, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("gone", 0): E.NONE})
    assert box.value == {("t", 0): E.NONE, ("gone", 0): E.NONE}


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    """A leader that heartbeats but never sends SyncGroup does not hold its followers for ever."""
    c, clock, _ = make()
    boxes = [join(c, client_id=f"c{i}", rebalance=20_000) for i in range(2)]
    clock.advance(SETTLE)
    first = [joined(b) for b in boxes]
    leader = next(r for r in first if r.members)
    follower = next(r for r in first if not r.members)
    waiting = sync(c, follower)
    for _ in range(5):  # 25 s of heartbeats from both, and no SyncGroup from the leader
        clock.advance(5_000)
        c.heartbeat("g", leader.generation_id, leader.member_id, None)
        c.heartbeat("g", follower.generation_id, follower.member_id, None)
    assert synced(waiting).error == E.REBALANCE_IN_PROGRESS
    g = c.group("g")
    assert g is not None and leader.member_id not in g.members and follower.member_id in g.members
    assert c.heartbeat("g", leader.generation_id, leader.member_id, None) == E.UNKNOWN_MEMBER_ID
