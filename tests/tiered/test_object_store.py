"""S3ObjectStore against a real S3 server (SeaweedFS): the contract, multipart, credentials, a dead or hung store."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest
import uvloop
from obstore.store import S3Store

from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.object_store import ObjectNotFound, ObjectStore, ObjectStoreError
from broker.tiered.rsm_config import make_object_store, parse_rsm_config
from broker.tiered.s3_store import S3ObjectStore
from tests.support.seaweed import SeaweedFS
from tests.tiered.contract import check_object_store_contract

pytestmark = [pytest.mark.tiered, pytest.mark.timeout(180)]


def s3_store(s3: SeaweedFS, **kw: object) -> S3ObjectStore:
    settings: dict[str, object] = {
        "endpoint_url": s3.endpoint,
        "region": s3.region,
        "access_key_id": s3.access_key,
        "secret_access_key": s3.secret_key,
        **kw,
    }
    return S3ObjectStore(s3.bucket, **settings)  # type: ignore[arg-type]


def raw_client(s3: SeaweedFS) -> S3Store:
    """obstore itself, to look at what our store cannot show (a multipart upload's ETag ends in -<parts>)."""
    return S3Store(
        s3.bucket,
        endpoint=s3.endpoint,
        region=s3.region,
        access_key_id=s3.access_key,
        secret_access_key=s3.secret_key,
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )


@pytest.fixture
def store(seaweed: SeaweedFS) -> Iterator[S3ObjectStore]:
    s = s3_store(seaweed)
    yield s
    s.close()


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:12]}/"


async def test_contract_on_seaweedfs(store: S3ObjectStore, prefix: str, tmp_path: Path) -> None:
    assert isinstance(store, ObjectStore)
    await check_object_store_contract(store, prefix, tmp_path)


async def test_contract_on_the_memory_twin(tmp_path: Path) -> None:
    """The same checks, so that the memory store cannot drift from what S3 does."""
    await check_object_store_contract(MemoryObjectStore(), "test/", tmp_path)


async def test_large_file_goes_up_in_parts(seaweed: SeaweedFS, prefix: str, tmp_path: Path) -> None:
    mib = 1024 * 1024
    size = 12 * mib + 12345
    data = os.urandom(size)
    path = tmp_path / "big.log"
    path.write_bytes(data)
    for part_size in (8 * mib, 5 * mib):  # two parts, then three; the last one short
        store = s3_store(seaweed, part_size=part_size)
        assert await store.put_file(f"{prefix}big", path) == size
        around = (part_size - 100, part_size + 100)
        assert await store.get_range(f"{prefix}big", *around) == data[around[0] : around[1]]
        assert await store.get_range(f"{prefix}big", size - 10, size + 10) == data[-10:]
        assert await store.get(f"{prefix}big") == data
        parts = -(-size // part_size)
        assert (await obstore.head_async(raw_client(seaweed), f"{prefix}big"))["e_tag"].endswith(f'-{parts}"')
        await store.delete(f"{prefix}big")
        store.close()


async def test_missing_local_file_is_a_local_error(store: S3ObjectStore, prefix: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await store.put_file(f"{prefix}x", tmp_path / "absent")


async def test_wrong_credentials_are_a_store_error(seaweed: SeaweedFS, prefix: str) -> None:
    good = s3_store(seaweed)
    await good.put(f"{prefix}k", b"v")
    bad = s3_store(seaweed, secret_access_key="not-the-secret")
    unknown = s3_store(seaweed, access_key_id="nobody", secret_access_key="nothing")
    for s in (bad, unknown):
        for call in (
            s.put(f"{prefix}k", b"w"),
            s.get(f"{prefix}k"),
            s.get_range(f"{prefix}k", 0, 1),
            s.list(prefix),
        ):
            with pytest.raises(ObjectStoreError) as info:
                await call
            assert not isinstance(info.value, ObjectNotFound)
            assert "\n" not in str(info.value)
    assert await good.get(f"{prefix}k") == b"v"
    await good.delete(f"{prefix}k")


async def test_rsm_properties_reach_the_store(seaweed: SeaweedFS, prefix: str) -> None:
    store = make_object_store(parse_rsm_config(seaweed.rsm_properties(), env={}))
    await store.put(f"{prefix}via-rsm", b"ok")
    assert await store.list(prefix) == [f"{prefix}via-rsm"]
    await store.delete(f"{prefix}via-rsm")
    store.close()
    with pytest.raises(ObjectStoreError):
        await store.get(f"{prefix}via-rsm")


def test_works_on_uvloop(seaweed: SeaweedFS, prefix: str) -> None:
    """The broker runs on uvloop: obstore's futures must resolve there too."""

    async def main() -> bytes:
        store = s3_store(seaweed)
        await store.put(f"{prefix}uv", b"on uvloop")
        data = await store.get(f"{prefix}uv")
        await store.delete(f"{prefix}uv")
        return data

    assert uvloop.run(main()) == b"on uvloop"


async def _fails_within(call: object, seconds: float) -> float:
    started = time.monotonic()
    with pytest.raises(ObjectStoreError) as info:
        await asyncio.wait_for(call, seconds * 3)  # type: ignore[arg-type]
    elapsed = time.monotonic() - started
    assert not isinstance(info.value, ObjectNotFound)
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return elapsed


async def test_a_hung_store_fails_within_the_timeout(seaweed: SeaweedFS, prefix: str) -> None:
    store = s3_store(seaweed, request_timeout_s=1.0, max_retries=2)
    await store.put(f"{prefix}k", b"v")
    seaweed.pause()  # the kernel still accepts connections; nothing answers
    try:
        for call in (store.get(f"{prefix}k"), store.put(f"{prefix}k2", b"v"), store.list(prefix)):
            await _fails_within(call, 6.0)  # about 2 x request_timeout_s, plus slack for a busy machine
    finally:
        seaweed.resume()
    deadline = time.monotonic() + 30
    while True:  # back to answering once resumed
        try:
            assert await store.get(f"{prefix}k") == b"v"
            break
        except ObjectStoreError:
            assert time.monotonic() < deadline, "SeaweedFS did not answer again after SIGCONT"
            await asyncio.sleep(0.5)
    await store.delete(f"{prefix}k")


async def test_a_killed_store_fails_fast_and_comes_back(seaweed: SeaweedFS, prefix: str) -> None:
    store = s3_store(seaweed, request_timeout_s=2.0)
    await store.put(f"{prefix}survivor", b"kept on disk")
    seaweed.kill()
    try:
        for call in (
            store.get(f"{prefix}survivor"),
            store.get_range(f"{prefix}survivor", 0, 4),
            store.put(f"{prefix}new", b"x"),
            store.delete(f"{prefix}survivor"),
            store.list(prefix),
        ):
            await _fails_within(call, 5.0)  # connection refused: retried with backoff, then given up
    finally:
        await asyncio.to_thread(seaweed.restart)
    assert await store.get(f"{prefix}survivor") == b"kept on disk"
    await store.delete(f"{prefix}survivor")
