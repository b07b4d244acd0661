"""`RemoteSegmentStore`: one closed log segment as three objects, laid out as the Aiven plugin lays them out.

Keys (``prefix`` is ``rsm.config.key.prefix``, concatenated as is)::

    <prefix><topic>-<topicId>/<partition>/<startOffset:020d>-<segmentId>.log
                                                                ... .indexes
                                                                ... .rsm-manifest

``topicId`` and ``segmentId`` are Kafka ``Uuid`` strings: the 16 bytes in
URL-safe base64 without padding (22 characters), e.g.
``t-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log``.

Objects:

- ``.log``: the segment's ``.log`` file, byte for byte (no chunk transform, no
  compression, no encryption), so a byte position in the local file is the same
  position in the object.
- ``.indexes``: the segment's indexes back to back, in this order: offset index,
  time index, producer snapshot, leader-epoch checkpoint, transaction index
  (absent if the segment has none). The two mapped indexes are cut to their
  meaningful bytes: whole entries only, trailing all-zero entries dropped (an
  active segment's index is preallocated with zeros; a closed one is already
  trimmed, and an all-zero entry can only ever be the first one, which points
  at the segment start that a lookup falls back to anyway).
- ``.rsm-manifest``: UTF-8 JSON, written last, so its presence marks a complete
  upload::

      {"version": "1",
       "log": {"size": <bytes of the .log object>},
       "segmentIndexes": {"offset": {"position": p, "size": n}, "timestamp": {...},
                          "producerSnapshot": {...}, "leaderEpoch": {...},
                          "transaction": {...} or null},
       "remoteLogSegment": {"topic": ..., "topicId": ..., "partition": ..., "segmentId": ...,
                            "startOffset": ...}}

  ``segmentIndexes`` has the shape of Aiven's manifest (positions into
  ``.indexes``, empty index -> size 0); ``remoteLogSegment`` is written for
  people listing the bucket and never read back.

Copy uploads ``.log``, ``.indexes``, ``.rsm-manifest`` in that order and
overwrites whatever is there (a copy retried under the same segment id is
harmless). If any step fails (or the copy is cancelled) the three keys are
deleted, best effort, before the error goes up: `ObjectStoreError` for the
store, `OSError` for the local files. Manifests read back are kept in a small
LRU cache, so fetching the indexes of one segment costs one manifest GET.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import enum
import json
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.tiered.object_store import ObjectNotFound, ObjectStore, ObjectStoreError
from storage.index import OffsetIndex, TimeIndex

log = logging.getLogger(__name__)

MANIFEST_VERSION = "1"
LOG_SUFFIX = "log"
INDEXES_SUFFIX = "indexes"
MANIFEST_SUFFIX = "rsm-manifest"
SUFFIXES = (LOG_SUFFIX, INDEXES_SUFFIX, MANIFEST_SUFFIX)
MANIFEST_CACHE_SIZE = 1000
_UUID_CHARS = 22


class RemoteResourceNotFound(ObjectNotFound):
    """The segment's upload has no such index (Kafka's RemoteResourceNotFoundException): no transaction index."""


class IndexType(enum.Enum):
    """A segment's indexes, in their order inside ``.indexes``; values are the manifest's names."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    PRODUCER_SNAPSHOT = "producerSnapshot"
    LEADER_EPOCH = "leaderEpoch"
    TRANSACTION = "transaction"


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The inverse of `kafka_uuid`; `ValueError` for anything else."""
    if len(text) != _UUID_CHARS:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a Kafka Uuid: {text!r}") from exc


@dataclass(frozen=True, slots=True)
class RemoteSegmentRef:
    """What names a remote segment's objects (Kafka's RemoteLogSegmentId plus its start offset)."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    segment_id: uuid.UUID
    start_offset: int


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """Kafka's LogSegmentData: the local files of one closed segment, and its two in-memory indexes.

    ``producer_snapshot``: the producer snapshot file's bytes at the segment's end
    offset + 1; ``leader_epochs``: the leader-epoch checkpoint text of the entries
    below that offset, as Kafka writes it (``0\\n<count>\\n<epoch> <offset>\\n...``).
    ``txn_index`` None (or a missing file): the segment has no aborted transactions.
    """

    log: Path
    offset_index: Path
    time_index: Path
    txn_index: Path | None
    producer_snapshot: bytes
    leader_epochs: bytes


