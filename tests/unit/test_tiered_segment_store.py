"""RemoteSegmentStore on the memory store: layout, round trip, manifest cache, cleanup after failed copies."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from pathlib import Path

import pytest

from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.object_store import ObjectNotFound, ObjectStoreError
from broker.tiered.segment_store import (
    IndexType,
    RemoteResourceNotFound,
    RemoteSegmentRef,
    RemoteSegmentStore,
    kafka_uuid,
    meaningful_index_bytes,
    parse_kafka_uuid,
)
from tests.tiered.segment_files import write_log

TOPIC_ID = uuid.UUID("31627a14-74df-458c-baee-3cf065d7aa49")


def _ref(base: int, topic: str = "tiered-topic", partition: int = 0) -> RemoteSegmentRef:
    return RemoteSegmentRef(topic, TOPIC_ID, partition, uuid.uuid4(), base)


def test_kafka_uuid_strings() -> None:
    # The example key of Aiven's ObjectKeyFactory javadoc: topic id MWJ6FHTfRYy67jzwZdeqSQ.
    assert kafka_uuid(TOPIC_ID) == "MWJ6FHTfRYy67jzwZdeqSQ"
    # Kafka's Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID (new Uuid(0L, 1L))
    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert kafka_uuid(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert parse_kafka_uuid("MWJ6FHTfRYy67jzwZdeqSQ") == TOPIC_ID
    for _ in range(100):
        u = uuid.uuid4()
        assert len(kafka_uuid(u)) == 22 and parse_kafka_uuid(kafka_uuid(u)) == u
    for bad in ("", "MWJ6FHTfRYy67jzwZdeqS", "MWJ6FHTfRYy67jzwZdeqS!", "MWJ6FHTfRYy67jzwZdeqSQ=="):
        with pytest.raises(ValueError):
            parse_kafka_uuid(bad)


def test_keys_follow_the_aiven_layout() -> None:
    store = RemoteSegmentStore(MemoryObjectStore(), "someprefix/")
    segment_id = parse_kafka_uuid("tqimKeZwStOEOwRzT3L5oQ")
    ref = RemoteSegmentRef("topic", TOPIC_ID, 7, segment_id, 1234)
    stem = "someprefix/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-tqimKeZwStOEOwRzT3L5oQ"
    assert store.object_keys(ref) == [f"{stem}.log", f"{stem}.indexes", f"{stem}.rsm-manifest"]
    assert store.partition_prefix("topic", TOPIC_ID, 7) == "someprefix/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/"
    dashed = RemoteSegmentRef("my-dashed-topic", TOPIC_ID, 12, uuid.uuid4(), 5)
    for r in (ref, dashed):
        assert [store.parse_key(k) for k in store.object_keys(r)] == [
            (r, "log"),
            (r, "indexes"),
            (r, "rsm-manifest"),
        ]
    for other in (
        "elsewhere/topic-MWJ6FHTfRYy67jzwZdeqSQ/7/x.log",
        f"{stem}.txt",
        "someprefix/a/b",
        f"{stem}",
    ):
        assert store.parse_key(other) is None


def test_meaningful_index_bytes() -> None:
    entry = b"\x00\x00\x00\x05\x00\x00\x01\x00"
    assert meaningful_index_bytes(entry * 3 + bytes(8 * 100), 8) == entry * 3
    assert meaningful_index_bytes(entry + b"\x01\x02", 8) == entry  # a torn last entry
    assert meaningful_index_bytes(bytes(8 * 10), 8) == b""
    assert meaningful_index_bytes(b"", 12) == b""


async def test_round_trip_of_a_closed_segment(tmp_path: Path) -> None:
    written = write_log(tmp_path)
    files, base, _ = written.files(0)
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory, "pre/")
    ref = _ref(base)
    uploaded = await store.copy(ref, files)
    assert sorted(memory.objects) == sorted(store.object_keys(ref))
    assert uploaded == sum(len(v) for v in memory.objects.values())
    log_bytes = files.log.read_bytes()
    assert memory.objects[store.object_keys(ref)[0]] == log_bytes
    assert await store.fetch(ref, 0) == log_bytes
    assert await store.fetch(ref, 100, 2000) == log_bytes[100:2000]
    assert await store.fetch(ref, len(log_bytes) - 10) == log_bytes[-10:]
    assert await store.fetch(ref, len(log_bytes)) == b""
    assert await store.fetch_index(ref, IndexType.OFFSET) == files.offset_index.read_bytes()
    assert await store.fetch_index(ref, IndexType.TIMESTAMP) == files.time_index.read_bytes()
    assert await store.fetch_index(ref, IndexType.TRANSACTION) == files.txn_index.read_bytes()
    assert await store.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT) == written.producer_snapshot
    assert await store.fetch_index(ref, IndexType.LEADER_EPOCH) == files.leader_epochs
    manifest = json.loads(memory.objects[store.object_keys(ref)[2]])
    assert manifest["version"] == "1" and manifest["log"] == {"size": len(log_bytes)}
    assert list(manifest["segmentIndexes"]) == [
        "offset",
        "timestamp",
        "producerSnapshot",
        "leaderEpoch",
        "transaction",
    ]
    written.log.close()


async def test_absent_transaction_index_and_manifest_cache(tmp_path: Path) -> None:
    written = write_log(tmp_path)
    files, base, _ = written.files(1)
    assert not files.txn_index.exists()
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory)
    ref = _ref(base)
    await store.copy(ref, files)
    with pytest.raises(RemoteResourceNotFound):
        await store.fetch_index(ref, IndexType.TRANSACTION)
    # a fresh store reads the manifest once for any number of index fetches
    reader = RemoteSegmentStore(memory)
    for kind in (IndexType.OFFSET, IndexType.TIMESTAMP, IndexType.LEADER_EPOCH, IndexType.OFFSET):
        await reader.fetch_index(ref, kind)
    await reader.fetch(ref, 0)
    assert memory.calls["get"] == 1
    written.log.close()


async def test_active_segment_indexes_are_cut_to_their_entries(tmp_path: Path) -> None:
    written = write_log(tmp_path, batches=30, roll=False)
    files, base, _ = written.files(-1)
    assert files.offset_index.stat().st_size == 10 * 1024 * 1024  # preallocated while active
    store = RemoteSegmentStore(MemoryObjectStore())
    ref = _ref(base)
    await store.copy(ref, files)
    segment = written.log.segments[-1]
    assert await store.fetch_index(ref, IndexType.OFFSET) == segment.offset_index.entries().tobytes()
    assert await store.fetch_index(ref, IndexType.TIMESTAMP) == segment.time_index.entries().tobytes()
    written.log.close()


@pytest.mark.parametrize(("op", "nth"), [("put_file", 1), ("put", 1), ("put", 2)])
async def test_a_failed_copy_leaves_nothing(tmp_path: Path, op: str, nth: int) -> None:
    written = write_log(tmp_path, batches=60)
    files, base, _ = written.files(0)
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory, "pre/")
    ref = _ref(base)
    await store.copy(ref, files)  # an earlier complete copy under the same id goes too
    memory.fail_next(op, after=nth - 1)  # put_file: the .log; put: the .indexes, then the manifest
    with pytest.raises(ObjectStoreError):
        await store.copy(ref, files)
    assert memory.objects == {}
    with pytest.raises(ObjectNotFound):
        await store.fetch_index(ref, IndexType.OFFSET)
    written.log.close()


async def test_a_vanished_local_file_is_an_os_error_and_leaves_nothing(tmp_path: Path) -> None:
    written = write_log(tmp_path, batches=60)
    files, base, _ = written.files(0)
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory)
    gone = tmp_path / "gone.index"
    with pytest.raises(FileNotFoundError):
        await store.copy(_ref(base), dataclasses.replace(files, offset_index=gone))
    assert memory.objects == {}
    written.log.close()


@pytest.mark.parametrize(
    "manifest",
    [b"not json", b"[]", b'{"version": "2"}', b'{"version": "1", "log": {"size": -1}, "segmentIndexes": {}}'],
)
async def test_a_foreign_manifest_is_a_store_error(manifest: bytes) -> None:
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory)
    ref = _ref(0)
    await memory.put(store.object_keys(ref)[2], manifest)
    with pytest.raises(ObjectStoreError) as info:
        await store.fetch_index(ref, IndexType.OFFSET)
    assert not isinstance(info.value, ObjectNotFound)


async def test_delete_is_idempotent(tmp_path: Path) -> None:
    written = write_log(tmp_path, batches=60)
    files, base, _ = written.files(0)
    memory = MemoryObjectStore()
    store = RemoteSegmentStore(memory)
    ref = _ref(base)
    await store.copy(ref, files)
    await store.fetch_index(ref, IndexType.OFFSET)  # cached manifest
    await store.delete(ref)
    await store.delete(ref)
    assert memory.objects == {}
    with pytest.raises(ObjectNotFound):
        await store.fetch_index(ref, IndexType.OFFSET)
    written.log.close()


class _StallingStore(MemoryObjectStore):
    """Uploads of ``.indexes`` wait until cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.stalled = asyncio.Event()

    async def put(self, key: str, data: bytes | memoryview) -> None:
        if key.endswith(".indexes"):
            self.stalled.set()
            await asyncio.Event().wait()
        await super().put(key, data)


async def test_a_cancelled_copy_leaves_nothing(tmp_path: Path) -> None:
    written = write_log(tmp_path, batches=60)
    files, base, _ = written.files(0)
    memory = _StallingStore()
    store = RemoteSegmentStore(memory)
    task = asyncio.create_task(store.copy(_ref(base), files))
    await memory.stalled.wait()
    assert len(memory.objects) == 1  # the .log is up
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert memory.objects == {}
    written.log.close()
