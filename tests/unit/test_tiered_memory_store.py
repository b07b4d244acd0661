"""MemoryObjectStore: the ObjectStore contract (the same checks run against SeaweedFS in tests/tiered) and its faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.tiered.memory_store import MemoryObjectStore
from broker.tiered.object_store import ObjectNotFound, ObjectStore, ObjectStoreError
from tests.tiered.contract import check_object_store_contract


def test_is_an_object_store() -> None:
    assert isinstance(MemoryObjectStore(), ObjectStore)


async def test_contract(tmp_path: Path) -> None:
    await check_object_store_contract(MemoryObjectStore(), "contract/", tmp_path)


async def test_put_copies_the_buffer() -> None:
    store = MemoryObjectStore()
    buf = bytearray(b"abc")
    await store.put("k", memoryview(buf))
    buf[0] = ord("z")
    assert await store.get("k") == b"abc"


async def test_fail_next_fails_only_the_named_op_count_times() -> None:
    store = MemoryObjectStore()
    store.fail_next("put", 2)
    for _ in range(2):
        with pytest.raises(ObjectStoreError):
            await store.put("k", b"v")
    assert "k" not in store.objects  # a failed call does nothing
    await store.put("k", b"v")
    store.fail_next("*")
    with pytest.raises(ObjectStoreError):
        await store.list("")
    assert await store.list("") == ["k"]
    assert store.calls["put"] == 3 and store.calls["list"] == 2
    store.fail_next("get", 1, after=2)
    assert [await store.get("k"), await store.get("k")] == [b"v", b"v"]
    with pytest.raises(ObjectStoreError):
        await store.get("k")
    assert await store.get("k") == b"v"
    with pytest.raises(ValueError):
        store.fail_next("head")


async def test_offline_fails_everything_until_back() -> None:
    store = MemoryObjectStore()
    await store.put("k", b"v")
    store.offline = True
    for call in (
        store.get("k"),
        store.get_range("k", 0, 1),
        store.delete("k"),
        store.list(""),
        store.put("j", b""),
    ):
        with pytest.raises(ObjectStoreError) as info:
            await call
        assert not isinstance(info.value, ObjectNotFound)
    store.offline = False
    assert await store.get("k") == b"v"


async def test_closed_store_refuses_calls() -> None:
    store = MemoryObjectStore()
    store.close()
    with pytest.raises(ObjectStoreError):
        await store.put("k", b"v")
