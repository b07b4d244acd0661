"""The key and value formats of `__consumer_offsets` records (Kafka's own, so its tools can read them).

Every key and value starts with an INT16 schema version. Integers are
big-endian; STRING is INT16 length + UTF-8 (never null); NULLABLE_STRING uses
length -1 for null; BYTES is INT32 length + bytes; ARRAY is INT32 count + elements.

Keys::

    offset commit  key v0/v1:  version, group STRING, topic STRING, partition INT32
    group metadata key v2:     version, group STRING
    consumer-protocol keys v3-8: see `broker.groups.consumer_records`

Offset commit values (we write v3, or v1 when the commit carried an explicit
retention time and so has an expire timestamp)::

    v0: offset INT64, metadata STRING, timestamp INT64
    v1: offset INT64, metadata STRING, commitTimestamp INT64, expireTimestamp INT64
    v2: offset INT64, metadata STRING, commitTimestamp INT64
    v3: offset INT64, leaderEpoch INT32, metadata STRING, commitTimestamp INT64

Group metadata values (we write v3)::

    protocolType STRING, generation INT32, protocol NULLABLE_STRING, leader NULLABLE_STRING,
    [v2+] currentStateTimestamp INT64,
    members ARRAY of:
        memberId STRING, [v3+] groupInstanceId NULLABLE_STRING, clientId STRING, clientHost STRING,
        [v1+] rebalanceTimeout INT32, sessionTimeout INT32, subscription BYTES, assignment BYTES

A record with a null value is a tombstone: the offset, or the whole group, is gone.

Decoding is bounded: a length or count beyond the bytes left, a negative
STRING length, bad UTF-8 or an unknown version raises `ProtocolError`.
Trailing bytes after the last known field are ignored, as Kafka's reader does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from broker.groups.consumer_records import KEY_VERSIONS, ConsumerKey
from broker.groups.consumer_records import decode_key as decode_consumer_key
from protocol.errors import ProtocolError

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    """One committed offset. ``expire_timestamp`` is None unless the commit set a retention time."""

    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    """A group as persisted after a rebalance. ``current_state_timestamp`` is None before value v2."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: tuple[MemberValue, ...] = ()


# -- encoding ----------------------------------------------------------------------------------


