"""The ObjectStore contract as one check, run against every implementation (memory here, SeaweedFS in tests/tiered)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.tiered.object_store import ObjectNotFound, ObjectStore


async def check_object_store_contract(store: ObjectStore, prefix: str, tmp_path: Path) -> None:
    """Every rule of `broker.tiered.object_store`'s docstring, on keys under ``prefix`` (removed afterwards)."""
    p = prefix
    data = bytes(range(256)) * 40  # 10240 bytes

    # put (bytes and memoryview), get, overwrite
    await store.put(f"{p}obj", data)
    assert await store.get(f"{p}obj") == data
    await store.put(f"{p}view", memoryview(bytearray(b"from a view")))
    assert await store.get(f"{p}view") == b"from a view"
    await store.put(f"{p}view", b"replaced")
    assert await store.get(f"{p}view") == b"replaced"

    # get_range: slice semantics
    assert await store.get_range(f"{p}obj", 100, 300) == data[100:300]
    assert await store.get_range(f"{p}obj", 10_000, 20_000) == data[10_000:]
    assert await store.get_range(f"{p}obj", len(data), len(data) + 5) == b""
    assert await store.get_range(f"{p}obj", len(data) + 100, len(data) + 200) == b""
    assert await store.get_range(f"{p}obj", 7, 7) == b""
    for start, end in ((5, 4), (-1, 3)):
        with pytest.raises(ValueError):
            await store.get_range(f"{p}obj", start, end)
    await store.put(f"{p}empty", b"")
    assert await store.get(f"{p}empty") == b""
    assert await store.get_range(f"{p}empty", 0, 10) == b""

    # missing keys
    with pytest.raises(ObjectNotFound):
        await store.get(f"{p}missing")
    with pytest.raises(ObjectNotFound):
        await store.get_range(f"{p}missing", 0, 10)

    # put_file
    local = tmp_path / "small.bin"
    local.write_bytes(data[:5000])
    assert await store.put_file(f"{p}file", local) == 5000
    assert await store.get(f"{p}file") == data[:5000]

    # list: string prefixes, sorted
    for key in ("t/1/a", "t/1/b", "t/10/c", "t/2/d"):
        await store.put(f"{p}{key}", key.encode())
    assert await store.list(f"{p}t/1/") == [f"{p}t/1/a", f"{p}t/1/b"]
    assert await store.list(f"{p}t/1") == [f"{p}t/1/a", f"{p}t/1/b", f"{p}t/10/c"]
    assert await store.list(f"{p}t/") == [f"{p}{k}" for k in ("t/1/a", "t/1/b", "t/10/c", "t/2/d")]
    assert await store.list(f"{p}t/1/a") == [f"{p}t/1/a"]
    assert await store.list(f"{p}nothing/") == []
    everything = await store.list(p)
    assert everything == sorted(everything) and f"{p}obj" in everything and len(everything) == 8

    # delete: idempotent
    await store.delete(f"{p}obj")
    await store.delete(f"{p}obj")
    await store.delete(f"{p}never-there")
    with pytest.raises(ObjectNotFound):
        await store.get(f"{p}obj")
    assert f"{p}obj" not in await store.list(p)

    # bad keys never reach the store
    for bad in ("", "/lead", "a//b", "trail/", "a/../b", "./a"):
        with pytest.raises(ValueError):
            await store.put(bad, b"x")

    for key in await store.list(p):
        await store.delete(key)
    assert await store.list(p) == []
