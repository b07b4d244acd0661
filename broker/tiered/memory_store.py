"""`MemoryObjectStore`: the `ObjectStore` contract over a dict, with failures on demand.

For unit tests and the in-process testing kit. It keeps every rule of
`broker.tiered.object_store` (key checks, slice semantics of ``get_range``,
idempotent delete, string-prefix ``list``, errors after ``close``), and each
call yields to the event loop once, as a real store's would, so code that
forgets an ``await`` or assumes no interleaving fails here too.

Fault injection is public API, not monkeypatching:

- ``offline = True``: every call raises `ObjectStoreError` until it is set back
  (the store is down);
- ``fail_next(op, count, after=n)``: after ``n`` more calls of ``op`` succeed,
  the next ``count`` calls of it (``"put"``, ``"put_file"``, ``"get"``,
  ``"get_range"``, ``"delete"``, ``"list"``, or ``"*"`` for any) raise
  `ObjectStoreError` without doing anything. A new schedule for an op replaces
  the old one.

``put_file`` counts as ``"put_file"``, not ``"put"``. ``calls`` counts the calls
made per op (failed ones included).
"""

from __future__ import annotations

import asyncio
import builtins
from collections import Counter
from pathlib import Path

from broker.tiered.object_store import ObjectNotFound, ObjectStoreError, check_key, check_range

_OPS = ("put", "put_file", "get", "get_range", "delete", "list")
_READ_CHUNK = 1 << 20


class MemoryObjectStore:
    """A dict of key -> bytes behind the `ObjectStore` interface."""

    def __init__(self) -> None:
        self._objects: dict[str, bytes] = {}
        self._failures: Counter[str] = Counter()
        self._skips: Counter[str] = Counter()
        self._closed = False
        self.offline = False
        self.calls: Counter[str] = Counter()

    # -- fault injection -------------------------------------------------------------------------

    def fail_next(self, op: str = "*", count: int = 1, *, after: int = 0) -> None:
        """Let ``after`` calls of ``op`` (any op: ``"*"``) pass, then fail ``count`` with `ObjectStoreError`."""
        if op != "*" and op not in _OPS:
            raise ValueError(f"unknown operation {op!r}; one of {', '.join(_OPS)} or '*'")
        self._skips[op], self._failures[op] = after, count

    async def _enter(self, op: str) -> None:
        self.calls[op] += 1
        await asyncio.sleep(0)
        if self._closed:
            raise ObjectStoreError("the object store is closed")
        if self.offline:
            raise ObjectStoreError(f"{op}: the object store is offline (injected)")
        for name in (op, "*"):
            if self._failures[name] <= 0:
                continue
            if self._skips[name] > 0:
                self._skips[name] -= 1
                continue
            self._failures[name] -= 1
            raise ObjectStoreError(f"{op}: injected failure")

    # -- inspection ------------------------------------------------------------------------------

    @property
    def objects(self) -> dict[str, bytes]:
        """A copy of everything stored, by key."""
        return dict(self._objects)

    # -- ObjectStore -----------------------------------------------------------------------------

    async def put(self, key: str, data: bytes | memoryview) -> None:
        check_key(key)
        payload = bytes(data)
        await self._enter("put")
        self._objects[key] = payload

    async def put_file(self, key: str, path: Path) -> int:
        check_key(key)
        await self._enter("put_file")
        parts = []
        with open(path, "rb") as f:
            while chunk := f.read(_READ_CHUNK):
                parts.append(chunk)
        self._objects[key] = b"".join(parts)
        return len(self._objects[key])

    async def get_range(self, key: str, start: int, end: int) -> bytes:
        check_key(key)
        check_range(start, end)
        if start == end:
            return b""
        await self._enter("get_range")
        return self._lookup(key)[start:end]

    async def get(self, key: str) -> bytes:
        check_key(key)
        await self._enter("get")
        return self._lookup(key)

    async def delete(self, key: str) -> None:
        check_key(key)
        await self._enter("delete")
        self._objects.pop(key, None)

    async def list(self, prefix: str) -> builtins.list[str]:
        await self._enter("list")
        return sorted(k for k in self._objects if k.startswith(prefix))

    def close(self) -> None:
        self._closed = True

    def _lookup(self, key: str) -> bytes:
        try:
            return self._objects[key]
        except KeyError:
            raise ObjectNotFound(f"no object {key!r}") from None
