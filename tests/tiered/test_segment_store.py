"""RemoteSegmentStore on a real S3 server (SeaweedFS), with segments written by minikafka's own storage."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.tiered.object_store import ObjectNotFound, ObjectStoreError
from broker.tiered.s3_store import S3ObjectStore
from broker.tiered.segment_store import (
    IndexType,
    RemoteResourceNotFound,
    RemoteSegmentRef,
    RemoteSegmentStore,
    kafka_uuid,
)
from protocol.records import validate_batches
from tests.support.seaweed import SeaweedFS
from tests.tiered.segment_files import WrittenLog, write_log

pytestmark = [pytest.mark.tiered, pytest.mark.timeout(180)]

TOPIC = "tiered-topic"
KEY = re.compile(
    r"^(?P<prefix>.*/)(?P<topic>[^/]+)-(?P<tid>[A-Za-z0-9_-]{22})/(?P<p>\d+)/(?P<off>\d{20})-(?P<sid>[A-Za-z0-9_-]{22})\.(?P<suffix>log|indexes|rsm-manifest)$"
)


@pytest.fixture
def s3(seaweed: SeaweedFS) -> Iterator[S3ObjectStore]:
    store = S3ObjectStore(
        seaweed.bucket,
        endpoint_url=seaweed.endpoint,
        access_key_id=seaweed.access_key,
        secret_access_key=seaweed.secret_key,
    )
    yield store
    store.close()


@pytest.fixture
def written(tmp_path: Path) -> Iterator[WrittenLog]:
    w = write_log(tmp_path)
    yield w
    w.log.close()


def _prefix() -> str:
    return f"cluster-{uuid.uuid4().hex[:8]}/"


async def test_copy_fetch_and_delete_real_segments(s3: S3ObjectStore, written: WrittenLog) -> None:
    store = RemoteSegmentStore(s3, _prefix())
    topic_id = uuid.uuid4()
    refs = []
    for index in range(3):  # the first has a transaction index; the second spans two leader epochs
        files, base, end = written.files(index)
        ref = RemoteSegmentRef(TOPIC, topic_id, 3, uuid.uuid4(), base)
        refs.append(ref)
        uploaded = await store.copy(ref, files)
        log_bytes = files.log.read_bytes()
        assert uploaded > len(log_bytes)

        # a reader that has never seen the segment: everything comes from the bucket
        reader = RemoteSegmentStore(s3, store.key_prefix)
        assert await reader.fetch(ref, 0) == log_bytes
        headers = validate_batches(await reader.fetch(ref, 0))  # CRCs intact
        assert (headers[0].base_offset, headers[-1].last_offset + 1) == (base, end)
        middle = headers[len(headers) // 2]
        batch = await reader.fetch(ref, middle.position, middle.position + middle.size)
        assert validate_batches(batch)[0].base_offset == middle.base_offset
        assert await reader.fetch(ref, len(log_bytes) - 7, len(log_bytes) + 1000) == log_bytes[-7:]
        assert await reader.fetch(ref, len(log_bytes)) == b""

        assert await reader.fetch_index(ref, IndexType.OFFSET) == files.offset_index.read_bytes()
        assert await reader.fetch_index(ref, IndexType.TIMESTAMP) == files.time_index.read_bytes()
        assert await reader.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT) == written.producer_snapshot
        epochs = await reader.fetch_index(ref, IndexType.LEADER_EPOCH)
        assert epochs == files.leader_epochs and epochs.startswith(b"0\n")
        if index == 0:
            assert await reader.fetch_index(ref, IndexType.TRANSACTION) == files.txn_index.read_bytes()
            assert len(files.txn_index.read_bytes()) == 34
        else:
            with pytest.raises(RemoteResourceNotFound):
                await reader.fetch_index(ref, IndexType.TRANSACTION)
    assert b"1 200" in (await store.fetch_index(refs[1], IndexType.LEADER_EPOCH))

    # the bucket holds exactly the three objects of each segment, named as Aiven names them
    listed = await s3.list(store.partition_prefix(TOPIC, topic_id, 3))
    assert listed == sorted(k for r in refs for k in store.object_keys(r))
    for key in listed:
        m = KEY.match(key)
        assert m is not None, key
        assert m["prefix"] == store.key_prefix and m["topic"] == TOPIC and m["tid"] == kafka_uuid(topic_id)
        assert m["p"] == "3" and int(m["off"]) in {r.start_offset for r in refs}
        assert store.parse_key(key) is not None
    manifest = json.loads(await s3.get(store.object_keys(refs[0])[2]))
    assert manifest["remoteLogSegment"]["segmentId"] == kafka_uuid(refs[0].segment_id)

    # copying again under the same id overwrites; delete is idempotent
    files, _, _ = written.files(0)
    await store.copy(refs[0], files)
    assert await s3.list(store.partition_prefix(TOPIC, topic_id, 3)) == listed
    for ref in refs:
        await store.delete(ref)
        await store.delete(ref)
    assert await s3.list(store.key_prefix) == []
    with pytest.raises(ObjectNotFound):
        await RemoteSegmentStore(s3, store.key_prefix).fetch(refs[0], 0)


class _FailingManifest:
    """The real store, except that manifest uploads fail (after the .log and .indexes went up)."""

    def __init__(self, inner: S3ObjectStore) -> None:
        self.inner = inner
        self.uploaded: list[str] = []

    async def put(self, key: str, data: bytes | memoryview) -> None:
        if key.endswith(".rsm-manifest"):
            raise ObjectStoreError("injected: the store went away before the manifest")
        await self.inner.put(key, data)
        self.uploaded.append(key)

    async def put_file(self, key: str, path: Path) -> int:
        n = await self.inner.put_file(key, path)
        self.uploaded.append(key)
        return n

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_a_failed_upload_leaves_no_objects(s3: S3ObjectStore, written: WrittenLog) -> None:
    failing = _FailingManifest(s3)
    store = RemoteSegmentStore(failing, _prefix())  # type: ignore[arg-type]
    files, base, _ = written.files(0)
    ref = RemoteSegmentRef(TOPIC, uuid.uuid4(), 0, uuid.uuid4(), base)
    with pytest.raises(ObjectStoreError):
        await store.copy(ref, files)
    assert failing.uploaded == store.object_keys(ref)[:2]  # the .log and .indexes did reach the bucket
    assert await s3.list(store.key_prefix) == []


async def test_copy_to_a_dead_store_is_a_store_error(seaweed: SeaweedFS, written: WrittenLog) -> None:
    store = RemoteSegmentStore(
        S3ObjectStore(
            seaweed.bucket,
            endpoint_url=seaweed.endpoint,
            access_key_id=seaweed.access_key,
            secret_access_key=seaweed.secret_key,
            request_timeout_s=2.0,
        ),
        _prefix(),
    )
    files, base, _ = written.files(0)
    ref = RemoteSegmentRef(TOPIC, uuid.uuid4(), 0, uuid.uuid4(), base)
    seaweed.kill()
    try:
        started = time.monotonic()
        with pytest.raises(ObjectStoreError):
            await store.copy(ref, files)  # the upload and the three cleanup deletes each fail fast
        with pytest.raises(ObjectStoreError):
            await store.fetch(ref, 0)
        assert time.monotonic() - started < 15
    finally:
        await asyncio.to_thread(seaweed.restart)
    await store.copy(ref, files)  # and once it is back, the same copy goes through
    assert await store.fetch(ref, 0) == files.log.read_bytes()
    await store.delete(ref)