def _string(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes does not fit an INT16 length")
    out += _I16.pack(len(raw))
    out += raw


def _nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I16.pack(-1)
    else:
        _string(out, s)


def _bytes(out: bytearray, b: bytes) -> None:
    out += _I32.pack(len(b))
    out += b


def encode_offset_key(key: OffsetKey) -> bytes:
    out = bytearray(_I16.pack(OFFSET_KEY_VERSION))
    _string(out, key.group)
    _string(out, key.topic)
    out += _I32.pack(key.partition)
    return bytes(out)


def encode_group_key(key: GroupKey) -> bytes:
    out = bytearray(_I16.pack(GROUP_KEY_VERSION))
    _string(out, key.group)
    return bytes(out)


def encode_offset_value(value: OffsetValue) -> bytes:
    """Value v3, or v1 if ``value.expire_timestamp`` is set (v3 has no expire field)."""
    if value.expire_timestamp is not None:
        out = bytearray(_I16.pack(OFFSET_VALUE_VERSION_WITH_EXPIRE))
        out += _I64.pack(value.offset)
        _string(out, value.metadata)
        out += _I64.pack(value.commit_timestamp)
        out += _I64.pack(value.expire_timestamp)
        return bytes(out)
    out = bytearray(_I16.pack(OFFSET_VALUE_VERSION))
    out += _I64.pack(value.offset)
    out += _I32.pack(value.leader_epoch)
    _string(out, value.metadata)
    out += _I64.pack(value.commit_timestamp)
    return bytes(out)


def encode_group_value(value: GroupValue) -> bytes:
    """Value v3 (a missing current state timestamp is written as -1)."""
    out = bytearray(_I16.pack(GROUP_VALUE_VERSION))
    _string(out, value.protocol_type)
    out += _I32.pack(value.generation)
    _nullable_string(out, value.protocol)
    _nullable_string(out, value.leader)
    ts = value.current_state_timestamp
    out += _I64.pack(-1 if ts is None else ts)
    out += _I32.pack(len(value.members))
    for m in value.members:
        _string(out, m.member_id)
        _nullable_string(out, m.group_instance_id)
        _string(out, m.client_id)
        _string(out, m.client_host)
        out += _I32.pack(m.rebalance_timeout_ms)
        out += _I32.pack(m.session_timeout_ms)
        _bytes(out, m.subscription)
        _bytes(out, m.assignment)
    return bytes(out)


# -- decoding ----------------------------------------------------------------------------------


class _Reader:
    """Bounded big-endian reads over one key or value; every failure is a `ProtocolError`."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0 or len(self.data) - start < n:
            raise ProtocolError(f"{what}: need {n} bytes at {start}, have {len(self.data) - start}")
        self.pos = start + n
        return start

    def int16(self, what: str) -> int:
        return int(_I16.unpack_from(self.data, self._take(2, what))[0])

    def int32(self, what: str) -> int:
        return int(_I32.unpack_from(self.data, self._take(4, what))[0])

    def int64(self, what: str) -> int:
        return int(_I64.unpack_from(self.data, self._take(8, what))[0])

    def nullable_string(self, what: str) -> str | None:
        n = self.int16(what)
        if n == -1:
            return None
        start = self._take(n, what)
        try:
            return self.data[start : start + n].decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"{what}: invalid UTF-8") from None

    def string(self, what: str) -> str:
        s = self.nullable_string(what)
        if s is None:
            raise ProtocolError(f"{what}: null where a STRING is required")
        return s

    def bytes_(self, what: str) -> bytes:
        n = self.int32(what)
        if n == -1:
            return b""
        start = self._take(n, what)
        return bytes(self.data[start : start + n])

    def count(self, what: str, min_element_size: int) -> int:
        n = self.int32(what)
        if n < 0 or n * min_element_size > len(self.data) - self.pos:
            raise ProtocolError(f"{what}: array count {n} larger than the bytes left")
        return n


def decode_key(data: bytes) -> OffsetKey | GroupKey | ConsumerKey:
    """An `OffsetKey` (versions 0, 1), a `GroupKey` (version 2), or a consumer-protocol key (3-8)."""
    r = _Reader(data)
    version = r.int16("key version")
    if version in (0, 1):
        return OffsetKey(r.string("group"), r.string("topic"), r.int32("partition"))
    if version == 2:
        return GroupKey(r.string("group"))
    if version in KEY_VERSIONS:
        return decode_consumer_key(version, data, r.pos)
    raise ProtocolError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    """An offset commit value of version 0 to 3."""
    r = _Reader(data)
    version = r.int16("offset value version")
    if version == 0 or version == 2:
        offset = r.int64("offset")
        metadata = r.string("metadata")
        return OffsetValue(offset, metadata, r.int64("commit timestamp"))
    if version == 1:
        offset = r.int64("offset")
        metadata = r.string("metadata")
        commit_ts = r.int64("commit timestamp")
        return OffsetValue(offset, metadata, commit_ts, expire_timestamp=r.int64("expire timestamp"))
    if version == 3:
        offset = r.int64("offset")
        epoch = r.int32("leader epoch")
        metadata = r.string("metadata")
        return OffsetValue(offset, metadata, r.int64("commit timestamp"), leader_epoch=epoch)
    raise ProtocolError(f"unknown offset commit value version {version}")


def decode_group_value(data: bytes) -> GroupValue:
    """A group metadata value of version 0 to 3."""
    r = _Reader(data)
    version = r.int16("group value version")
    if not 0 <= version <= 3:
        raise ProtocolError(f"unknown group metadata value version {version}")
    protocol_type = r.string("protocol type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    state_ts = r.int64("current state timestamp") if version >= 2 else None
    if state_ts == -1:
        state_ts = None
    members = []
    # smallest member (v0): three empty strings, one INT32, two empty BYTES
    for _ in range(r.count("members", 3 * 2 + 4 + 2 * 4)):
        member_id = r.string("member id")
        instance_id = r.nullable_string("group instance id") if version >= 3 else None
        client_id = r.string("client id")
        client_host = r.string("client host")
        session_timeout = r.int32("session timeout")
        rebalance_timeout = session_timeout
        if version >= 1:
            rebalance_timeout, session_timeout = session_timeout, r.int32("session timeout")
        members.append(
            MemberValue(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.bytes_("subscription"),
                r.bytes_("assignment"),
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, tuple(members))
