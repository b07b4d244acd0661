"""Reusable receive buffers for large request frames, shared by all connections.

Why: a fresh multi-megabyte buffer per large Produce costs more than the bytes
it carries: it is mapped from the kernel, every page faults on first touch, and
freeing unmaps it again (with CPython's zero-filling of a `bytearray`, about a
quarter of the broker's CPU when producing 1 MB batches). A buffer that has
been used once is already mapped, and the socket read overwrites it.

Buffers are anonymous `mmap`s (`new_buffer`), not bytearrays: their pages take
memory only once written, so a client that sends a size prefix of 100 MB and
nothing more costs address space, not RAM (the bytes that do arrive cost what
they would anyway).

Contract:
- `take(size)` returns a writable memoryview of exactly ``size`` bytes whose
  contents are unspecified (the caller fills all of it before reading).
- `give(view)` hands it back once the frame is handled. The view is released,
  and its buffer is kept only if nothing else still refers to it (a handler
  may have kept a slice, e.g. a record set still queued somewhere): otherwise
  it is left to the garbage collector and never reused, so a reused buffer can
  never change bytes someone still reads.
- At most `max_buffers` buffers, each at most `max_buffer_bytes`, are kept.
"""

from __future__ import annotations

import mmap
import sys

# sys.getrefcount of a buffer referenced only by one local name (the call's argument is the other).
_UNSHARED = 2


def new_buffer(size: int) -> mmap.mmap:
    """Anonymous private memory of ``size`` bytes (> 0), zero until written, resident only once written."""
    return mmap.mmap(-1, size)


class FramePool:
    def __init__(self, max_buffers: int = 4, max_buffer_bytes: int = 16 << 20) -> None:
        self.max_buffers = max_buffers
        self.max_buffer_bytes = max_buffer_bytes
        self._free: list[mmap.mmap] = []

    def take(self, size: int) -> memoryview:
        """A writable view of ``size`` bytes: the smallest kept buffer big enough, else a new one."""
        fits = [i for i, buf in enumerate(self._free) if len(buf) >= size]
        buf = self._free.pop(min(fits, key=lambda i: len(self._free[i]))) if fits else new_buffer(size)
        return memoryview(buf)[:size]

    def give(self, view: memoryview) -> None:
        """Return a view from `take` once its frame was handled (see the module contract)."""
        buf = view.obj
        view.release()  # drops the view's reference to ``buf``; live slices of it keep theirs
        if type(buf) is not mmap.mmap or len(buf) > self.max_buffer_bytes:
            return
        if sys.getrefcount(buf) > _UNSHARED:
            return  # someone still holds a slice: never hand these bytes out again
        self._free.append(buf)
        if len(self._free) > self.max_buffers:
            self._free.pop(min(range(len(self._free)), key=lambda i: len(self._free[i])))
