"""Partition assignors and the consumer protocol's subscription/assignment encoding.

The group leader runs the assignor the group voted for over every member's
subscription (the JoinGroup member metadata) and sends each member its
assignment in SyncGroup. Both blobs use Kafka's "consumer" protocol encoding,
so a group may mix our consumers with Java, librdkafka and kafka-python ones.
Both blobs are encoded by `protocol.member_data`.

Assignors (the names are the protocol names every client uses):

- ``range``: per topic, the subscribed members in order get consecutive
  ranges; the first ``partitions % members`` get one extra.
- ``roundrobin``: all partitions sorted by (topic, partition) dealt to the
  members in order, skipping members not subscribed to the partition's topic.
- ``sticky``: keep every valid previously owned partition (up to the balanced
  quota; of two claims on one partition the newer generation wins), then give each remaining partition, in (topic, partition) order, to
  the eligible member with the fewest partitions (ties by member order), then
  move partitions from the most to the least loaded eligible member until no
  move helps. Previous ownership travels in user_data (StickyAssignorUserData
  v1: ARRAY(topic, ARRAY(INT32)) + INT32 generation) and in owned_partitions.
- ``cooperative-sticky``: the sticky assignment, minus every partition that
  would move from one member to another: its owner first revokes it, and the
  follow-up rebalance hands it over, so unaffected partitions are never revoked.

"Member order" is Kafka's: members with a group.instance.id first, by it, then
the rest by member id.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from protocol.errors import ProtocolError
from protocol.member_data import Reader, Subscription, TopicPartition, Writer

_I32 = struct.Struct(">i")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignorUserData v1: previous assignment + generation."""
    w = Writer()
    w.partitions(partitions)
    w.i32(generation)
    return w.value()


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int]:
    r = Reader(data)
    partitions = r.partitions()
    generation = r.i32() if r.left >= 4 else -1
    return partitions, generation


# -- assignment ---------------------------------------------------------------------------------


def member_order(subscriptions: dict[str, Subscription]) -> list[str]:
    """Kafka's MemberInfo order: static members (by group.instance.id) first, then by member id."""

    def key(member_id: str) -> tuple[int, str]:
        instance = subscriptions[member_id].group_instance_id
        return (0, instance) if instance is not None else (1, member_id)

    return sorted(subscriptions, key=key)


def _all_partitions(partitions_per_topic: dict[str, int], topics: Iterable[str]) -> list[TopicPartition]:
    wanted = set(topics)
    return [
        TopicPartition(t, p)
        for t in sorted(partitions_per_topic)
        if t in wanted
        for p in range(partitions_per_topic[t])
    ]


