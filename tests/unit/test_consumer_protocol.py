"""The consumer group protocol (KIP-848) in the coordinator: epochs, reconciliation, fencing, replay."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.cluster.view import PartitionState, TopicState
from broker.groups.assignors import MemberSpec, range_, uniform
from broker.groups.clock import FakeClock
from broker.groups.consumer_model import Assignment, MemberState
from broker.groups.consumer_protocol import Heartbeat, HeartbeatResult
from broker.groups.consumer_records import ConsumerKey, decode_value, encode_key
from broker.groups.coordinator import GroupCoordinator, OffsetCommit
from broker.groups.records import decode_key
from protocol.errors import ErrorCode
from protocol.member_data import decode_assignment
from tests.unit.group_support import Box, MemoryOffsetsLog, join, joined, make, sync, synced

T1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
T2 = uuid.UUID("00000000-0000-0000-0000-000000000002")


def topics(**counts: int) -> dict[str, TopicState]:
    ids = {"t1": T1, "t2": T2}
    return {
        name: TopicState(
            name,
            ids.get(name, uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            tuple(PartitionState(p, 0, 0, (0,), (0,)) for p in range(n)),
        )
        for name, n in counts.items()
    }


def coordinator(**counts: int) -> tuple[GroupCoordinator, FakeClock, MemoryOffsetsLog]:
    c, clock, log = make()
    view = topics(**counts)
    c.consumer.topics = lambda: view
    return c, clock, log


def beat(
    c: GroupCoordinator,
    clock: FakeClock,
    member_id: str,
    epoch: int,
    *,
    subscribe: tuple[str, ...] | None = None,
    owned: Assignment | None = None,
    instance: str | None = None,
    group: str = "g",
    assignor: str | None = None,
    regex: str | None = None,
) -> HeartbeatResult:
    box = Box()
    if epoch == 0:
        owned = {} if owned is None else owned
    c.consumer.heartbeat(
        Heartbeat(
            group,
            member_id,
            epoch,
            instance_id=instance,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=subscribe,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            owned=owned,
            client_id="c",
            client_host="/127.0.0.1",
        ),
        box,
    )
    clock.run_due()  # the records become durable
    result = box.value
    assert isinstance(result, HeartbeatResult)
    return result


def count(a: Mapping[uuid.UUID, frozenset[int]] | None) -> int:
    return sum(len(p) for p in (a or {}).values())


def test_first_member_gets_every_partition() -> None:
    c, clock, _ = coordinator(t1=6)
    r = beat(c, clock, "m1", 0, subscribe=("t1",))
    assert r.error == ErrorCode.NONE
    assert r.member_epoch == 1
    assert r.assignment == {T1: frozenset(range(6))}
    assert c.group("g").consumer.state() == "Stable"


def test_second_member_waits_for_revocation() -> None:
    c, clock, _ = coordinator(t1=6)
    a = beat(c, clock, "a", 0, subscribe=("t1",))
    b = beat(c, clock, "b", 0, subscribe=("t1",))
    # b's share is still owned by a: b is at epoch 2 with nothing yet
    assert b.member_epoch == 2 and count(b.assignment) == 0
    # a is told to keep 3 partitions (it revokes the others) and stays at epoch 1
    a2 = beat(c, clock, "a", a.member_epoch, owned=a.assignment)
    assert a2.member_epoch == 1 and count(a2.assignment) == 3
    assert c.group("g").consumer.state() == "Reconciling"
    # a still reports all six: no progress
    assert beat(c, clock, "a", 1, owned=a.assignment).member_epoch == 1
    # a revoked: it moves to epoch 2, and b gets the three released partitions
    a3 = beat(c, clock, "a", 1, owned=a2.assignment)
    assert a3.member_epoch == 2
    b2 = beat(c, clock, "b", 2, owned={})
    assert count(b2.assignment) == 3
    assert (a2.assignment or {})[T1].isdisjoint((b2.assignment or {})[T1])
    assert c.group("g").consumer.state() == "Stable"


def test_leave_moves_only_the_leavers_partitions() -> None:
    c, clock, _ = coordinator(t1=6)
    owned: dict[str, Assignment] = {}
    epochs: dict[str, int] = {}
    for m in ("a", "b", "c"):
        r = beat(c, clock, m, 0, subscribe=("t1",))
        epochs[m], owned[m] = r.member_epoch, r.assignment or {}
    for _ in range(4):  # heartbeat until everyone is reconciled
        for m in ("a", "b", "c"):
            r = beat(c, clock, m, epochs[m], owned=owned[m])
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
    assert sorted(count(owned[m]) for m in owned) == [2, 2, 2]
    before = {m: set(owned[m][T1]) for m in ("a", "b")}
    assert beat(c, clock, "c", -1).member_epoch == -1
    for _ in range(2):
        for m in ("a", "b"):
            r = beat(c, clock, m, epochs[m], owned=owned[m])
            epochs[m] = r.member_epoch
            if r.assignment is not None:
                owned[m] = r.assignment
    for m in ("a", "b"):
        assert before[m] <= set(owned[m][T1])  # nobody lost a partition it keeps
    assert sorted(count(owned[m]) for m in ("a", "b")) == [3, 3]


def test_epoch_checks() -> None:
    c, clock, _ = coordinator(t1=2)
    r = beat(c, clock, "a", 0, subscribe=("t1",))
    assert beat(c, clock, "a", r.member_epoch + 1).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(c, clock, "zz", 1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(c, clock, "a", 1, group="nope").error == ErrorCode.GROUP_ID_NOT_FOUND
    bad = beat(c, clock, "a", -3)
    assert bad.error == ErrorCode.INVALID_REQUEST and bad.message == "MemberEpoch is invalid."
    assert (
        beat(c, clock, "a", 0, subscribe=("t1",), assignor="sticky").error == ErrorCode.UNSUPPORTED_ASSIGNOR
    )
    assert beat(c, clock, "b", 0, subscribe=None).error == ErrorCode.INVALID_REQUEST
    assert beat(c, clock, "b", 0, regex="(").error == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_session_timeout_fences_the_member() -> None:
    c, clock, _ = coordinator(t1=2)
    beat(c, clock, "a", 0, subscribe=("t1",))
    clock.advance(45_001)
    assert "a" not in c.group("g").consumer.members
    assert c.group("g").consumer.state() == "Empty"


def static_pair() -> tuple[GroupCoordinator, FakeClock]:
    """A group of two static members, a (instance i-a) and b (i-b), on four partitions, reconciled."""
    c, clock, _ = coordinator(t1=4)
    a = beat(c, clock, "a", 0, subscribe=("t1",), instance="i-a")
    b = beat(c, clock, "b", 0, subscribe=("t1",), instance="i-b")
    for _ in range(3):
        a = beat(c, clock, "a", a.member_epoch, owned=a.assignment, instance="i-a")
        b = beat(c, clock, "b", b.member_epoch, owned=b.assignment or {}, instance="i-b")
    return c, clock


def test_static_member_rejoins_with_its_partitions() -> None:
    c, clock = static_pair()
    held = c.group("g").consumer.members["b"].assigned
    assert count(held) == 2
    assert beat(c, clock, "b", -2, instance="i-b").member_epoch == -2
    # another member id with the same instance id takes b's place and its partitions
    b2 = beat(c, clock, "b2", 0, subscribe=("t1",), instance="i-b")
    assert b2.error == ErrorCode.NONE
    assert b2.assignment == held
    # while b2 holds the instance id, a third one cannot take it
    assert (
        beat(c, clock, "b3", 0, subscribe=("t1",), instance="i-b").error == ErrorCode.UNRELEASED_INSTANCE_ID
    )


def test_offset_commit_checks_member_epoch() -> None:
    c, clock, _ = coordinator(t1=1)
    r = beat(c, clock, "a", 0, subscribe=("t1",))
    results: list[dict[tuple[str, int], ErrorCode]] = []
    commit = {("t1", 0): OffsetCommit(5, "")}
    c.commit_offsets("g", r.member_epoch + 1, "a", None, -1, commit, results.append, api_version=9)
    c.commit_offsets("g", r.member_epoch, "a", None, -1, commit, results.append, api_version=8)
    c.commit_offsets("g", r.member_epoch, "x", None, -1, commit, results.append, api_version=9)
    c.commit_offsets("g", r.member_epoch, "a", None, -1, commit, results.append, api_version=9)
    clock.run_due()
    assert [res[("t1", 0)] for res in results] == [
        ErrorCode.STALE_MEMBER_EPOCH,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.NONE,
    ]
    assert c.fetch_offsets("g", None, "a", r.member_epoch)[0] == ErrorCode.NONE
    assert c.fetch_offsets("g", None, "a", r.member_epoch + 1)[0] == ErrorCode.STALE_MEMBER_EPOCH
    assert c.fetch_offsets("g", None)[1][("t1", 0)].offset == 5


def test_state_survives_a_reload_in_kafkas_formats() -> None:
    c, clock, log = coordinator(t1=4)
    a = beat(c, clock, "a", 0, subscribe=("t1",))
    b = beat(c, clock, "b", 0, subscribe=("t1",))
    a = beat(c, clock, "a", a.member_epoch, owned=a.assignment)
    kinds = {decode_key(k).kind for k, _ in log.all_records() if isinstance(decode_key(k), ConsumerKey)}
    assert kinds == {3, 4, 5, 6, 7, 8}
    for k, v in log.all_records():
        key = decode_key(k)
        if isinstance(key, ConsumerKey) and v is not None:
            decode_value(key.kind, v)
    old = c.group("g").consumer
    c2, _, _ = make(clock=clock, log=log)
    new = c2.group("g").consumer
    assert new is not None
    assert (new.group_epoch, new.assignment_epoch) == (old.group_epoch, old.assignment_epoch)
    assert new.members == old.members
    assert new.target == old.target
    assert new.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert b.member_epoch == 2


def test_a_reloaded_member_that_does_not_revoke_is_fenced_after_its_rebalance_timeout() -> None:
    c, clock, log = coordinator(t1=4)
    a = beat(c, clock, "a", 0, subscribe=("t1",))
    beat(c, clock, "b", 0, subscribe=("t1",))  # a must now give two partitions up
    a = beat(c, clock, "a", a.member_epoch, owned=a.assignment)
    c2, _, _ = make(clock=clock, log=log)  # another coordinator takes the group over
    view = topics(t1=4)
    c2.consumer.topics = lambda: view
    held = c2.group("g").consumer.members["a"]
    assert held.state is MemberState.UNREVOKED_PARTITIONS
    owned = {T1: frozenset(range(4))}  # a keeps heartbeating without revoking anything
    for _ in range(7):
        clock.advance(5_000)
        beat(c2, clock, "a", held.member_epoch, owned=owned)
    assert "a" not in c2.group("g").consumer.members  # 30 s rebalance timeout, as before the move


def test_joining_with_no_topics_yet_is_allowed_and_null_is_not() -> None:
    c, clock, _ = coordinator(t1=2)
    r = beat(c, clock, "a", 0, subscribe=())
    assert (r.error, count(r.assignment)) == (ErrorCode.NONE, 0)
    bad = beat(c, clock, "b", 0)
    assert (bad.error, bad.message) == (
        ErrorCode.INVALID_REQUEST,
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
    )


def test_a_static_member_coming_back_leaves_the_group_epoch_alone() -> None:
    c, clock = static_pair()
    epoch = c.group("g").consumer.group_epoch
    beat(c, clock, "b", -2, instance="i-b")
    b2 = beat(c, clock, "b2", 0, subscribe=("t1",), instance="i-b")
    assert (b2.error, c.group("g").consumer.group_epoch) == (ErrorCode.NONE, epoch)
    assert c.group("g").consumer.state() == "Stable"  # nobody else had to move


def test_delete_empty_consumer_group_writes_tombstones() -> None:
    c, clock, log = coordinator(t1=1)
    beat(c, clock, "a", 0, subscribe=("t1",))
    box = Box()
    c.delete_groups(["g"], box)
    clock.run_due()
    assert box.value == {"g": ErrorCode.NON_EMPTY_GROUP}
    beat(c, clock, "a", -1)
    box = Box()
    c.delete_groups(["g"], box)
    clock.run_due()
    assert box.value == {"g": ErrorCode.NONE}
    c2, _, _ = make(clock=clock, log=log)
    assert c2.group("g") is None


def test_classic_join_into_consumer_group_is_inconsistent() -> None:
    from tests.unit.group_support import join, joined

    c, clock, _ = coordinator(t1=1)
    beat(c, clock, "a", 0, subscribe=("t1",))
    assert joined(join(c)).error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert c.list_groups()[1][0].group_type == "consumer"


def test_regex_subscription() -> None:
    c, clock, _ = coordinator(t1=2, t2=2, other=3)
    r = beat(c, clock, "a", 0, regex="t[0-9]")
    assert r.assignment == {T1: frozenset({0, 1}), T2: frozenset({0, 1})}


def test_uniform_is_balanced_and_sticky() -> None:
    members = [MemberSpec(f"m{i}", None, frozenset({T1}), {}) for i in range(3)]
    first = uniform(members, {T1: 7})
    assert sorted(count(a) for a in first.values()) == [2, 2, 3]
    grown = [MemberSpec(m.member_id, None, m.topics, first[m.member_id]) for m in members]
    grown.append(MemberSpec("m9", None, frozenset({T1}), {}))
    second = uniform(grown, {T1: 7})
    assert sorted(count(a) for a in second.values()) == [1, 2, 2, 2]
    for m in members:
        kept = second[m.member_id].get(T1, frozenset())
        assert kept <= first[m.member_id][T1]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 12),
    st.dictionaries(st.sampled_from([T1, T2]), st.integers(0, 40), min_size=1),
    st.data(),
)
def test_uniform_same_subscriptions_balances_and_moves_only_what_it_must(
    n: int, counts: dict[uuid.UUID, int], data: st.DataObject
) -> None:
    subscribed = frozenset(counts)
    # current targets as a group could hold them: overlapping, beyond the partition counts, of topics
    # not subscribed to
    parts = st.frozensets(st.integers(0, 45), max_size=20)
    members = [
        MemberSpec(f"m{i}", None, subscribed, data.draw(st.dictionaries(st.sampled_from([T1, T2]), parts)))
        for i in range(n)
    ]
    out = uniform(members, counts)
    owned = [(tid, p) for a in out.values() for tid, ps in a.items() for p in ps]
    assert sorted(owned) == sorted((tid, p) for tid, c in counts.items() for p in range(c))
    sizes = [count(a) for a in out.values()]
    assert max(sizes) - min(sizes) <= 1
    # only partitions that balance makes someone give up change hands: a member keeps all of its
    # current partitions up to its new count (a partition in two current targets goes to one)
    claimed: set[tuple[uuid.UUID, int]] = set()
    stayed, could_stay = 0, []
    for m in sorted(members, key=lambda m: m.member_id):
        valid = {
            (tid, p)
            for tid, ps in m.current.items()
            if tid in subscribed
            for p in ps
            if p < counts[tid] and (tid, p) not in claimed
        }
        claimed |= valid
        mine = {(tid, p) for tid, ps in out[m.member_id].items() for p in ps}
        assert len(mine & valid) == min(len(valid), len(mine))
        stayed += len(mine & valid)
        could_stay.append(len(valid))
    # and the members allowed one more are those it saves a move for
    base, extra = divmod(sum(counts.values()), n)
    assert stayed == sum(min(v, base) for v in could_stay) + min(extra, sum(v > base for v in could_stay))


def test_uniform_heterogeneous_subscriptions() -> None:
    members = [
        MemberSpec("a", None, frozenset({T1}), {}),
        MemberSpec("b", None, frozenset({T1, T2}), {}),
    ]
    out = uniform(members, {T1: 2, T2: 2})
    assert T2 not in out["a"]
    assert count(out["a"]) + count(out["b"]) == 4
    assert abs(count(out["a"]) - count(out["b"])) <= 1 or count(out["b"]) == 2 + count(out["b"].get(T1))


@pytest.mark.parametrize("n", [1, 5, 6])
def test_range_is_contiguous_and_copartitioned(n: int) -> None:
    members = [MemberSpec(m, None, frozenset({T1, T2}), {}) for m in ("b", "a")]
    out = range_(members, {T1: n, T2: n})
    assert out["a"].get(T1) == out["a"].get(T2)
    assert sorted(out["a"].get(T1, frozenset())) == list(range(len(out["a"].get(T1, ()))))


def test_keys_round_trip() -> None:
    key = ConsumerKey(8, "g", "m")
    assert decode_key(encode_key(key)) == key
    assert decode_key(encode_key(ConsumerKey(3, "g"))) == ConsumerKey(3, "g")


# -- classic members inside consumer groups, and protocol changes (KIP-848 migration) ----------
def _classic(topics_: list[str], owned: list[tuple[str, int]] = ()) -> tuple[tuple[str, bytes], ...]:
    from protocol.member_data import TopicPartition, encode_subscription

    owned_tps = [TopicPartition(t, p) for t, p in owned]
    return (("cooperative-sticky", encode_subscription(topics_, None, owned_tps, -1, 1)),)


def test_a_classic_member_joins_a_consumer_group_and_revokes_by_rejoining() -> None:
    c, clock, log = coordinator(t1=4)
    a = beat(c, clock, "a", 0, subscribe=("t1",))
    assert a.assignment == {T1: frozenset(range(4))}
    j = joined(join(c, protocols=_classic(["t1"]), require_known=True))
    assert j.error == ErrorCode.MEMBER_ID_REQUIRED
    j = joined(join(c, member_id=j.member_id, protocols=_classic(["t1"]), require_known=True))
    assert (j.error, j.leader_id, j.protocol_name, j.members) == (
        ErrorCode.NONE,
        "",
        "cooperative-sticky",
        (),
    )
    assert synced(sync(c, j)).assignment == assignment_bytes([])  # nothing free yet
    # the KIP-848 member gives up two partitions; the classic member is told to rejoin and gets them
    a2 = beat(c, clock, "a", a.member_epoch, owned={T1: frozenset(range(4))})
    kept = a2.assignment
    assert kept is not None and len(kept[T1]) == 2
    beat(c, clock, "a", a2.member_epoch, owned=kept)
    assert c.heartbeat("g", j.generation_id, j.member_id, None) == ErrorCode.REBALANCE_IN_PROGRESS
    j2 = joined(join(c, member_id=j.member_id, protocols=_classic(["t1"])))
    got = decode_assignment(synced(sync(c, j2)).assignment).partitions
    assert sorted(p.partition for p in got) == sorted(set(range(4)) - kept[T1])
    assert c.heartbeat("g", j2.generation_id, j2.member_id, None) == ErrorCode.NONE
    assert c.heartbeat("g", j2.generation_id - 1, j2.member_id, None) == ErrorCode.ILLEGAL_GENERATION
    # the classic metadata survives a reload
    c2, _, _ = make(clock=clock, log=log)
    c2.consumer.topics = c.consumer.topics
    assert c2.heartbeat("g", j2.generation_id, j2.member_id, None) == ErrorCode.NONE


def assignment_bytes(partitions: list[tuple[str, int]]) -> bytes:
    from protocol.member_data import TopicPartition, encode_assignment

    return encode_assignment([TopicPartition(t, p) for t, p in partitions], None, 1)


@pytest.mark.parametrize("policy", ["bidirectional", "disabled"])
def test_a_consumer_protocol_join_upgrades_a_classic_group_if_the_policy_allows(policy: str) -> None:
    from broker.groups.consumer_protocol import ConsumerSettings
    from protocol.member_data import TopicPartition, encode_assignment

    c, clock, log = coordinator(t1=4)
    c.consumer.settings = ConsumerSettings(migration_policy=policy)
    first = join(c, protocols=_classic(["t1"]))
    clock.advance(3000)
    j = joined(first)
    everything = encode_assignment([TopicPartition("t1", p) for p in range(4)], None, 1)
    stored = sync(c, j, {j.member_id: everything})
    clock.run_due()
    assert synced(stored).error == ErrorCode.NONE
    result = beat(c, clock, "a", 0, subscribe=("t1",))
    if policy == "disabled":
        assert result.error == ErrorCode.GROUP_ID_NOT_FOUND
        return
    assert result.error == ErrorCode.NONE and not result.assignment  # all four are still owned
    # the classic member is at epoch = its old generation and must rejoin to give two up
    assert c.heartbeat("g", j.generation_id, j.member_id, None) == ErrorCode.REBALANCE_IN_PROGRESS
    # the KIP-848 member leaves: the group is classic again, at once rebalancing
    beat(c, clock, "a", -1)
    assert c.group("g").consumer is None
    assert c.describe_group("g")[1].state == "PreparingRebalance"


def test_static_members_move_between_the_protocols_under_their_instance_ids() -> None:
    """A rolling upgrade of static members: each restarts with the other protocol and the same
    group.instance.id, and takes over its old self's partitions."""
    from protocol.member_data import TopicPartition, encode_assignment

    c, clock, log = coordinator(t1=4)
    first = join(c, instance="i1", protocols=_classic(["t1"]))
    clock.advance(3000)
    j = joined(first)
    everything = encode_assignment([TopicPartition("t1", p) for p in range(4)], None, 1)
    stored = sync(c, j, {j.member_id: everything}, instance="i1")
    clock.run_due()
    assert synced(stored).error == ErrorCode.NONE
    # i1 comes back speaking KIP-848 (a classic static member never sends -2 first)
    up = beat(c, clock, "new-i1", 0, subscribe=("t1",), instance="i1")
    assert up.error == ErrorCode.NONE and up.assignment == {T1: frozenset(range(4))}
    cg = c.group("g").consumer
    assert cg is not None and list(cg.members) == ["new-i1"] and cg.members["new-i1"].classic is None
    # and back: a classic static join under i1 turns the group classic, no rebalance
    rejoined = join(c, instance="i1", protocols=_classic(["t1"]))
    clock.run_due()
    back = joined(rejoined)
    assert back.error == ErrorCode.NONE and back.member_id not in ("", "new-i1", j.member_id)
    assert c.group("g").consumer is None
    assert c.describe_group("g")[1].state == "Stable"
    clock.run_due()
    again = synced(sync(c, back, instance="i1"))
    assert sorted(p.partition for p in decode_assignment(again.assignment).partitions) == [0, 1, 2, 3]