def meaningful_index_bytes(data: bytes, entry_size: int) -> bytes:
    """``data`` cut to whole entries, trailing all-zero entries dropped (see the module docstring)."""
    end = len(data) - len(data) % entry_size
    zero = bytes(entry_size)
    while end >= entry_size and data[end - entry_size : end] == zero:
        end -= entry_size
    return data[:end]


def _read_indexes(files: SegmentFiles) -> dict[IndexType, bytes | None]:
    """Every index's bytes (None: no transaction index); runs in a worker thread."""
    txn: bytes | None = None
    if files.txn_index is not None:
        with contextlib.suppress(FileNotFoundError):
            txn = files.txn_index.read_bytes()
    return {
        IndexType.OFFSET: meaningful_index_bytes(files.offset_index.read_bytes(), OffsetIndex.ENTRY_SIZE),
        IndexType.TIMESTAMP: meaningful_index_bytes(files.time_index.read_bytes(), TimeIndex.ENTRY_SIZE),
        IndexType.PRODUCER_SNAPSHOT: bytes(files.producer_snapshot),
        IndexType.LEADER_EPOCH: bytes(files.leader_epochs),
        IndexType.TRANSACTION: txn,
    }


def _parse_manifest(raw: bytes, key: str) -> dict[str, Any]:
    """The manifest in ``raw``, checked; `ObjectStoreError` if it is not one we wrote."""
    try:
        manifest = json.loads(raw)
        if manifest.get("version") != MANIFEST_VERSION:
            raise ValueError(f"version {manifest.get('version')!r}, not {MANIFEST_VERSION!r}")
        numbers = [manifest["log"]["size"]]
        for kind in IndexType:
            entry = manifest["segmentIndexes"][kind.value]
            if entry is not None:
                numbers += [entry["position"], entry["size"]]
        if not all(isinstance(n, int) and n >= 0 for n in numbers):
            raise ValueError("a size or position is not a non-negative integer")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ObjectStoreError(f"{key}: unreadable manifest ({exc})") from exc
    return manifest


