"""Receiving Kafka frames (``INT32 size`` + that many bytes) on an asyncio `BufferedProtocol`.

The socket is read straight into our own buffers, so no bytes object is made
per read. Small frames arrive in a reusable read buffer and are copied out
once: Produce frames as a `bytearray` (the handler patches batch headers in
place, so it needs no copy of its own), others as `bytes`. A frame of
`DIRECT_FRAME_BYTES` or more gets a buffer of its exact size from a shared
pool (broker/frame_pool.py) as soon as its size prefix is in, and the rest of
it is read straight into that; a large Produce is handed over as a writable
memoryview of it, so its bytes are copied by the kernel into the frame and from
the frame into the page cache, and by nothing else.

`FrameReceiver` is the receiving half of a connection (broker/connection.py):
it calls `handle_frame` for each complete frame, in order, while `accepting`
and not `read_paused`; a size outside 1..`frame_limit` calls `refuse`. Frames
left in the buffer wait until `resume_frames` is called; so even one large read
full of small requests cannot queue more work than the caller's flow control
allows.
"""

from __future__ import annotations

import asyncio
import struct
import time

from broker.frame_pool import FramePool, new_buffer

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_PRODUCE_KEY = 0

DIRECT_FRAME_BYTES = 64 * 1024
"""Frames at least this large are read straight into a buffer of their own."""
READ_BUFFER_BYTES = 256 * 1024
"""Size of the reusable read buffer that small frames arrive in."""


def is_produce(frame: memoryview | bytes | bytearray) -> bool:
    """Whether a frame (size prefix removed) is a Produce request: those are handed over mutable,
    because the handler patches the batches' offsets in place."""
    return len(frame) >= 2 and _I16.unpack_from(frame)[0] == _PRODUCE_KEY


class FrameReceiver(asyncio.BufferedProtocol):
    """The receiving half of a connection (module docstring); subclasses supply the hooks."""

    def __init__(self, frames: FramePool) -> None:
        self._frames = frames
        # The read buffer (anonymous memory: unwritten pages cost no RAM); bytes [_start, _end)
        # are received and not yet handled.
        self._buf = new_buffer(READ_BUFFER_BYTES)
        self._start = 0
        self._end = 0
        # A large frame being read straight into its own buffer (see DIRECT_FRAME_BYTES).
        self._frame: memoryview | None = None
        self._frame_filled = 0
        self.last_activity = time.monotonic()

    # -- hooks ------------------------------------------------------------------------------------
    def handle_frame(self, frame: bytes | bytearray | memoryview) -> None:
        raise NotImplementedError

    def frame_limit(self) -> int:
        """The largest frame size accepted now."""
        raise NotImplementedError

    def accepting(self) -> bool:
        """Whether frames are still handled (False: closing; what arrives is dropped)."""
        raise NotImplementedError

    def read_paused(self) -> bool:
        raise NotImplementedError

    def refuse(self, reason: str) -> None:
        """A frame that cannot be taken: the connection closes."""
        raise NotImplementedError

    def frames_handled(self) -> None:
        """Called after each run of handled frames (the subclass updates its flow control)."""

    # -- asyncio.BufferedProtocol -----------------------------------------------------------------
    def get_buffer(self, sizehint: int) -> memoryview:
        """Where the next socket read goes: the rest of a large frame, else the read buffer's free tail."""
        if self._frame is not None:
            return self._frame[self._frame_filled :]
        buf = self._buf
        if len(buf) - self._end < DIRECT_FRAME_BYTES:
            # Move the unhandled bytes at [_start, _end) to the front (memmove, overlap allowed),
            # or into a bigger buffer when they would leave too little room behind them.
            pending = self._end - self._start
            if pending + DIRECT_FRAME_BYTES <= len(buf):
                buf.move(0, self._start, pending)
            else:
                fresh = new_buffer(2 * pending + DIRECT_FRAME_BYTES)
                fresh[:pending] = buf[self._start : self._end]
                self._buf = buf = fresh
            self._start, self._end = 0, pending
        return memoryview(buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_activity = time.monotonic()
        frame = self._frame
        if frame is None:
            self._end += nbytes
        else:
            self._frame_filled += nbytes
            if self._frame_filled < len(frame):
                return
            self._frame = None
            if self.accepting():
                self.handle_frame(frame if is_produce(frame) else bytes(frame))
            self._frames.give(frame)
        self.resume_frames()

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handled."""
        return self._end - self._start

    def resume_frames(self) -> None:
        """Handle the complete frames buffered so far, stopping as soon as reading is paused.

        A large frame whose start is buffered moves to a buffer of its own,
        which the next reads fill.
        """
        buf = self._buf
        pos = self._start
        end = self._end
        while self.accepting() and not self.read_paused() and end - pos >= 4:
            (size,) = _I32.unpack_from(buf, pos)
            limit = self.frame_limit()
            if size <= 0 or size > limit:
                self.refuse(f"frame size {size} outside 1..{limit}")
                return
            have = end - pos - 4
            if have < size:
                if size >= DIRECT_FRAME_BYTES and self._frame is None:
                    try:
                        frame = self._frames.take(size)
                    except (OSError, MemoryError) as exc:
                        self.refuse(f"cannot allocate {size} bytes for a frame: {exc}")
                        return
                    frame[:have] = memoryview(buf)[pos + 4 : end]
                    self._frame, self._frame_filled = frame, have
                    pos = end
                break
            with memoryview(buf) as view:  # the one copy out of the read buffer
                body = view[pos + 4 : pos + 4 + size]
                frame = bytearray(body) if is_produce(body) else bytes(body)
                body.release()
            pos += 4 + size
            self.handle_frame(frame)
        if pos == end:
            pos = end = 0
        self._start, self._end = pos, end
        self.frames_handled()
