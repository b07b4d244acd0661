"""__consumer_offsets key/value formats against hand-written bytes, and the group -> partition hash."""

from __future__ import annotations

import pytest

from broker.groups.hashing import java_string_hash, kafka_abs, partition_for
from broker.groups.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from protocol.errors import ProtocolError
from tests.data import vector_rows


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


# offset commit key v1: version, group "grp", topic "topic", partition 7
OFFSET_KEY = h("0001  0003 677270  0005 746f706963  00000007")
# group metadata key v2: version, group "grp"
GROUP_KEY = h("0002  0003 677270")
# offset value v3: offset 1000, leader epoch -1, metadata "meta", commit timestamp 1700000000000
OFFSET_VALUE_V3 = h("0003  00000000000003e8  ffffffff  0004 6d657461  0000018bcfe56800")
# offset value v1: offset 5, metadata "", commit ts 1700000000000, expire ts 1700000060000
OFFSET_VALUE_V1 = h("0001  0000000000000005  0000  0000018bcfe56800  0000018bcfe65260")
# v0 and v2 have the same layout: offset 9, metadata "x", timestamp 1
OFFSET_VALUE_V0 = h("0000  0000000000000009  0001 78  0000000000000001")
OFFSET_VALUE_V2 = h("0002  0000000000000009  0001 78  0000000000000001")

# group value v3: protocolType "consumer", generation 3, protocol "range", leader "m-1",
# currentStateTimestamp 1700000000000, one member:
#   memberId "m-1", groupInstanceId "i-1", clientId "c", clientHost "/127.0.0.1",
#   rebalanceTimeout 300000, sessionTimeout 10000, subscription 01 02, assignment 03
GROUP_VALUE_V3 = h(
    """
    0003
    0008 636f6e73756d6572
    00000003
    0005 72616e6765
    0003 6d2d31
    0000018bcfe56800
    00000001
      0003 6d2d31
      0003 692d31
      0001 63
      000a 2f3132372e302e302e31
      000493e0
      00002710
      00000002 0102
      00000001 03
    """
)
# group value v0 (an old broker): protocolType "consumer", generation 1, protocol null, leader null,
# one member "m" clientId "c" clientHost "h" sessionTimeout 6000, empty subscription/assignment
GROUP_VALUE_V0 = h(
    """
    0000  0008 636f6e73756d6572  00000001  ffff  ffff
    00000001
      0001 6d  0001 63  0001 68  00001770  00000000  00000000
    """
)
# group value v1 adds rebalanceTimeout (before sessionTimeout)
GROUP_VALUE_V1 = h(
    """
    0001  0008 636f6e73756d6572  00000001  0005 72616e6765  0001 6d
    00000001
      0001 6d  0001 63  0001 68  0000ea60  00001770  00000001 aa  00000001 bb
    """
)
# an empty group after its members left (v3, protocol and leader null, no members)
EMPTY_GROUP_V3 = h("0003  0008 636f6e73756d6572  00000004  ffff  ffff  0000018bcfe56800  00000000")

MEMBER = MemberValue("m-1", "i-1", "c", "/127.0.0.1", 300_000, 10_000, b"\x01\x02", b"\x03")


def test_keys() -> None:
    assert encode_offset_key(OffsetKey("grp", "topic", 7)) == OFFSET_KEY
    assert encode_group_key(GroupKey("grp")) == GROUP_KEY
    assert decode_key(OFFSET_KEY) == OffsetKey("grp", "topic", 7)
    assert decode_key(h("0000 0003 677270 0005 746f706963 00000007")) == OffsetKey("grp", "topic", 7)  # v0
    assert decode_key(GROUP_KEY) == GroupKey("grp")


def test_offset_values() -> None:
    v3 = OffsetValue(1000, "meta", 1_700_000_000_000)
    assert encode_offset_value(v3) == OFFSET_VALUE_V3
    assert decode_offset_value(OFFSET_VALUE_V3) == v3
    v1 = OffsetValue(5, "", 1_700_000_000_000, expire_timestamp=1_700_000_060_000)
    assert encode_offset_value(v1) == OFFSET_VALUE_V1  # an expire timestamp needs value v1
    assert decode_offset_value(OFFSET_VALUE_V1) == v1
    assert decode_offset_value(OFFSET_VALUE_V0) == OffsetValue(9, "x", 1)
    assert decode_offset_value(OFFSET_VALUE_V2) == OffsetValue(9, "x", 1)
    assert decode_offset_value(h("0003 0000000000000001 00000007 0000 0000000000000002")).leader_epoch == 7


