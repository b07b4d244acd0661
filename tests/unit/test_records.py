"""RecordBatch v2: golden vector, validation, recovery scan, broker-side patching, kafka-python interop."""

from __future__ import annotations

import contextlib
import struct
import types
import warnings

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from protocol.errors import CorruptRecordError, ProtocolError
from protocol.records import (
    CONTROL_BIT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    Record,
    build_batch,
    crc32c,
    decode_batch,
    patch_base_offset,
    read_header,
    scan_valid_prefix,
    set_log_append_time,
    validate_batches,
)
from protocol.varint import encode_varint, encode_varlong
from tests.data import VECTORS

with warnings.catch_warnings():
    # kafka-python 3.0 calls the deprecated importlib.resources.read_text at import time.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

ALL_CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
VECTOR_PATH = VECTORS / "record_batch.hex"
GOLDEN = bytes.fromhex(
    "".join(line.strip() for line in VECTOR_PATH.read_text().splitlines() if not line.startswith("#"))
)
GOLDEN_RECORD = Record(0, 0, b"key", b"value", [("h", b"v")])
GOLDEN_TIMESTAMP = 1_700_000_000_000
_HEADER = struct.Struct(">qiibIhiqqqhii")


def golden() -> bytearray:
    return bytearray(GOLDEN)


def make_batch(payload: bytes, record_count: int, *, attributes: int = 0) -> bytes:
    """A batch around an arbitrary payload, packed independently of `build_batch`, with a valid CRC."""
    out = bytearray(RECORD_BATCH_OVERHEAD) + payload
    _HEADER.pack_into(
        out,
        0,
        0,
        len(out) - 12,
        -1,
        2,
        0,
        attributes,
        max(record_count - 1, 0),
        5,
        5,
        -1,
        -1,
        -1,
        record_count,
    )
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def raw_record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def fix_crc(batch: bytearray, pos: int = 0) -> None:
    (length,) = struct.unpack_from(">i", batch, pos + 8)
    struct.pack_into(">I", batch, pos + 17, crc32c(bytes(batch[pos + 21 : pos + 12 + length])))


