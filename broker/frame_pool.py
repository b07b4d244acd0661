"""Reusable receive buffers for large request frames, shared by all connections.

Why: a fresh multi-megabyte buffer per large Produce costs more than the bytes
it carries: it is mapped from the kernel, every page faults on first touch, and
freeing unmaps it again (with CPython's zero-filling of a `bytearray`, about a
quarter of the broker's CPU when producing 1 MB batches). A buffer that has
been used once is already mapped, and the socket read overwrites it.

Buffers are private anonymous `mmap`s (`new_buffer`), not bytearrays: their
pages take memory only once written, so a client that sends a size prefix of
100 MB and nothing more costs address space, not RAM (the bytes that do arrive
cost what they would anyway). Private, not shared: a shared anonymous mapping is
shmem, whose page faults and frees cost more.

Contract:
- `take(size)` returns a writable memoryview of exactly ``size`` bytes whose
  contents are unspecified (the caller fills all of it before reading).
- `give(view)` hands it back once the frame is handled, and releases the view.
  The buffer is reused by a later `take` only if by then nothing else refers
  to it. Something often still does at `give` time: the event loop holds the
  buffer of the read that completed the frame until the read callback returns,
  and a handler may keep a slice (e.g. a record set still queued somewhere). A
  buffer that is still referenced is checked again at the next `take`; one that
  stays referenced is left to the garbage collector and never reused, so a
  reused buffer can never change bytes someone still reads.
- At most `max_buffers` buffers, each at most `max_buffer_bytes`, are kept.
- `allocated` and `reused` count the buffers `take` made and the ones it reused.
"""

from __future__ import annotations

import mmap
import sys

# sys.getrefcount of a returned buffer that only the pool refers to: the `_returned` list, the
# loop variable in `_reclaim` and the call's own argument.
_ONLY_POOL = 3


def new_buffer(size: int) -> mmap.mmap:
    """Anonymous private memory of ``size`` bytes (> 0), zero until written, resident only once written."""
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)


class FramePool:
    def __init__(self, max_buffers: int = 4, max_buffer_bytes: int = 16 << 20) -> None:
        self.max_buffers = max_buffers
        self.max_buffer_bytes = max_buffer_bytes
        self.allocated = 0
        self.reused = 0
        self._free: list[mmap.mmap] = []  # referenced by nothing outside the pool
        self._returned: list[mmap.mmap] = []  # handed back, perhaps still referenced

    def take(self, size: int) -> memoryview:
        """A writable view of ``size`` bytes: the smallest free buffer big enough, else a new one."""
        if self._returned:
            self._reclaim()
        free = self._free
        fits = [i for i, buf in enumerate(free) if len(buf) >= size]
        if fits:
            buf = free.pop(min(fits, key=lambda i: len(free[i])))
            self.reused += 1
        else:
            buf = new_buffer(size)
            self.allocated += 1
        return memoryview(buf)[:size]

    def give(self, view: memoryview) -> None:
        """Return a view from `take` once its frame was handled (see the module contract)."""
        buf = view.obj
        view.release()  # drops the view's reference to ``buf``; live slices of it keep theirs
        if type(buf) is not mmap.mmap or len(buf) > self.max_buffer_bytes:
            return
        self._returned.append(buf)
        if len(self._returned) > self.max_buffers:
            del self._returned[0]  # still referenced after max_buffers more frames: let it go

    def _reclaim(self) -> None:
        """Move returned buffers nothing else refers to any more to the free list (smallest dropped)."""
        held = []
        for buf in self._returned:
            if sys.getrefcount(buf) > _ONLY_POOL:
                held.append(buf)
            else:
                self._free.append(buf)
        self._returned = held
        free = self._free
        while len(free) > self.max_buffers:
            free.pop(min(range(len(free)), key=lambda i: len(free[i])))