class Assignor:
    """Base class: ``assign`` maps member id -> partitions."""

    name = ""
    cooperative = False

    def user_data(self, owned: list[TopicPartition], generation: int) -> bytes | None:
        """What this member puts in its subscription's user_data."""
        return None

    def assign(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        raise NotImplementedError


class RangeAssignor(Assignor):
    name = "range"

    def assign(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        order = member_order(subscriptions)
        out: dict[str, list[TopicPartition]] = {m: [] for m in order}
        for topic in sorted(partitions_per_topic):
            members = [m for m in order if topic in subscriptions[m].topics]
            if not members:
                continue
            n = partitions_per_topic[topic]
            per, extra = divmod(n, len(members))
            for i, m in enumerate(members):
                start = per * i + min(i, extra)
                length = per + (1 if i < extra else 0)
                out[m].extend(TopicPartition(topic, p) for p in range(start, start + length))
        return out


class RoundRobinAssignor(Assignor):
    name = "roundrobin"

    def assign(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        order = member_order(subscriptions)
        out: dict[str, list[TopicPartition]] = {m: [] for m in order}
        if not order:
            return out
        topics = {t for m in order for t in subscriptions[m].topics}
        i = 0
        for tp in _all_partitions(partitions_per_topic, topics):
            while tp.topic not in subscriptions[order[i % len(order)]].topics:
                i += 1
            out[order[i % len(order)]].append(tp)
            i += 1
        return out


class StickyAssignor(Assignor):
    name = "sticky"

    def user_data(self, owned: list[TopicPartition], generation: int) -> bytes | None:
        return encode_sticky_user_data(owned, generation)

    def previous(self, sub: Subscription) -> tuple[list[TopicPartition], int]:
        """(owned partitions, generation) a member reports."""
        if sub.user_data:
            try:
                return decode_sticky_user_data(sub.user_data)
            except ProtocolError:
                pass
        return list(sub.owned_partitions), sub.generation

    def assign(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        assignment, _ = self._sticky(partitions_per_topic, subscriptions)
        return assignment

    def _sticky(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> tuple[dict[str, list[TopicPartition]], dict[TopicPartition, str]]:
        """(assignment, previous owner of every partition that had a valid one)."""
        order = member_order(subscriptions)
        rank = {m: i for i, m in enumerate(order)}
        out: dict[str, list[TopicPartition]] = {m: [] for m in order}
        if not order:
            return out, {}
        subscribed = {m: set(subscriptions[m].topics) & set(partitions_per_topic) for m in order}
        all_tps = _all_partitions(partitions_per_topic, set().union(*subscribed.values()))
        valid = set(all_tps)

        # 1. Previous ownership. Two members claiming one partition: the newer generation wins (then
        #    member order). A claim without a generation (kafka-python's cooperative subscriptions
        #    carry none) still counts when nobody contests it, so such members stay sticky too.
        owner: dict[TopicPartition, str] = {}
        claim_gen: dict[TopicPartition, int] = {}
        for m in order:
            tps, gen = self.previous(subscriptions[m])
            for tp in tps:
                if tp in valid and tp.topic in subscribed[m] and (tp not in owner or gen > claim_gen[tp]):
                    owner[tp] = m
                    claim_gen[tp] = gen
        kept: dict[str, list[TopicPartition]] = {m: [] for m in order}
        for tp, m in owner.items():
            kept[m].append(tp)

        # 2. Keep owned partitions up to the balanced quota when all subscriptions are equal.
        equal = all(subscribed[m] == subscribed[order[0]] for m in order)
        if equal:
            total, n = len(all_tps), len(order)
            min_q, extra = divmod(total, n)
            at_max = 0
            for m in order:
                out[m] = kept[m][:min_q]
            for m in order:
                if len(kept[m]) > min_q and at_max < extra:
                    out[m].append(kept[m][min_q])
                    at_max += 1
        else:
            for m in order:
                out[m] = list(kept[m])
        taken = {tp for tps in out.values() for tp in tps}

        # 3. Every other partition to the least loaded eligible member.
        for tp in all_tps:
            if tp in taken:
                continue
            eligible = [m for m in order if tp.topic in subscribed[m]]
            if not eligible:
                continue
            best = min(eligible, key=lambda m: (len(out[m]), rank[m]))
            out[best].append(tp)

        # 4. Unequal subscriptions: move partitions while a move narrows the spread.
        if not equal:
            moved = True
            while moved:
                moved = False
                for src in sorted(order, key=lambda m: (-len(out[m]), rank[m])):
                    for tp in sorted(out[src], key=lambda t: (owner.get(t) == src, t)):
                        targets = [
                            m for m in order if tp.topic in subscribed[m] and len(out[m]) <= len(out[src]) - 2
                        ]
                        if targets:
                            dst = min(targets, key=lambda m: (len(out[m]), rank[m]))
                            out[src].remove(tp)
                            out[dst].append(tp)
                            moved = True
                            break
                    if moved:
                        break
        return out, owner


class CooperativeStickyAssignor(StickyAssignor):
    name = "cooperative-sticky"
    cooperative = True

    def user_data(self, owned: list[TopicPartition], generation: int) -> bytes | None:
        return _I32.pack(generation)

    def previous(self, sub: Subscription) -> tuple[list[TopicPartition], int]:
        generation = sub.generation
        if sub.version < 2 and sub.user_data and len(sub.user_data) == 4:
            generation = _I32.unpack(sub.user_data)[0]
        return list(sub.owned_partitions), generation

    def assign(
        self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]
    ) -> dict[str, list[TopicPartition]]:
        assignment, _ = self._sticky(partitions_per_topic, subscriptions)
        # Anything changing hands is left out this round; its owner revokes it first.
        current: dict[TopicPartition, str] = {}
        for m, sub in subscriptions.items():
            for tp in self.previous(sub)[0]:
                current.setdefault(tp, m)
        for m, tps in assignment.items():
            assignment[m] = [tp for tp in tps if current.get(tp, m) == m]
        return assignment


ASSIGNOR_CLASSES: dict[str, type[Assignor]] = {
    cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}


def assignor(name: str) -> Assignor:
    """The assignor for a protocol name; KeyError for names we do not implement."""
    return ASSIGNOR_CLASSES[name]()
