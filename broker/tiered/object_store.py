"""The object-store interface tiered storage writes through, and its two errors.

An object store here is a flat namespace of immutable byte strings named by keys.
Only the verbs the remote storage manager needs are offered, with one contract
for every implementation (`broker.tiered.s3_store` on any S3 endpoint,
`broker.tiered.memory_store` in memory):

- Keys are non-empty strings of ``/``-separated parts, none of them empty and
  none ``.`` or ``..`` (so no leading, trailing or doubled ``/``): S3 takes
  anything, but other stores and obstore's path rules do not. A bad key is a
  `ValueError` before any request.
- ``put`` and ``put_file`` replace the whole object atomically: a reader sees
  the old object, the new one, or (for a new key) nothing, never a part.
- ``get_range(key, start, end)`` returns bytes ``[start, end)`` with Python slice
  semantics: ``end`` past the object's end is clamped, ``start`` at or past it
  gives ``b""`` (as ``pread`` past EOF does). An empty range (``start == end``)
  is ``b""`` without asking the store. ``start > end`` or a negative bound is a
  `ValueError`.
- ``delete`` of a missing key succeeds (S3 answers 204 too), so deleting is idempotent.
- ``list(prefix)`` returns every key that starts with ``prefix`` as a string
  (S3's ListObjectsV2 ``Prefix``: ``"t/1"`` matches ``"t/10/x"``), sorted. A
  listing started while keys are written may or may not include them.
- After ``close`` every call raises `ObjectStoreError`.

Errors: `ObjectNotFound` when a read names a missing key; `ObjectStoreError`
for everything else the store did not do (network errors, timeouts, 5xx,
refused credentials, throttling). Both are worth retrying later: an object may
appear, a store may come back, credentials may be fixed. Failures of the local
file in ``put_file`` are the `OSError` they are.
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Protocol, runtime_checkable


class ObjectStoreError(Exception):
    """The object store did not do what was asked (network, timeout, 5xx, credentials): retry later."""


class ObjectNotFound(ObjectStoreError):
    """A read named a key that holds no object."""


@runtime_checkable
class ObjectStore(Protocol):
    """What tiered storage needs from an object store; the module docstring gives the contract."""

    async def put(self, key: str, data: bytes | memoryview) -> None:
        """Store ``data`` (copied before returning) as the object ``key``, replacing any old one."""
        ...

    async def put_file(self, key: str, path: Path) -> int:
        """Stream the local file ``path`` into the object ``key``; returns the bytes uploaded.

        Large files go up in parts (multipart upload) so that memory stays bounded
        whatever the file's size. The file must not change while it is uploaded.
        """
        ...

    async def get_range(self, key: str, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)`` of the object (clamped to its size); `ObjectNotFound` if absent.
        A memoryview when the client's own buffer can be handed out without a copy."""
        ...

    async def get(self, key: str) -> bytes:
        """The whole object; `ObjectNotFound` if absent."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the object; a missing key is not an error."""
        ...

    async def list(self, prefix: str) -> builtins.list[str]:
        """Every key starting with ``prefix`` (``""``: all keys), sorted."""
        ...

    def close(self) -> None:
        """Release connections; later calls raise `ObjectStoreError`."""
        ...


def check_key(key: str) -> str:
    """``key`` if it follows the key rules of the module docstring, else `ValueError`."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"object key {key!r} is empty")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise ValueError(f"object key {key!r} has an empty, '.' or '..' part")
    return key


def check_range(start: int, end: int) -> None:
    """`ValueError` unless ``0 <= start <= end``."""
    if start < 0 or end < start:
        raise ValueError(f"bad byte range [{start}, {end})")