class RemoteSegmentStore:
    """Copies, reads and deletes segments in ``store`` under ``key_prefix`` (the layout above)."""

    def __init__(
        self, store: ObjectStore, key_prefix: str = "", manifest_cache_size: int = MANIFEST_CACHE_SIZE
    ) -> None:
        self.store = store
        self.key_prefix = key_prefix
        self._manifests: OrderedDict[RemoteSegmentRef, dict[str, Any]] = OrderedDict()
        self._cache_size = manifest_cache_size

    # -- naming ----------------------------------------------------------------------------------

    def partition_prefix(self, topic: str, topic_id: uuid.UUID, partition: int) -> str:
        """``<prefix><topic>-<topicId>/<partition>/``: every object of the partition starts with it."""
        return f"{self.key_prefix}{topic}-{kafka_uuid(topic_id)}/{partition}/"

    def _key(self, ref: RemoteSegmentRef, suffix: str) -> str:
        base = self.partition_prefix(ref.topic, ref.topic_id, ref.partition)
        return f"{base}{ref.start_offset:020d}-{kafka_uuid(ref.segment_id)}.{suffix}"

    def object_keys(self, ref: RemoteSegmentRef) -> list[str]:
        """The keys of the segment's ``.log``, ``.indexes`` and ``.rsm-manifest``, in upload order."""
        return [self._key(ref, suffix) for suffix in SUFFIXES]

    def parse_key(self, key: str) -> tuple[RemoteSegmentRef, str] | None:
        """``(ref, suffix)`` for a key this layout made under our prefix, else None (to read listings)."""
        if not key.startswith(self.key_prefix):
            return None
        try:
            topic_dir, partition, name = key[len(self.key_prefix) :].split("/")
            stem, suffix = name.split(".", 1)
            offset, segment_id = stem.split("-", 1)
            topic, topic_id = topic_dir[: -_UUID_CHARS - 1], topic_dir[-_UUID_CHARS:]
            if topic_dir[-_UUID_CHARS - 1] != "-" or suffix not in SUFFIXES or len(offset) != 20:
                return None
            ref = RemoteSegmentRef(
                topic, parse_kafka_uuid(topic_id), int(partition), parse_kafka_uuid(segment_id), int(offset)
            )
        except (ValueError, IndexError):
            return None
        return ref, suffix

    # -- copy ------------------------------------------------------------------------------------

    async def copy(self, ref: RemoteSegmentRef, files: SegmentFiles) -> int:
        """Upload the segment (``.log``, ``.indexes``, manifest last); returns the bytes uploaded.

        On failure every object of ``ref`` is deleted (best effort) and the error re-raised:
        `ObjectStoreError` from the store, `OSError` from the local files.
        """
        log_key, indexes_key, manifest_key = self.object_keys(ref)
        self._manifests.pop(ref, None)
        try:
            indexes = await asyncio.to_thread(_read_indexes, files)
            log_size = await self.store.put_file(log_key, files.log)
            blob = bytearray()
            positions: dict[str, dict[str, int] | None] = {}
            for kind in IndexType:
                data = indexes[kind]
                positions[kind.value] = None if data is None else {"position": len(blob), "size": len(data)}
                blob += data or b""
            await self.store.put(indexes_key, blob)
            manifest = {
                "version": MANIFEST_VERSION,
                "log": {"size": log_size},
                "segmentIndexes": positions,
                "remoteLogSegment": {
                    "topic": ref.topic,
                    "topicId": kafka_uuid(ref.topic_id),
                    "partition": ref.partition,
                    "segmentId": kafka_uuid(ref.segment_id),
                    "startOffset": ref.start_offset,
                },
            }
            encoded = json.dumps(manifest, separators=(",", ":")).encode()
            await self.store.put(manifest_key, encoded)
        except BaseException as exc:
            log.warning("copy of %s failed (%r); deleting what was uploaded", log_key, exc)
            await self._delete_quietly(ref)
            raise
        self._remember(ref, manifest)
        return log_size + len(blob) + len(encoded)

    async def _delete_quietly(self, ref: RemoteSegmentRef) -> None:
        for key in self.object_keys(ref):
            try:
                await self.store.delete(key)
            except ObjectStoreError as exc:
                log.warning("could not delete %s after a failed copy: %s", key, exc)

    # -- read ------------------------------------------------------------------------------------

    async def manifest(self, ref: RemoteSegmentRef) -> dict[str, Any]:
        """The segment's manifest (cached); `ObjectNotFound` if the upload is absent or incomplete.

        A manifest that is not ours (bad JSON, another version) is an `ObjectStoreError`.
        """
        cached = self._manifests.get(ref)
        if cached is not None:
            self._manifests.move_to_end(ref)
            return cached
        key = self._key(ref, MANIFEST_SUFFIX)
        manifest = _parse_manifest(await self.store.get(key), key)
        self._remember(ref, manifest)
        return manifest

    def _remember(self, ref: RemoteSegmentRef, manifest: dict[str, Any]) -> None:
        self._manifests[ref] = manifest
        self._manifests.move_to_end(ref)
        while len(self._manifests) > self._cache_size:
            self._manifests.popitem(last=False)

    async def fetch(self, ref: RemoteSegmentRef, start: int, end: int | None = None) -> bytes | memoryview:
        """Bytes ``[start, end)`` of the segment's ``.log`` (``end`` None: to its end; clamped to its size).

        With ``end`` None the size comes from the manifest (one cached read).
        """
        if end is None:
            end = int((await self.manifest(ref))["log"]["size"])
            if start >= end:
                return b""
        return await self.store.get_range(self._key(ref, LOG_SUFFIX), start, end)

    async def fetch_index(self, ref: RemoteSegmentRef, kind: IndexType) -> bytes:
        """One index's bytes, as uploaded; `RemoteResourceNotFound` for an absent transaction index."""
        entry = (await self.manifest(ref))["segmentIndexes"][kind.value]
        if entry is None:
            raise RemoteResourceNotFound(f"{self._key(ref, INDEXES_SUFFIX)}: no {kind.value} index")
        position, size = int(entry["position"]), int(entry["size"])
        if size == 0:
            return b""
        data = await self.store.get_range(self._key(ref, INDEXES_SUFFIX), position, position + size)
        if len(data) != size:
            raise ObjectStoreError(f"{self._key(ref, INDEXES_SUFFIX)}: {kind.value} index cut short")
        return bytes(data)

    # -- delete ----------------------------------------------------------------------------------

    async def delete(self, ref: RemoteSegmentRef) -> None:
        """Delete the segment's objects, manifest first (the upload stops looking complete); idempotent."""
        self._manifests.pop(ref, None)
        for key in reversed(self.object_keys(ref)):
            await self.store.delete(key)
