"""Control batches (transaction markers): Kafka's byte layout, flags, CRC, and reading the type back."""

from __future__ import annotations

import dataclasses
import random
import struct

import pytest

from protocol import codecs
from protocol.control_records import (
    ABORT,
    COMMIT,
    build_marker_batch,
    control_key,
    end_txn_marker_value,
    marker_type,
    parse_control_key,
    parse_end_txn_value,
    read_marker,
)
from protocol.errors import ProtocolError
from protocol.records import (
    CONTROL_BIT,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_BIT,
    Record,
    build_batch,
    crc32c,
    decode_batch,
    read_header,
    validate_batches,
)


def _kafka_marker(
    pid: int, epoch: int, control_type: int, coordinator_epoch: int, ts: int, ple: int
) -> bytes:
    """The marker batch written out field by field from Kafka's formats (DefaultRecordBatch,
    DefaultRecord, ControlRecordType, EndTransactionMarker)."""
    record_body = (
        b"\x00"  # record attributes
        + b"\x00"  # timestamp delta 0 (zigzag varlong)
        + b"\x00"  # offset delta 0 (zigzag varint)
        + b"\x08"  # key length 4
        + struct.pack(">hh", 0, control_type)
        + b"\x0c"  # value length 6
        + struct.pack(">hi", 0, coordinator_epoch)
        + b"\x00"  # no headers
    )
    record = bytes([len(record_body) << 1]) + record_body
    after_crc = (
        struct.pack(">hiqqqhii", 0x30, 0, ts, ts, pid, epoch, -1, 1)  # attributes: transactional|control
        + record
    )
    return (
        struct.pack(">qiib", 0, 49 + len(record), ple, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    )


@pytest.mark.parametrize("commit", [True, False])
def test_marker_batch_is_kafkas_byte_layout(commit: bool) -> None:
    batch = build_marker_batch(4242, 3, commit, 17, 1_700_000_000_123, partition_leader_epoch=9)
    assert isinstance(batch, bytearray)
    assert len(batch) == 78
    assert bytes(batch) == _kafka_marker(4242, 3, COMMIT if commit else ABORT, 17, 1_700_000_000_123, 9)


def test_marker_batch_decodes_with_the_record_decoders() -> None:
    batch = build_marker_batch(7, 0, False, 5, 1_000)
    (h,) = validate_batches(batch)  # CRC checked
    assert h.base_offset == 0 and h.last_offset_delta == 0 and h.record_count == 1
    assert h.attributes == TRANSACTIONAL_BIT | CONTROL_BIT
    assert h.is_control and h.is_transactional and h.codec == codecs.NONE
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 0, -1)
    assert h.partition_leader_epoch == -1 and h.base_timestamp == h.max_timestamp == 1_000
    hh, records = decode_batch(batch)
    assert hh == h
    (r,) = records
    assert (r.offset_delta, r.timestamp_delta, r.headers) == (0, 0, [])
    assert r.key == b"\x00\x00\x00\x00" and r.value == b"\x00\x00\x00\x00\x00\x05"
    assert parse_control_key(r.key) == ABORT and parse_end_txn_value(r.value) == 5


def test_marker_type_reads_the_first_key_at_the_batch_position() -> None:
    data = build_batch([Record(0, 0, b"k", b"v" * 100)], base_timestamp=5)
    buf = bytearray(data) + build_marker_batch(1, 0, True, 0, 5) + build_marker_batch(1, 0, False, 0, 5)
    headers = validate_batches(buf)
    assert [marker_type(buf, h) for h in headers[1:]] == [COMMIT, ABORT]
    assert marker_type(memoryview(bytes(buf)), headers[2]) == ABORT


def test_read_marker_gives_type_and_coordinator_epoch_from_the_first_record() -> None:
    data = build_batch([Record(0, 0, b"k", b"v" * 100)], base_timestamp=5)
    buf = bytearray(data) + build_marker_batch(1, 0, True, 9, 5) + build_marker_batch(1, 0, False, 300, 5)
    headers = validate_batches(buf)
    assert [read_marker(buf, h) for h in headers[1:]] == [(COMMIT, 9), (ABORT, 300)]
    no_value = build_batch([Record(0, 0, control_key(COMMIT), None)], is_control=True)
    assert read_marker(no_value, read_header(no_value))[1] == -1
    cut = build_batch([Record(0, 0, control_key(COMMIT), b"\x00\x00\x00")], is_control=True)
    assert read_marker(cut, read_header(cut))[1] == -1


def test_marker_type_other_types_compressed_and_unreadable() -> None:
    other = build_batch(
        [Record(0, 0, control_key(5), b"\x00\x00" * 10)], is_control=True, is_transactional=False
    )
    assert marker_type(other, read_header(other)) == 5
    gz = build_batch(
        [Record(0, 0, control_key(ABORT), end_txn_marker_value(1))],
        codec=codecs.GZIP,
        is_control=True,
        is_transactional=True,
    )
    assert marker_type(gz, read_header(gz)) == ABORT
    short_key = build_batch([Record(0, 0, b"\x00\x00", b"")], is_control=True)
    assert marker_type(short_key, read_header(short_key)) is None
    null_key = build_batch([Record(0, 0, None, b"")], is_control=True)
    assert marker_type(null_key, read_header(null_key)) is None
    negative_version = build_batch([Record(0, 0, struct.pack(">hh", -1, 0), b"")], is_control=True)
    assert marker_type(negative_version, read_header(negative_version)) is None
    batch = build_marker_batch(1, 0, True, 0, 0)
    h = read_header(batch)
    assert marker_type(batch[:-3], h) is None  # the batch is not whole in the buffer
    garbage = bytearray(batch)
    garbage[61:] = b"\xff" * 17  # a record length varint that never ends
    assert marker_type(garbage, h) is None


def test_parsers_reject_malformed_keys_and_values() -> None:
    assert parse_control_key(struct.pack(">hh", 3, COMMIT) + b"extra") == COMMIT  # newer versions: read on
    assert parse_end_txn_value(struct.pack(">hi", 1, 77)) == 77
    for bad in (None, b"", b"\x00\x00\x00"):
        with pytest.raises(ProtocolError):
            parse_control_key(bad)
    for bad in (None, b"\x00\x00\x00\x00\x00", struct.pack(">hi", -2, 0)):
        with pytest.raises(ProtocolError):
            parse_end_txn_value(bad)


def test_marker_fields_out_of_range_are_value_errors() -> None:
    with pytest.raises(ValueError):
        build_marker_batch(1, 0, True, 2**31, 0)
    with pytest.raises(ValueError):
        build_marker_batch(1, 2**15, True, 0, 0)


def test_marker_type_never_raises_on_damaged_batches() -> None:
    rng = random.Random(0)
    good = build_marker_batch(1, 0, False, 0, 0)
    h = read_header(good)
    for _ in range(2000):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(RECORD_BATCH_OVERHEAD, len(bad))] = rng.randrange(256)
        assert marker_type(bad, h) is None or isinstance(marker_type(bad, h), int)
        for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD, 7):
            compressed = dataclasses.replace(h, attributes=h.attributes | codec)
            assert marker_type(bad, compressed) is None or isinstance(marker_type(bad, compressed), int)
