"""The classic consumer protocol's member data: JoinGroup metadata and SyncGroup assignments.

A member of a classic group whose protocol type is "consumer" sends its
subscription as the JoinGroup metadata of each protocol it supports, and gets
its assignment back in SyncGroup. The client's assignors (`client.assignors`)
and the broker (classic members of a KIP-848 group, `broker.groups.classic_members`)
both read and write these blobs.

Subscription (ConsumerProtocolSubscription), all big-endian::

    version INT16
    topics ARRAY(STRING)                  INT32 count, INT16-length strings
    user_data NULLABLE_BYTES              INT32 length, -1 = null
    owned_partitions ARRAY(topic STRING, partitions ARRAY(INT32))   v1+
    generation_id INT32                   v2+ (-1 = unknown)
    rack_id NULLABLE_STRING               v3+

Assignment (ConsumerProtocolAssignment)::

    version INT16
    assigned_partitions ARRAY(topic STRING, partitions ARRAY(INT32))
    user_data NULLABLE_BYTES

Readers parse newer versions with the fields they know and ignore the rest, as
Kafka's do. We write subscription v2 and assignment v1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol.errors import ProtocolError


class TopicPartition(NamedTuple):
    """A partition of a topic; sorts by (topic, partition) like Kafka's comparator."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


SUBSCRIPTION_VERSION = 2
ASSIGNMENT_VERSION = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass
class Subscription:
    """One member's decoded subscription, plus the member's identity."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass
class Assignment:
    partitions: list[TopicPartition]
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


class Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> None:
        self.parts.append(_I16.pack(v))

    def i32(self, v: int) -> None:
        self.parts.append(_I32.pack(v))

    def string(self, s: str | None) -> None:
        if s is None:
            self.i16(-1)
            return
        b = s.encode("utf-8")
        self.i16(len(b))
        self.parts.append(b)

    def nbytes(self, b: bytes | None) -> None:
        if b is None:
            self.i32(-1)
            return
        self.i32(len(b))
        self.parts.append(b)

    def partitions(self, tps: Iterable[TopicPartition]) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        self.i32(len(by_topic))
        for topic in sorted(by_topic):
            self.string(topic)
            ps = sorted(by_topic[topic])
            self.i32(len(ps))
            for p in ps:
                self.i32(p)

    def value(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data)
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("consumer protocol data cut short")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def string(self) -> str | None:
        n = self.i16()
        if n == -1:
            return None
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("invalid UTF-8 in consumer protocol data") from None

    def nbytes(self) -> bytes | None:
        n = self.i32()
        return None if n == -1 else self._take(n)

    def count(self) -> int:
        n = self.i32()
        if n < -1 or n > self.left:
            raise ProtocolError(f"bad array count {n}")
        return max(n, 0)

    def partitions(self) -> list[TopicPartition]:
        out = []
        for _ in range(self.count()):
            topic = self.string() or ""
            for _ in range(self.count()):
                out.append(TopicPartition(topic, self.i32()))
        return out


def encode_subscription(
    topics: Iterable[str],
    user_data: bytes | None = None,
    owned_partitions: Iterable[TopicPartition] = (),
    generation: int = -1,
    version: int = SUBSCRIPTION_VERSION,
) -> bytes:
    w = Writer()
    w.i16(version)
    names = sorted(set(topics))
    w.i32(len(names))
    for t in names:
        w.string(t)
    w.nbytes(user_data)
    if version >= 1:
        w.partitions(owned_partitions)
    if version >= 2:
        w.i32(generation)
    if version >= 3:
        w.string(None)
    return w.value()


def decode_subscription(data: bytes) -> Subscription:
    """Parse member metadata of any version (unknown trailing fields are ignored)."""
    r = Reader(data)
    version = r.i16()
    if version < 0:
        raise ProtocolError(f"bad subscription version {version}")
    topics = [r.string() or "" for _ in range(r.count())]
    sub = Subscription(topics, r.nbytes(), version=version)
    if version >= 1 and r.left:
        sub.owned_partitions = r.partitions()
    if version >= 2 and r.left >= 4:
        sub.generation = r.i32()
    if version >= 3 and r.left >= 2:
        sub.rack_id = r.string()
    return sub


def encode_assignment(
    partitions: Iterable[TopicPartition], user_data: bytes | None = None, version: int = ASSIGNMENT_VERSION
) -> bytes:
    w = Writer()
    w.i16(version)
    w.partitions(partitions)
    w.nbytes(user_data)
    return w.value()


def decode_assignment(data: bytes) -> Assignment:
    """Parse an assignment; empty bytes (what a member gets with nothing assigned) is an empty one."""
    if not data:
        return Assignment([])
    r = Reader(data)
    version = r.i16()
    partitions = r.partitions()
    user_data = r.nbytes() if r.left >= 4 else None
    return Assignment(partitions, user_data, version)
