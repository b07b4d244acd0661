"""Compression codecs: round trips, interop with kafka-python's codec module, bomb guard, bad input."""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
import types
import warnings

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import codecs
from protocol.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress
from protocol.errors import ProtocolError

with warnings.catch_warnings():
    # kafka-python 3.0 calls the deprecated importlib.resources.read_text at import time.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec

ALL = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
COMPRESSED = [GZIP, SNAPPY, LZ4, ZSTD]
LIMIT = 1 << 24

PAYLOADS = {
    "empty": b"",
    "one byte": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 50,
    "random": os.urandom(70_000),
    "zeros over several xerial blocks": bytes(100_000),
}


@pytest.fixture
def kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python needs python-snappy, which is not installed: give it raw blocks from cramjam."""
    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
    )
    monkeypatch.setattr(kafka.codec, "snappy", shim)


THEIR_ENCODE = {
    GZIP: lambda d: kafka.codec.gzip_encode(d),
    SNAPPY: lambda d: kafka.codec.snappy_encode(d),
    LZ4: lambda d: kafka.codec.lz4_encode(d),
    ZSTD: lambda d: kafka.codec.zstd_encode(d),
}
THEIR_DECODE = {
    GZIP: lambda d: kafka.codec.gzip_decode(d),
    SNAPPY: lambda d: kafka.codec.snappy_decode(d),
    LZ4: lambda d: kafka.codec.lz4_decode(d),
    ZSTD: lambda d: kafka.codec.zstd_decode(d),
}


@pytest.mark.parametrize("codec", ALL)
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_roundtrip(codec: int, name: str) -> None:
    data = PAYLOADS[name]
    packed = compress(codec, data)
    assert decompress(codec, packed, LIMIT) == data
    assert decompress(codec, memoryview(bytearray(packed)), len(data)) == data


@pytest.mark.usefixtures("kafka_python_snappy")
@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("name", ["one byte", "text", "random", "zeros over several xerial blocks"])
def test_interop_with_kafka_python(codec: int, name: str) -> None:
    data = PAYLOADS[name]
    assert decompress(codec, THEIR_ENCODE[codec](data), LIMIT) == data
    assert THEIR_DECODE[codec](compress(codec, data)) == data


def test_snappy_writes_xerial_framing_with_32k_blocks() -> None:
    packed = compress(SNAPPY, bytes(70_000))
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, sizes = 16, []
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        sizes.append(cramjam.snappy.decompress_raw_len(packed[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    assert sizes == [32768, 32768, 70_000 - 65536]


def test_snappy_reads_hand_built_xerial_frame() -> None:
    blocks = [b"hello " * 100, b"", b"world" * 7]
    # Version/compat written little-endian, as some producers do: they must be ignored.
    frame = bytearray(b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1))
    for block in blocks:
        raw = bytes(cramjam.snappy.compress_raw(block))
        frame += struct.pack(">i", len(raw)) + raw
    assert decompress(SNAPPY, bytes(frame), LIMIT) == b"".join(blocks)


def test_snappy_reads_a_raw_block() -> None:
    data = b"raw snappy, no framing " * 10
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(data)), LIMIT) == data


def test_lz4_frames_have_independent_blocks() -> None:
    frame = compress(LZ4, PAYLOADS["text"])
    assert frame[:4] == b"\x04\x22\x4d\x18"
    assert frame[4] & 0x20, "FLG block-independence bit"


def test_lz4_reads_linked_blocks_too() -> None:
    data = PAYLOADS["text"] * 100
    assert decompress(LZ4, lz4.frame.compress(data, block_linked=True), LIMIT) == data


def test_zstd_without_content_size_and_across_frames() -> None:
    data = PAYLOADS["text"]
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.get_frame_parameters(no_size).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, no_size, LIMIT) == data
    streamed = zstandard.ZstdCompressor().compressobj()
    framed = streamed.compress(data) + streamed.flush()
    assert decompress(ZSTD, framed + no_size, LIMIT) == data + data


def test_gzip_reads_concatenated_members() -> None:
    assert decompress(GZIP, gzip.compress(b"one ") + gzip.compress(b"two"), LIMIT) == b"one two"


@pytest.mark.parametrize("codec", ALL)
def test_output_exactly_at_the_limit_is_fine(codec: int) -> None:
    data = bytes(50_000)
    assert decompress(codec, compress(codec, data), len(data)) == data


@pytest.mark.parametrize("codec", ALL)
def test_bomb_guard(codec: int) -> None:
    packed = compress(codec, bytes(1 << 20))
    with pytest.raises(ProtocolError, match="exceeds"):
        decompress(codec, packed, (1 << 20) - 1)


def test_zstd_bomb_without_content_size() -> None:
    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(8 << 20))
    with pytest.raises(ProtocolError, match="exceeds"):
        decompress(ZSTD, bomb, 1000)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_input_raises(codec: int) -> None:
    packed = compress(codec, PAYLOADS["random"][:5000])
    with pytest.raises(ProtocolError):
        decompress(codec, packed[:-7], LIMIT)


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("garbage", [b"garbage!" * 3, b"\x82SNAPPY\x00" + bytes(8) + b"\x7f\xff\xff\xff"])
def test_garbage_raises(codec: int, garbage: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(codec, garbage, LIMIT)


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec_raises(codec: int) -> None:
    with pytest.raises(ProtocolError, match="unknown"):
        compress(codec, b"x")
    with pytest.raises(ProtocolError, match="unknown"):
        decompress(codec, b"x", LIMIT)


def test_codec_names_cover_every_kafka_codec() -> None:
    assert sorted(codecs.CODEC_NAMES) == ALL


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ALL), st.binary(max_size=200))
def test_random_input_only_raises_protocol_error(codec: int, raw: bytes) -> None:
    try:
        out = decompress(codec, raw, 4096)
    except ProtocolError:
        return
    assert len(out) <= 4096


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(COMPRESSED), st.binary(min_size=1, max_size=2000), st.data())
def test_mutated_streams_only_raise_protocol_error(codec: int, data: bytes, draw: st.DataObject) -> None:
    packed = bytearray(compress(codec, data))
    index = draw.draw(st.integers(0, len(packed) - 1))
    packed[index] ^= draw.draw(st.integers(1, 255))
    with contextlib.suppress(ProtocolError):
        decompress(codec, bytes(packed), 1 << 16)