def test_group_values() -> None:
    value = GroupValue("consumer", 3, "range", "m-1", 1_700_000_000_000, (MEMBER,))
    assert encode_group_value(value) == GROUP_VALUE_V3
    assert decode_group_value(GROUP_VALUE_V3) == value
    empty = GroupValue("consumer", 4, None, None, 1_700_000_000_000)
    assert encode_group_value(empty) == EMPTY_GROUP_V3
    assert decode_group_value(EMPTY_GROUP_V3) == empty
    assert decode_group_value(GROUP_VALUE_V0) == GroupValue(
        "consumer", 1, None, None, None, (MemberValue("m", None, "c", "h", 6000, 6000, b"", b""),)
    )
    assert decode_group_value(GROUP_VALUE_V1) == GroupValue(
        "consumer", 1, "range", "m", None, (MemberValue("m", None, "c", "h", 60_000, 6000, b"\xaa", b"\xbb"),)
    )


def test_trailing_bytes_are_ignored() -> None:
    assert decode_offset_value(OFFSET_VALUE_V3 + b"\x00\x00") == OffsetValue(1000, "meta", 1_700_000_000_000)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        h("0009 0003 677270"),  # unknown key version
        h("0001 0003 6772"),  # string cut short
        h("0001 ffff 0005 746f706963 00000007"),  # null group where a STRING is required
        h("0002 0002 c328"),  # invalid UTF-8
    ],
)
def test_bad_keys_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_key(data)


@pytest.mark.parametrize(
    "data",
    [
        OFFSET_VALUE_V3[:-1],  # cut short
        h("0004 0000000000000001 00000000 0000 0000000000000002"),  # unknown version
        h("0003 0000000000000001 00000000 ffff 0000000000000002"),  # null metadata
    ],
)
def test_bad_offset_values_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_offset_value(data)


@pytest.mark.parametrize(
    "data",
    [
        GROUP_VALUE_V3[:-1],  # cut short
        h("0004") + GROUP_VALUE_V3[2:],  # unknown version
        EMPTY_GROUP_V3[:-4] + h("7fffffff"),  # member count far beyond the bytes left
        EMPTY_GROUP_V3[:-4]
        + h("00000001 0000 ffff 0000 0000 00000000 00000000 fffffff0 00"),  # bad BYTES length
    ],
)
def test_bad_group_values_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_group_value(data)


# tests/data/vectors/group_partition.tsv (checked against the file below)
PARTITION_VECTORS = [
    ("", 0, 0),
    ("a", 97, 47),
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
    ("hello", 99162322, 22),
    ("my-group", -1906497762, 12),
    ("kp-group", -494749673, 23),
    ("ck-group", -1694881574, 24),
    ("console-consumer-12345", 158455506, 6),
    ("polygenelubricants", -2147483648, 0),
    ("\u00e9t\u00e9", 227742, 42),
    ("\U0001f600", 1772899, 49),
    ("test-group-" + "x" * 40, -2128894423, 23),
]


@pytest.mark.parametrize(("group", "hash_code", "partition"), PARTITION_VECTORS)
def test_group_partition_vectors(group: str, hash_code: int, partition: int) -> None:
    assert java_string_hash(group) == hash_code
    assert partition_for(group, 50) == partition


def test_vectors_match_the_data_file() -> None:
    rows = [
        (group, int(code), int(partition)) for group, code, partition in vector_rows("group_partition.tsv")
    ]
    assert rows == PARTITION_VECTORS


def test_kafka_abs_of_int_min_is_zero() -> None:
    assert kafka_abs(-(2**31)) == 0 and kafka_abs(-5) == 5
    with pytest.raises(ValueError):
        partition_for("g", 0)