@pytest.fixture
def kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python needs python-snappy, which is not installed: give it raw blocks from cramjam."""
    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
    )
    monkeypatch.setattr(kafka.codec, "snappy", shim)


# ---------------------------------------------------------------- golden vector


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(memoryview(b"xx123456789")[2:]) == 0xE3069283


def test_golden_vector_decodes() -> None:
    header, records = decode_batch(GOLDEN)
    assert len(GOLDEN) == 80
    assert header == BatchHeader(
        position=0,
        base_offset=0,
        batch_length=68,
        partition_leader_epoch=0,
        magic=2,
        crc=0x83794A1D,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=GOLDEN_TIMESTAMP,
        max_timestamp=GOLDEN_TIMESTAMP,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        record_count=1,
    )
    assert records == [GOLDEN_RECORD]
    assert header.offset_of(records[0]) == 0
    assert header.timestamp_of(records[0]) == GOLDEN_TIMESTAMP
    assert header.size == 80 and header.end == 80 and header.last_offset == 0 and header.next_offset == 1
    assert header.codec == 0 and header.timestamp_type == 0
    assert not header.is_control and not header.is_transactional
    assert header.last_sequence == -1


def test_golden_vector_reencodes_byte_for_byte() -> None:
    # The vector (written by kafka-python) carries partitionLeaderEpoch 0; Java clients send -1.
    built = build_batch([GOLDEN_RECORD], base_timestamp=GOLDEN_TIMESTAMP, partition_leader_epoch=0)
    assert built == GOLDEN


def test_golden_vector_validates() -> None:
    (header,) = validate_batches(GOLDEN)
    assert header.crc == 0x83794A1D
    assert read_header(GOLDEN) == header


# ---------------------------------------------------------------- headers


def test_read_header_errors() -> None:
    with pytest.raises(ProtocolError):
        read_header(GOLDEN[:60])
    with pytest.raises(ProtocolError):
        read_header(GOLDEN, 20)
    bad = golden()
    bad[16] = 1
    with pytest.raises(ProtocolError, match="magic"):
        read_header(bad)


def test_read_header_at_position() -> None:
    buf = b"\xee" * 7 + GOLDEN
    header = read_header(buf, 7)
    assert header.position == 7 and header.end == 87


def test_header_flags_and_last_sequence_wrap() -> None:
    built = build_batch(
        [Record(i, i, None, b"v") for i in range(6)],
        base_timestamp=0,
        producer_id=42,
        producer_epoch=3,
        base_sequence=(1 << 31) - 2,
        is_transactional=True,
        codec=LZ4,
    )
    (header,) = validate_batches(built)
    assert header.is_transactional and not header.is_control
    assert header.codec == LZ4
    assert (header.producer_id, header.producer_epoch) == (42, 3)
    assert header.last_offset_delta == 5 and header.max_timestamp == 5
    # Sequences run 2^31-2, 2^31-1, 0, 1, 2, 3 as in Kafka.
    assert header.last_sequence == 3
    plain = validate_batches(build_batch([Record(i, 0, None, None) for i in range(4)], base_sequence=10))
    assert plain[0].last_sequence == 13


def test_control_and_log_append_time_flags() -> None:
    built = build_batch(
        [Record(0, 0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")],
        base_timestamp=9,
        is_control=True,
        timestamp_type=LOG_APPEND_TIME,
    )
    (header,) = validate_batches(built)
    assert header.is_control and header.attributes & CONTROL_BIT
    assert header.timestamp_type == LOG_APPEND_TIME


def test_build_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([GOLDEN_RECORD], codec=5)
    with pytest.raises(ValueError):
        build_batch([GOLDEN_RECORD], base_timestamp=1 << 63)


def test_build_defaults_base_timestamp_to_now() -> None:
    header, _ = decode_batch(build_batch([GOLDEN_RECORD]))
    assert header.base_timestamp > GOLDEN_TIMESTAMP
    assert header.partition_leader_epoch == -1


# ---------------------------------------------------------------- validation


def test_validate_walks_several_batches() -> None:
    second = build_batch([Record(i, 0, None, b"x" * i) for i in range(3)], base_timestamp=1, codec=GZIP)
    buf = bytearray(GOLDEN + second + GOLDEN)
    headers = validate_batches(buf)
    assert [h.position for h in headers] == [0, 80, 80 + len(second)]
    assert [h.record_count for h in headers] == [1, 3, 1]
    assert headers[1].codec == GZIP
    buf.extend(b"resizable afterwards: no memoryview left behind")
    assert validate_batches(memoryview(GOLDEN + second)) == headers[:2]


def test_validate_rejects_empty() -> None:
    with pytest.raises(CorruptRecordError, match="empty"):
        validate_batches(b"")


@pytest.mark.parametrize("index", [21, 22, 30, 45, 60, 61, 70, 79])
def test_validate_rejects_a_flipped_bit_under_the_crc(index: int) -> None:
    bad = golden()
    bad[index] ^= 0x04
    with pytest.raises(CorruptRecordError):
        validate_batches(bad)
    with pytest.raises(ProtocolError):
        decode_batch(bad)


def test_validate_without_crc_check_ignores_the_crc() -> None:
    bad = golden()
    bad[75] ^= 0x01
    assert validate_batches(bad, check_crc=False)[0].record_count == 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_batches(bad)


def test_validate_rejects_a_flipped_crc_byte() -> None:
    bad = golden()
    bad[18] ^= 0x80
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_batches(bad)


@pytest.mark.parametrize("cut", [1, 20, 40, 79])
def test_validate_rejects_truncation(cut: int) -> None:
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_batches(GOLDEN[:cut])
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_batches(GOLDEN + GOLDEN[:cut])


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_validate_rejects_bad_magic(magic: int) -> None:
    bad = golden()
    struct.pack_into(">b", bad, 16, magic)
    with pytest.raises(CorruptRecordError, match="magic"):
        validate_batches(bad)
    with pytest.raises(CorruptRecordError, match="magic"):
        validate_batches(GOLDEN + bad)


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_validate_rejects_short_batch_length(length: int) -> None:
    bad = golden()
    struct.pack_into(">i", bad, 8, length)
    with pytest.raises(CorruptRecordError, match="length"):
        validate_batches(bad)


@pytest.mark.parametrize(("offset", "what"), [(57, "record count"), (23, "last offset delta")])
def test_validate_rejects_negative_counts(offset: int, what: str) -> None:
    bad = golden()
    struct.pack_into(">i", bad, offset, -1)
    fix_crc(bad)
    with pytest.raises(CorruptRecordError, match=what):
        validate_batches(bad)


def test_validate_accepts_a_minimal_empty_batch() -> None:
    # What Kafka's log cleaner leaves behind: a header and no records.
    assert validate_batches(make_batch(b"", 0))[0].size == RECORD_BATCH_OVERHEAD


# ---------------------------------------------------------------- crash recovery scan


def test_scan_all_valid() -> None:
    headers, length = scan_valid_prefix(GOLDEN * 3)
    assert length == 240 and len(headers) == 3


def test_scan_empty() -> None:
    assert scan_valid_prefix(b"") == ([], 0)


@pytest.mark.parametrize(
    "tail",
    [
        bytes(4096),  # preallocated / zero-filled
        b"\x00" * 5,
        GOLDEN[:50],  # partial header
        GOLDEN[:79],  # partial payload
        b"this is not a record batch at all, just some junk bytes" * 3,
        b"\xff" * 100,
    ],
)
def test_scan_stops_at_a_bad_tail(tail: bytes) -> None:
    headers, length = scan_valid_prefix(GOLDEN * 2 + tail)
    assert length == 160
    assert [h.position for h in headers] == [0, 80]


def test_scan_stops_at_a_crc_failure_even_if_later_batches_are_fine() -> None:
    bad = golden()
    bad[70] ^= 0x01
    headers, length = scan_valid_prefix(GOLDEN + bad + GOLDEN)
    assert (len(headers), length) == (1, 80)


# ---------------------------------------------------------------- broker-side patching


def test_patch_base_offset_keeps_the_crc_valid() -> None:
    buf = bytearray(GOLDEN * 2)
    patch_base_offset(buf, 80, 1_234_567_890_123, 7)
    first, second = validate_batches(buf)
    assert first.base_offset == 0 and first.partition_leader_epoch == 0
    assert (second.base_offset, second.partition_leader_epoch) == (1_234_567_890_123, 7)
    assert second.crc == first.crc
    assert buf[80 + 16 :] == GOLDEN[16:]
    theirs = DefaultRecordBatch(bytes(buf[80:]))
    assert theirs.validate_crc()
    assert theirs.base_offset == 1_234_567_890_123
    assert [r.offset for r in theirs] == [1_234_567_890_123]


def test_patch_base_offset_through_a_memoryview() -> None:
    buf = bytearray(GOLDEN)
    with memoryview(buf) as view:
        patch_base_offset(view, 0, 99, -1)
    assert read_header(buf).base_offset == 99 and read_header(buf).partition_leader_epoch == -1


@pytest.mark.parametrize("codec", [NONE, ZSTD])
def test_set_log_append_time(codec: int) -> None:
    batch = build_batch(
        [Record(0, 0, b"a", b"1"), Record(1, 25, b"b", b"2")], base_timestamp=1000, codec=codec
    )
    buf = bytearray(GOLDEN + batch)
    set_log_append_time(buf, 80, 5_000)
    first, second = validate_batches(buf)
    assert first.timestamp_type == 0
    assert second.timestamp_type == LOG_APPEND_TIME and second.attributes & TIMESTAMP_TYPE_BIT
    assert (second.base_timestamp, second.max_timestamp, second.codec) == (1000, 5_000, codec)
    assert buf[80 + 61 :] == batch[61:], "records untouched"
    header, records = decode_batch(buf, 80)
    assert [header.timestamp_of(r) for r in records] == [5_000, 5_000]
    assert [r.timestamp_delta for r in records] == [0, 25]
    theirs = DefaultRecordBatch(bytes(buf[80:]))
    assert theirs.validate_crc()
    assert theirs.timestamp_type == 1


def test_set_log_append_time_needs_a_whole_batch() -> None:
    with pytest.raises(ProtocolError):
        set_log_append_time(bytearray(GOLDEN[:70]), 0, 1)


# ---------------------------------------------------------------- decoding malformed records


def test_decode_requires_the_whole_batch_in_the_buffer() -> None:
    with pytest.raises(ProtocolError):
        decode_batch(GOLDEN[:79])


def test_decode_can_skip_the_crc_check() -> None:
    bad = golden()
    bad[17] ^= 0xFF
    assert decode_batch(bad, check_crc=False)[1] == [GOLDEN_RECORD]


GOOD_BODY = b"\x00" + encode_varlong(0) + encode_varint(0) + b"\x01\x01\x00"  # null key, null value


@pytest.mark.parametrize(
    ("payload", "count", "match"),
    [
        (raw_record(GOOD_BODY), 2, "record count"),
        (raw_record(GOOD_BODY) * 2, 1, "left after"),
        (raw_record(GOOD_BODY) + b"\x00", 1, "left after"),
        (raw_record(GOOD_BODY)[:-1], 1, "record"),
        (raw_record(GOOD_BODY + b"\x00"), 1, "declares"),
        (raw_record(b"\x00\x00\x00\x03\x01\x00"), 1, "key length"),  # key length -2
        (raw_record(b"\x00\x00\x00\x01\x0a" + b"abc" + b"\x00"), 1, "value length"),
        (raw_record(b"\x00\x00\x00\x01\x01\x01"), 1, "header count"),  # -1 headers
        (raw_record(b"\x00\x00\x00\x01\x01\x7e"), 1, "header count"),  # 63 headers in 0 bytes
        (raw_record(b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"), 1, "UTF-8"),
        (raw_record(b"\x00\x00\x00\x01\x01\x02\x01\x01"), 1, "header key length"),
        (encode_varint(-5) + GOOD_BODY, 1, "record length"),
        (encode_varint(1000) + GOOD_BODY, 1, "record length"),
        (b"\xff" * 20, 1, "long"),
    ],
)
def test_decode_rejects_malformed_records(payload: bytes, count: int, match: str) -> None:
    batch = make_batch(payload, count)
    assert validate_batches(batch), "the batch frame itself is fine"
    with pytest.raises(ProtocolError, match=match):
        decode_batch(batch)


def test_decode_accepts_hand_built_records() -> None:
    assert decode_batch(make_batch(raw_record(GOOD_BODY), 1))[1] == [Record(0, 0, None, None)]
    key = "é".encode()
    body = b"\x00\x00\x00\x01\x01\x02" + encode_varint(len(key)) + key + b"\x01"
    assert decode_batch(make_batch(raw_record(body), 1))[1] == [Record(0, 0, None, None, [("é", None)])]
    cut_utf8 = b"\x00\x00\x00\x01\x01\x02" + encode_varint(1) + key[:1] + b"\x01"
    with pytest.raises(ProtocolError, match="UTF-8"):
        decode_batch(make_batch(raw_record(cut_utf8), 1))


def test_decode_rejects_an_unknown_codec_and_a_corrupt_stream() -> None:
    with pytest.raises(ProtocolError, match="codec"):
        decode_batch(make_batch(b"\x00" * 10, 1, attributes=5))
    with pytest.raises(ProtocolError, match="gzip"):
        decode_batch(make_batch(b"\x1f\x8b garbage", 1, attributes=GZIP))


def test_decode_bounds_decompressed_size() -> None:
    batch = build_batch([Record(0, 0, None, bytes(100_000))], base_timestamp=0, codec=ZSTD)
    assert len(batch) < 1000
    with pytest.raises(ProtocolError, match="exceeds"):
        decode_batch(batch, max_decompressed=50_000)
    assert decode_batch(batch, max_decompressed=200_000)[1][0].value == bytes(100_000)


# ---------------------------------------------------------------- round trips and kafka-python interop


def sample_records() -> list[Record]:
    return [
        Record(0, 0, b"key-0", b"value " * 40, [("trace", b"abc"), ("empty", b""), ("null", None)]),
        Record(1, 5, None, b"value " * 40),
        Record(2, -3, b"", None),
        Record(3, 1 << 33, "ünïcödé".encode(), b"\x00" * 300, [("ключ", b"\xff\xfe")]),
    ]


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_roundtrip_every_codec(codec: int) -> None:
    records = sample_records()
    built = build_batch(records, base_offset=100, base_timestamp=GOLDEN_TIMESTAMP, codec=codec)
    (checked,) = validate_batches(built)
    header, decoded = decode_batch(built)
    assert header == checked
    assert header.codec == codec
    assert decoded == records
    assert header.last_offset == 103 and header.max_timestamp == GOLDEN_TIMESTAMP + (1 << 33)


@pytest.mark.usefixtures("kafka_python_snappy")
@pytest.mark.parametrize("codec", ALL_CODECS)
def test_kafka_python_builds_we_decode(codec: int) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    records = sample_records()
    for record in records:
        builder.append(
            record.offset_delta,
            GOLDEN_TIMESTAMP + record.timestamp_delta,
            record.key,
            record.value,
            record.headers,
        )
    buf = bytes(builder.build())
    (checked,) = validate_batches(buf)
    header, decoded = decode_batch(buf)
    assert header == checked
    assert header.codec == codec, "payload compressible enough that kafka-python kept the codec"
    # kafka-python takes the first record's timestamp as the base.
    assert header.base_timestamp == GOLDEN_TIMESTAMP
    assert decoded == records


@pytest.mark.usefixtures("kafka_python_snappy")
@pytest.mark.parametrize("codec", ALL_CODECS)
def test_we_build_kafka_python_decodes(codec: int) -> None:
    records = sample_records()
    built = build_batch(
        records,
        base_offset=500,
        base_timestamp=GOLDEN_TIMESTAMP,
        codec=codec,
        producer_id=77,
        producer_epoch=2,
        base_sequence=40,
    )
    theirs = DefaultRecordBatch(built)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (77, 2, 40)
    assert theirs.last_offset_delta == 3 and theirs.records_count == 4
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == [
        (500 + r.offset_delta, GOLDEN_TIMESTAMP + r.timestamp_delta, r.key, r.value, r.headers)
        for r in records
    ]


# ---------------------------------------------------------------- property tests

header_lists = st.lists(
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)),
    max_size=3,
)
record_fields = st.tuples(
    st.none() | st.binary(max_size=32),
    st.none() | st.binary(max_size=64),
    header_lists,
    st.integers(-(1 << 40), 1 << 40),
)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(record_fields, min_size=1, max_size=12),
    st.sampled_from(ALL_CODECS),
    st.integers(0, 1 << 45),
    st.integers(0, (1 << 62)),
)
def test_random_records_roundtrip(
    fields: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    codec: int,
    base_timestamp: int,
    base_offset: int,
) -> None:
    records = [Record(i, ts, key, value, headers) for i, (key, value, headers, ts) in enumerate(fields)]
    built = build_batch(records, base_offset=base_offset, base_timestamp=base_timestamp, codec=codec)
    (checked,) = validate_batches(built)
    assert scan_valid_prefix(built) == ([checked], len(built))
    header, decoded = decode_batch(built)
    assert header == checked and decoded == records
    assert header.last_offset == base_offset + len(records) - 1
    assert header.max_timestamp == base_timestamp + max(r.timestamp_delta for r in records)


def _only_expected_errors(buf: bytes) -> None:
    try:
        headers = validate_batches(buf)
    except CorruptRecordError:
        headers = None
    prefix, length = scan_valid_prefix(buf)
    assert 0 <= length <= len(buf)
    if headers is not None:
        assert (prefix, length) == (headers, len(buf))
    with contextlib.suppress(ProtocolError):
        decode_batch(buf, check_crc=False)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_expected_errors(raw: bytes) -> None:
    _only_expected_errors(raw)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(ALL_CODECS),
    st.integers(-3, 20),
    st.binary(max_size=150),
)
def test_random_payloads_behind_a_valid_header_only_raise_expected_errors(
    codec: int, count: int, payload: bytes
) -> None:
    _only_expected_errors(make_batch(payload, count, attributes=codec))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ALL_CODECS), st.data())
def test_mutated_batches_only_raise_expected_errors(codec: int, data: st.DataObject) -> None:
    buf = bytearray(build_batch(sample_records()[:2], base_timestamp=0, codec=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(buf) - 1))
        buf[index] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del buf[data.draw(st.integers(0, len(buf))) :]
    _only_expected_errors(bytes(buf))


def test_overhead_constants() -> None:
    assert (RECORD_BATCH_OVERHEAD, LOG_OVERHEAD) == (61, 12)
