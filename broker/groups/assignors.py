"""The server-side assignors of consumer-protocol groups (KIP-848): `uniform` and `range`.

An assignor maps each member to the partitions it should own (the *target*
assignment), given each member's subscribed topic ids, the partition count of
every subscribed topic, and the current target (for stickiness). Both are
deterministic: the same inputs give the same output.

- ``uniform`` (Kafka's default): every partition of a subscribed topic goes to
  exactly one member subscribed to it; counts differ by at most one between
  members that could take each other's partitions; a member keeps every
  partition of its current target that balance allows (a member joining or
  leaving moves only the partitions it must). Members that all subscribe to
  the same topics get their counts from quotas directly; different
  subscriptions go through a balancing loop.
- ``range``: per topic, its partitions in order, split into contiguous ranges
  over the members subscribed to it, sorted by instance id (else member id);
  the first ``partitions % members`` get one more. Members with the same
  subscriptions and equal partition counts get the same numbers from every
  topic (co-partitioning).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

TopicPartitions = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor needs of one member."""

    member_id: str
    instance_id: str | None
    topics: frozenset[uuid.UUID]  # subscribed topics that exist
    current: Mapping[uuid.UUID, frozenset[int]]  # the member's current target


def uniform(members: list[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> dict[str, TopicPartitions]:
    if len({m.topics for m in members}) == 1:
        return _uniform_homogeneous(members, partitions)
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m.member_id: set() for m in members}
    subscribers: dict[uuid.UUID, list[str]] = {}
    for m in sorted(members, key=lambda m: m.member_id):
        for tid in m.topics:
            subscribers.setdefault(tid, []).append(m.member_id)
    # every partition's eligible members; keep current owners that are still eligible
    all_parts = sorted(
        ((tid, p) for tid, n in partitions.items() if tid in subscribers for p in range(n)),
        key=_partition_order,
    )
    taken: set[tuple[uuid.UUID, int]] = set()
    for m in members:
        for tid, parts in m.current.items():
            if tid not in m.topics:
                continue
            for p in parts:
                if p < partitions.get(tid, 0) and (tid, p) not in taken:
                    owned[m.member_id].add((tid, p))
                    taken.add((tid, p))
    # a member over its fair share gives back its highest partitions first
    fair = _fair_shares(members, subscribers, partitions)
    for m in members:
        mine = owned[m.member_id]
        extra = len(mine) - fair[m.member_id]
        if extra > 0:
            for tp in sorted(mine, key=_partition_order)[-extra:]:
                mine.discard(tp)
                taken.discard(tp)
    for tp in all_parts:
        if tp not in taken:
            target = min(subscribers[tp[0]], key=lambda mid: (len(owned[mid]), mid))
            owned[target].add(tp)
            taken.add(tp)
    _balance(owned, subscribers)
    return {mid: _group(tps) for mid, tps in owned.items()}


def _uniform_homogeneous(
    members: list[MemberSpec], partitions: Mapping[uuid.UUID, int]
) -> dict[str, TopicPartitions]:
    """`uniform` when every member subscribes to the same topics (the usual case), without the
    general balancing loop: with P partitions and M members, ``P % M`` members may own
    ``P // M + 1`` and the others ``P // M``. The extra slots go to the members keeping the
    most of their current target (then by member id), so the fewest partitions move; a member
    over its quota gives back its highest partitions; the partitions left go, in order, to the
    members below their quota, by member id."""
    topics = members[0].topics
    count = {tid: partitions.get(tid, 0) for tid in topics}
    order = sorted(members, key=lambda m: m.member_id)
    kept: dict[str, list[tuple[uuid.UUID, int]]] = {}
    taken: set[tuple[uuid.UUID, int]] = set()
    for m in order:
        mine = sorted(
            (
                (tid, p)
                for tid, ps in m.current.items()
                if tid in topics
                for p in ps
                if p < count[tid] and (tid, p) not in taken
            ),
            key=_partition_order,
        )
        kept[m.member_id] = mine
        taken.update(mine)
    total = sum(count.values())
    base, extra = divmod(total, len(members))
    ranked = sorted(order, key=lambda m: (-len(kept[m.member_id]), m.member_id))
    quota = {m.member_id: base + (1 if i < extra else 0) for i, m in enumerate(ranked)}
    for mid, mine in kept.items():
        for tp in mine[quota[mid] :]:
            taken.discard(tp)
        del mine[quota[mid] :]
    free = iter(
        sorted(
            ((tid, p) for tid, n in count.items() for p in range(n) if (tid, p) not in taken),
            key=_partition_order,
        )
    )
    for m in order:
        mine = kept[m.member_id]
        mine.extend(next(free) for _ in range(quota[m.member_id] - len(mine)))
    return {mid: _group(set(tps)) for mid, tps in kept.items()}


def _fair_shares(
    members: list[MemberSpec], subscribers: Mapping[uuid.UUID, list[str]], partitions: Mapping[uuid.UUID, int]
) -> dict[str, int]:
    """Each member's ceiling share: its topics' partitions spread over their subscribers."""
    share: dict[str, float] = {m.member_id: 0.0 for m in members}
    for tid, mids in subscribers.items():
        n = partitions.get(tid, 0)
        for mid in mids:
            share[mid] += n / len(mids)
    return {mid: -int(-s // 1) for mid, s in share.items()}  # ceil


def _balance(
    owned: dict[str, set[tuple[uuid.UUID, int]]], subscribers: Mapping[uuid.UUID, list[str]]
) -> None:
    """Move partitions from a member to an eligible one with at least two fewer, until none can move."""
    moved = True
    while moved:
        moved = False
        for mid in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[mid], key=_partition_order, reverse=True):
                best = min(subscribers[tp[0]], key=lambda other: (len(owned[other]), other))
                if len(owned[best]) + 1 < len(owned[mid]):
                    owned[mid].discard(tp)
                    owned[best].add(tp)
                    moved = True
                    break
            if moved:
                break


def range_(members: list[MemberSpec], partitions: Mapping[uuid.UUID, int]) -> dict[str, TopicPartitions]:
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    ordered = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
    for tid, n in partitions.items():
        subs = [m.member_id for m in ordered if tid in m.topics]
        if not subs:
            continue
        base, extra = divmod(n, len(subs))
        start = 0
        for i, mid in enumerate(subs):
            count = base + (1 if i < extra else 0)
            if count:
                out[mid][tid] = set(range(start, start + count))
            start += count
    return {mid: {tid: frozenset(ps) for tid, ps in topics.items()} for mid, topics in out.items()}


def _partition_order(tp: tuple[uuid.UUID, int]) -> tuple[int, int]:
    """Partitions by topic id (in the order of the ids' text, which is their integers' order:
    fixed-width hex) and number."""
    return tp[0].int, tp[1]


def _group(tps: set[tuple[uuid.UUID, int]]) -> TopicPartitions:
    out: dict[uuid.UUID, set[int]] = {}
    for tid, p in tps:
        out.setdefault(tid, set()).add(p)
    return {tid: frozenset(ps) for tid, ps in out.items()}


ASSIGNORS = {"uniform": uniform, "range": range_}
DEFAULT_ASSIGNORS = ("uniform", "range")  # group.consumer.assignors: the first is the default
