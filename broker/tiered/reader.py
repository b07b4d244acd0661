"""Reading records below the local log start from the object store (Kafka's RemoteLogReader).

`RemoteReader.read(segment, offset, max_bytes, min_one)` returns whole record
batches of one remote segment, from the batch holding ``offset``: as many as
fit in ``max_bytes``, at least one when ``min_one`` (even if larger), ``b""``
when that first batch is larger and not ``min_one``, and None when the segment
has no batch at or after ``offset``. The caller finds the segment
(`RemoteLogMetadataCache.segment_for`) and goes on to the next one only on
None (as Kafka's RemoteLogManager.read: a batch that does not fit is never
skipped).

How: the segment's offset index (fetched once per segment, kept in a small
LRU) gives the byte position of the last indexed batch at or below ``offset``;
the `.log` object is read in aligned chunks of ``chunk_bytes`` through an LRU
chunk cache of ``cache_bytes``, and the chunk after the last one used is
fetched in the background (read-ahead), so a consumer reading a remote segment
from start to end waits for about one object-store round trip per chunk at
most once. No per-record work: batch headers are walked, records are not
decoded.

Failures of the object store raise `ObjectStoreError` (the fetch handler
answers it with a retriable error code); a missing object (deleted by
retention meanwhile) raises `ObjectNotFound`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

import numpy as np

from broker.tiered.metadata_records import SegmentMetadata
from broker.tiered.segment_store import (
    IndexType,
    RemoteResourceNotFound,
    RemoteSegmentRef,
    RemoteSegmentStore,
)
from protocol.errors import ProtocolError
from protocol.records import RECORD_BATCH_OVERHEAD, decode_batch, read_header
from storage.txn_index import AbortedTxn, iter_entries

log = logging.getLogger("minikafka.tiered")

CHUNK_BYTES = 4 << 20
CACHE_BYTES = 64 << 20
READ_AHEAD = 4  # chunks fetched ahead of a sequential reader
INDEX_SLACK = 64 << 10  # more than index.interval.bytes: the bytes before ``offset`` in a read
INDEX_ENTRIES_KEPT = 64  # segments whose offset index is kept

_OFFSET_ENTRY = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_TIME_ENTRY = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])


def segment_ref(md: SegmentMetadata) -> RemoteSegmentRef:
    tip = md.tip
    return RemoteSegmentRef(tip.topic, tip.topic_id, tip.partition, md.segment_id, md.start_offset)


class RemoteReader:
    def __init__(
        self, segments: RemoteSegmentStore, *, chunk_bytes: int = CHUNK_BYTES, cache_bytes: int = CACHE_BYTES
    ) -> None:
        self.segments = segments
        self.chunk_bytes = chunk_bytes
        self.max_chunks = max(2, cache_bytes // chunk_bytes)
        self._chunks: OrderedDict[tuple[object, int], asyncio.Future[bytes | memoryview]] = OrderedDict()
        self._indexes: OrderedDict[object, np.ndarray] = OrderedDict()
        self._txns: OrderedDict[object, list[AbortedTxn]] = OrderedDict()
        self.bytes_read = 0  # from the object store, for metrics

    async def read(
        self, md: SegmentMetadata, offset: int, max_bytes: int, min_one: bool
    ) -> bytes | memoryview | None:
        """The segment's whole batches from the one holding ``offset`` (the module docstring): ``b""`` when
        the first such batch is larger than ``max_bytes`` and not ``min_one`` (nothing this time; the
        caller must not move past it), None when the segment has no batch at or after ``offset``."""
        ref = segment_ref(md)
        size = md.size_in_bytes
        base = await self._position_of(ref, md, offset)
        while base + RECORD_BATCH_OVERHEAD <= size:
            # a window from ``base``: the few batches before ``offset`` (the offset index is sparse) plus
            # max_bytes; when batches before ``offset`` fill it, the next window starts after them
            window = memoryview(await self._range(ref, size, base, max(max_bytes, 1) + INDEX_SLACK))
            pos = 0
            first = last = -1  # window positions of the batches returned
            while pos + RECORD_BATCH_OVERHEAD <= len(window):
                h = read_header(window, pos)
                end = pos + h.size
                if h.last_offset >= offset:
                    if first < 0:
                        if h.size > max_bytes and not min_one:
                            return b""
                        first = pos
                    elif end - first > max_bytes:
                        break
                    if end > len(window):  # a batch larger than the window
                        if last >= 0:
                            break
                        return await self._range(ref, size, base + pos, h.size)
                    last = end
                    if end - first >= max_bytes:
                        break
                pos = end
            if first >= 0:
                return window[first:last]
            base += pos
        return None

    async def offset_for_timestamp(
        self, md: SegmentMetadata, timestamp: int, min_offset: int
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the segment's first record at or after ``min_offset`` whose timestamp
        is >= ``timestamp``, as a local segment answers ListOffsets: the time index narrows the
        search, the first batch whose maxTimestamp reaches it is decoded. None if there is none."""
        if md.max_timestamp_ms < timestamp:
            return None
        ref = segment_ref(md)
        data = await self.segments.fetch_index(ref, IndexType.TIMESTAMP)
        times = np.frombuffer(data[: len(data) - len(data) % _TIME_ENTRY.itemsize], dtype=_TIME_ENTRY)
        i = int(np.searchsorted(times["timestamp"], timestamp, side="right")) - 1
        from_offset = md.start_offset + int(times["relative_offset"][i]) if i >= 0 else md.start_offset
        position = await self._position_of(ref, md, max(from_offset, min_offset))
        size = md.size_in_bytes
        while position + RECORD_BATCH_OVERHEAD <= size:
            h = read_header(await self._range(ref, size, position, RECORD_BATCH_OVERHEAD))
            if h.last_offset >= min_offset and h.max_timestamp >= timestamp:
                batch = bytes(await self._range(ref, size, position, h.size))
                try:
                    header, records = decode_batch(batch)
                except ProtocolError:
                    return max(h.base_offset, min_offset), h.max_timestamp
                for record in records:
                    offset, ts = header.offset_of(record), header.timestamp_of(record)
                    if offset >= min_offset and ts >= timestamp:
                        return offset, ts
            position += h.size
        return None

    async def aborted(self, md: SegmentMetadata, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions of the segment overlapping [fetch_offset, upper_bound)."""
        ref = segment_ref(md)
        txns = self._txns.get(md.segment_id)
        if txns is None:
            try:
                data = await self.segments.fetch_index(ref, IndexType.TRANSACTION)
            except RemoteResourceNotFound:  # the segment had no aborted transaction
                data = b""
            txns = [txn for _, txn in iter_entries(data)]
            self._txns[md.segment_id] = txns
            while len(self._txns) > INDEX_ENTRIES_KEPT:
                self._txns.popitem(last=False)
        return [t for t in txns if t.last_offset >= fetch_offset and t.first_offset < upper_bound]

    async def _position_of(self, ref: RemoteSegmentRef, md: SegmentMetadata, offset: int) -> int:
        entries = self._indexes.get(md.segment_id)
        if entries is None:
            data = await self.segments.fetch_index(ref, IndexType.OFFSET)
            usable = len(data) - len(data) % _OFFSET_ENTRY.itemsize
            entries = np.frombuffer(data[:usable], dtype=_OFFSET_ENTRY)
            self._indexes[md.segment_id] = entries
            while len(self._indexes) > INDEX_ENTRIES_KEPT:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(md.segment_id)
        if not len(entries):
            return 0
        i = int(np.searchsorted(entries["relative_offset"], offset - md.start_offset, side="right")) - 1
        return int(entries["position"][i]) if i >= 0 else 0

    async def _range(self, ref: RemoteSegmentRef, size: int, start: int, length: int) -> bytes | memoryview:
        """``length`` bytes of the segment's `.log` from ``start`` (clipped at its end), via the chunk cache
        (a view when they lie in one chunk); the `READ_AHEAD` chunks after the last one read are
        fetched in the background."""
        end = min(start + length, size)
        parts: list[memoryview] = []
        at = start
        while at < end:
            index = at // self.chunk_bytes
            chunk = await asyncio.shield(self._chunk(ref, size, index))
            offset = at - index * self.chunk_bytes
            piece = memoryview(chunk)[offset : offset + (end - at)]
            if not piece:
                break
            parts.append(piece)
            at += len(piece)
        last = (end - 1) // self.chunk_bytes
        for ahead in range(last + 1, last + 1 + READ_AHEAD):
            self._read_ahead(ref, size, ahead)
        if len(parts) == 1:
            return parts[0]
        return b"".join(parts)

    def _chunk(self, ref: RemoteSegmentRef, size: int, index: int) -> asyncio.Future[bytes | memoryview]:
        key = (ref.segment_id, index)
        fut = self._chunks.get(key)
        if fut is not None:
            self._chunks.move_to_end(key)
            if fut.done() and (fut.cancelled() or fut.exception() is not None):
                del self._chunks[key]  # a failed read is tried again, not cached
            else:
                return fut
        start = index * self.chunk_bytes
        end = min(start + self.chunk_bytes, size)
        fut = asyncio.ensure_future(self._fetch(ref, start, end))
        fut.add_done_callback(_consume)
        self._chunks[key] = fut
        while len(self._chunks) > self.max_chunks:
            self._chunks.popitem(last=False)
        return fut

    async def _fetch(self, ref: RemoteSegmentRef, start: int, end: int) -> bytes | memoryview:
        data = await self.segments.fetch(ref, start, end)
        self.bytes_read += len(data)
        return data

    def _read_ahead(self, ref: RemoteSegmentRef, size: int, index: int) -> None:
        if index * self.chunk_bytes < size and (ref.segment_id, index) not in self._chunks:
            self._chunk(ref, size, index)

    def forget(self, segment_id: object) -> None:
        """Drop what is cached of a deleted segment."""
        self._indexes.pop(segment_id, None)
        self._txns.pop(segment_id, None)
        for key in [k for k in self._chunks if k[0] == segment_id]:
            del self._chunks[key]


def _consume(fut: asyncio.Future[bytes | memoryview]) -> None:
    """Retrieve a background read's exception so asyncio does not log it as never retrieved."""
    with contextlib.suppress(asyncio.CancelledError, Exception):
        fut.exception()
