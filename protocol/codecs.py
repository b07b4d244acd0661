"""Kafka's record-batch compression codecs, by attribute id (bits 0-2).

| id | codec  | format on the wire                                                   |
|----|--------|----------------------------------------------------------------------|
| 0  | none   | the bytes as they are                                                |
| 1  | gzip   | gzip members (RFC 1952); several members are concatenated            |
| 2  | snappy | xerial framing (below) as Java clients write it, or one raw block    |
| 3  | lz4    | one LZ4 frame with independent blocks (bytes after it are ignored)   |
| 4  | zstd   | one or more zstd frames; the content size may be absent              |

Xerial snappy framing: magic ``82 'SNAPPY' 00`` (8 bytes), version INT32 and
compat INT32 (both 1; ignored on read because some producers write them
little-endian), then repeated ``[INT32 BE length, raw snappy block]``. Each block
holds at most 32 KiB of input, as Java's SnappyOutputStream writes it.

Contract: `decompress` never returns more than ``max_size`` bytes and never
buffers much more than that (a decompression bomb raises instead), and every
failure, including an unknown codec id, raises `ProtocolError`.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from protocol.errors import ProtocolError

BytesLike = bytes | bytearray | memoryview

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")

# A zstd block expands to at most 128 KiB and takes at least 4 bytes (an RLE block), so
# feeding input in steps of (budget >> 15) bytes bounds each step's output by the budget.
_ZSTD_RATIO_SHIFT = 15
_ZSTD_MIN_STEP = 256


def compress(codec: int, data: BytesLike) -> bytes:
    """Compress ``data`` with Kafka codec ``codec``; raises `ProtocolError` for an unknown id."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        # mtime=0 keeps output deterministic; level 6 is what Java's GZIPOutputStream uses.
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        view = memoryview(data)
        out = bytearray(_XERIAL_HEADER)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK])
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == LZ4:
        # Kafka's Java reader does not support linked blocks.
        return lz4.frame.compress(data, block_linked=False)
    if codec == ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    raise ProtocolError(f"unknown compression codec {codec}")


def decompress(codec: int, data: BytesLike, max_size: int) -> bytes:
    """Decompress ``data``; output over ``max_size`` bytes or any codec failure raises `ProtocolError`."""
    if codec == NONE:
        if len(data) > max_size:
            raise ProtocolError(f"uncompressed payload exceeds {max_size} bytes")
        return bytes(data)
    try:
        if codec == GZIP:
            out = _gunzip(data, max_size)
        elif codec == SNAPPY:
            out = _unsnappy(data, max_size)
        elif codec == LZ4:
            out = _unlz4(data, max_size)
        elif codec == ZSTD:
            out = _unzstd(data, max_size)
        else:
            raise ProtocolError(f"unknown compression codec {codec}")
    except ProtocolError:
        raise
    except Exception as exc:  # the four libraries raise unrelated types; all mean "corrupt input"
        raise ProtocolError(f"{CODEC_NAMES[codec]} decompression failed: {exc}") from exc
    if len(out) > max_size:
        raise ProtocolError(f"{CODEC_NAMES[codec]} output exceeds {max_size} bytes")
    return out


def _gunzip(data: BytesLike, max_size: int) -> bytes:
    out = bytearray()
    rest: BytesLike = data
    while True:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        # max_length is >= 1 here (0 would mean unlimited): out never exceeds max_size in the loop.
        out += d.decompress(rest, max_size + 1 - len(out))
        if len(out) > max_size:
            raise ProtocolError(f"gzip output exceeds {max_size} bytes")
        if not d.eof:
            raise ProtocolError("gzip: truncated stream")
        rest = d.unused_data
        if not rest:
            return bytes(out)


def _unsnappy(data: BytesLike, max_size: int) -> bytes:
    view = memoryview(data)
    if view[:8] != XERIAL_MAGIC:
        return _snappy_block(view, max_size)
    if len(view) < len(_XERIAL_HEADER):
        raise ProtocolError("snappy: truncated xerial header")
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(view):
        if len(view) - pos < 4:
            raise ProtocolError("snappy: truncated xerial block length")
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise ProtocolError(f"snappy: bad xerial block length {length}")
        out += _snappy_block(view[pos : pos + length], max_size - len(out))
        pos += length
    return bytes(out)


def _snappy_block(block: memoryview, budget: int) -> bytes:
    # A raw block starts with its uncompressed length, so the bomb check costs nothing.
    size = cramjam.snappy.decompress_raw_len(block)
    if size > budget:
        raise ProtocolError("snappy output exceeds the size limit")
    return bytes(cramjam.snappy.decompress_raw(block))


def _unlz4(data: BytesLike, max_size: int) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=max_size + 1)
    if len(out) > max_size:
        raise ProtocolError(f"lz4 output exceeds {max_size} bytes")
    if not d.eof:
        raise ProtocolError("lz4: truncated frame")
    return out


def _unzstd(data: BytesLike, max_size: int) -> bytes:
    # Streaming, because Java and librdkafka write frames without a content size; decompressobj
    # (not stream_reader) because only it reports a frame cut short (eof stays False).
    view = memoryview(data)
    dctx = zstandard.ZstdDecompressor()
    out = bytearray()
    pos = 0
    while pos < len(view):  # one frame per iteration
        obj = dctx.decompressobj()
        while not obj.eof:
            if pos >= len(view):
                raise ProtocolError("zstd: truncated frame")
            step = max(_ZSTD_MIN_STEP, (max_size - len(out)) >> _ZSTD_RATIO_SHIFT)
            out += obj.decompress(view[pos : pos + step])
            pos = min(pos + step, len(view))
            if len(out) > max_size:
                raise ProtocolError(f"zstd output exceeds {max_size} bytes")
        pos -= len(obj.unused_data)
    return bytes(out)
