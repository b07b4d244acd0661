"""The client's fast batch encoder and vectorized record-set decoder against protocol.records."""

from __future__ import annotations

import random
import struct

import pytest

from client.records import build_batch, decode_record_set, next_fetch_offset, restamp
from protocol import codecs
from protocol.errors import ProtocolError
from protocol.records import (
    LOG_APPEND_TIME,
    Record,
    decode_batch,
    patch_base_offset,
    set_log_append_time,
    validate_batches,
)
from protocol.records import build_batch as reference_build

TS = 1_700_000_000_000


def random_records(rng: random.Random, n: int, headers: bool = True) -> list[tuple]:
    out = []
    for _ in range(n):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 3, 40, 200]))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 100, 300, 20000]))
        hs = None
        if headers and rng.random() < 0.4:
            hs = [
                (f"h{j}é", None if rng.random() < 0.3 else rng.randbytes(j * 3))
                for j in range(rng.randint(0, 3))
            ]
        out.append((key, value, TS + rng.randint(-500, 100_000), hs))
    return out


def as_reference(records: list[tuple]) -> list[Record]:
    base = records[0][2]
    return [Record(i, ts - base, k, v, list(h or [])) for i, (k, v, ts, h) in enumerate(records)]


def at_offset(batch: bytes | bytearray, base_offset: int) -> bytes:
    buf = bytearray(batch)
    patch_base_offset(buf, 0, base_offset, 0)
    return bytes(buf)


@pytest.mark.parametrize("seed", range(6))
def test_fast_encoder_is_byte_identical_to_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    records = random_records(rng, rng.randint(1, 400))
    mine = build_batch(records, producer_id=42, producer_epoch=3, base_sequence=17)
    ref = reference_build(
        as_reference(records),
        base_timestamp=records[0][2],
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
    )
    assert bytes(mine) == ref
    validate_batches(mine)


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD])
def test_compressed_batches_decode_with_the_reference(codec: int) -> None:
    records = random_records(random.Random(codec), 300)
    header, decoded = decode_batch(build_batch(records, codec=codec))
    assert header.codec == codec and header.record_count == 300
    assert [(r.key, r.value, header.timestamp_of(r), tuple(r.headers)) for r in decoded] == [
        (k, v, ts, tuple(h or ())) for k, v, ts, h in records
    ]


def test_restamp_sets_producer_fields_and_keeps_the_crc_valid() -> None:
    buf = build_batch([(None, b"v", TS, None)] * 3, producer_id=1, producer_epoch=0, base_sequence=0)
    restamp(buf, 99, 2, 1234)
    (header,) = validate_batches(buf)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (99, 2, 1234)


@pytest.mark.parametrize("seed", range(4))
def test_decoder_matches_reference_over_many_batches_and_codecs(seed: int) -> None:
    rng = random.Random(100 + seed)
    parts, expected, offset = [], [], 1000
    for i in range(8):
        records = random_records(rng, rng.randint(1, 200), headers=i % 2 == 0)
        codec = rng.choice([codecs.NONE, codecs.NONE, codecs.GZIP, codecs.LZ4, codecs.ZSTD, codecs.SNAPPY])
        batch = at_offset(build_batch(records, codec=codec), offset)
        parts.append(batch)
        header, decoded = decode_batch(batch)
        expected += [
            (header.offset_of(r), header.timestamp_of(r), 0, r.key, r.value, tuple(r.headers))
            for r in decoded
        ]
        offset += len(records)
    got, nxt = decode_record_set(b"".join(parts), "t", 7, min_offset=1000)
    assert nxt == offset
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in got] == expected
    assert all(r.topic == "t" and r.partition == 7 for r in got)