def test_a_heartbeat_that_writes_nothing_waits_for_the_groups_uncommitted_records() -> None:
    """Kafka's coordinator runtime: an operation that writes nothing completes only once the last
    written offset is committed, so no member is told what the in-sync replicas may not have."""
    c, clock, log = coordinator(t1=4)
    first = beat(c, clock, "a", 0, subscribe=("t1",))
    log.hold = True  # writes from here on stay uncommitted (the followers are not there yet)

    def heartbeat(member: str, epoch: int, owned: Assignment | None, **more: object) -> Box:
        box = Box()
        c.consumer.heartbeat(
            Heartbeat("g", member, epoch, owned=owned, client_id="c", client_host="/127.0.0.1", **more),  # type: ignore[arg-type]
            box,
        )
        clock.run_due()
        return box

    joining = heartbeat("b", 0, {}, rebalance_timeout_ms=30_000, subscribed_topic_names=("t1",))
    revoking = heartbeat("a", first.member_epoch, first.assignment)  # a is told to revoke: written
    again = heartbeat("a", first.member_epoch, first.assignment)  # no progress: nothing to write
    assert not joining.done and not revoking.done
    assert not again.done, "answered from state the in-sync replicas may not have"
    log.release()
    assert joining.done and revoking.done and again.done
    told, answer = revoking.value, again.value
    assert isinstance(told, HeartbeatResult) and count(told.assignment) == 2
    assert isinstance(answer, HeartbeatResult) and answer.error == ErrorCode.NONE
    log.hold = False
    assert heartbeat("a", first.member_epoch, first.assignment).done  # nothing pending: at once