def test_uniform_records_take_the_strided_path_and_match() -> None:
    # 10,000 equal records: record sizes change only where the offset-delta varint grows (64, 8192).
    records = [(None, b"x" * 100, TS + i // 50, None) for i in range(10_000)]
    got, nxt = decode_record_set(bytes(build_batch(records)), "t", 0)
    assert nxt == 10_000
    assert [r.offset for r in got] == list(range(10_000))
    assert [r.timestamp for r in got] == [TS + i // 50 for i in range(10_000)]
    assert all(r.value == b"x" * 100 and r.key is None and r.headers == () for r in got)


def test_min_offset_skips_the_start_of_a_batch_and_whole_batches() -> None:
    a = at_offset(build_batch([(b"k", b"a%d" % i, TS, None) for i in range(5)]), 0)
    b = at_offset(build_batch([(b"k", b"b%d" % i, TS, None) for i in range(5)]), 5)
    got, nxt = decode_record_set(a + b, "t", 0, min_offset=7)
    assert [r.offset for r in got] == [7, 8, 9] and nxt == 10
    got, nxt = decode_record_set(a + b, "t", 0, min_offset=3)
    assert [r.offset for r in got] == list(range(3, 10))


def test_partial_trailing_batch_is_ignored() -> None:
    a = at_offset(build_batch([(None, b"a", TS, None)] * 4), 10)
    b = at_offset(build_batch([(None, b"b", TS, None)] * 4), 14)
    got, nxt = decode_record_set(a + b[:-5], "t", 0, min_offset=10)
    assert [r.offset for r in got] == [10, 11, 12, 13] and nxt == 14
    assert next_fetch_offset(a + b[:-5], 10) == 14
    assert next_fetch_offset(b"", 3) == 3


def test_log_append_time_batches_report_the_broker_time() -> None:
    buf = bytearray(build_batch([(None, b"a", TS, None), (None, b"b", TS + 5, None)]))
    set_log_append_time(buf, 0, TS + 99_999)
    plain = at_offset(build_batch([(None, b"c", TS, None)]), 2)
    got, _ = decode_record_set(bytes(buf) + plain, "t", 0)
    assert [(r.timestamp, r.timestamp_type) for r in got] == [
        (TS + 99_999, LOG_APPEND_TIME),
        (TS + 99_999, LOG_APPEND_TIME),
        (TS, 0),
    ]


def control_batch(offset: int, producer_id: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    batch = reference_build(
        [Record(0, 0, key, value)],
        base_timestamp=TS,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
    )
    return at_offset(batch, offset)


def txn_batch(offset: int, producer_id: int, values: list[bytes]) -> bytes:
    records = [Record(i, 0, None, v) for i, v in enumerate(values)]
    batch = reference_build(
        records,
        base_timestamp=TS,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    return at_offset(batch, offset)


def test_read_committed_skips_aborted_transactions_and_control_batches() -> None:
    log = (
        txn_batch(0, 1, [b"a1", b"a2"])  # producer 1: aborted
        + txn_batch(2, 2, [b"c1"])  # producer 2: committed
        + control_batch(3, 1, commit=False)
        + control_batch(4, 2, commit=True)
        + txn_batch(5, 1, [b"n1"])  # producer 1 again, a later (committed) transaction
        + control_batch(6, 1, commit=True)
    )
    committed, nxt = decode_record_set(log, "t", 0, read_committed=True, aborted=[(1, 0)])
    assert [(r.offset, r.value) for r in committed] == [(2, b"c1"), (5, b"n1")] and nxt == 7
    everything, _ = decode_record_set(log, "t", 0, read_committed=False, aborted=[(1, 0)])
    assert [r.value for r in everything] == [b"a1", b"a2", b"c1", b"n1"]  # control batches never show


def test_read_committed_across_fetches_and_repeated_aborts() -> None:
    """As Kafka's fetcher: an aborted transaction split over two fetches, a fetch that starts inside it,
    and one producer aborting twice in one response."""
    first = txn_batch(0, 1, [b"x1"]) + txn_batch(1, 2, [b"c1"])  # producer 1's abort marker not here yet
    got, nxt = decode_record_set(first, "t", 0, read_committed=True, aborted=[(1, 0)])
    assert [r.value for r in got] == [b"c1"] and nxt == 2
    second = (
        txn_batch(2, 1, [b"x2", b"x3"]) + control_batch(4, 1, commit=False) + control_batch(5, 2, commit=True)
    )
    got, nxt = decode_record_set(second, "t", 0, min_offset=3, read_committed=True, aborted=[(1, 0)])
    assert got == [] and nxt == 6  # started inside the aborted transaction: the broker still lists it
    twice = (
        txn_batch(0, 1, [b"x1"])
        + control_batch(1, 1, commit=False)
        + txn_batch(2, 1, [b"ok"])
        + control_batch(3, 1, commit=True)
        + txn_batch(4, 1, [b"x2"])
        + control_batch(5, 1, commit=False)
    )
    got, nxt = decode_record_set(twice, "t", 0, read_committed=True, aborted=[(1, 4), (1, 0)])
    assert [(r.offset, r.value) for r in got] == [(2, b"ok")] and nxt == 6


def test_control_batches_alone_advance_the_position() -> None:
    records, nxt = decode_record_set(control_batch(41, 9, commit=True), "t", 0, min_offset=41)
    assert records == [] and nxt == 42


def test_corruption_raises_protocol_error() -> None:
    good = bytearray(build_batch([(b"k", b"value", TS, None)] * 3))
    bad = bytearray(good)
    bad[-2] ^= 0xFF
    with pytest.raises(ProtocolError, match="CRC"):
        decode_record_set(bytes(bad), "t", 0)
    # With CRC checks off, a record length that overruns the payload is still caught.
    broken = bytearray(good)
    broken[61] = 0x7E  # first record claims 63 bytes
    with pytest.raises(ProtocolError):
        decode_record_set(bytes(broken), "t", 0, check_crcs=False)
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    with pytest.raises(ProtocolError, match="magic"):
        decode_record_set(bytes(wrong_magic), "t", 0)
