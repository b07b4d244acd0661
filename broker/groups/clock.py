"""Time for the group coordinator: timestamps plus one-shot timers, real or fake.

The coordinator never reads the system clock or the event loop directly; it
gets a `Clock`. `LoopClock` is the broker's (wall-clock milliseconds for the
timestamps that are persisted, `loop.call_later` for timers); `FakeClock` lets
unit tests drive session timeouts, rebalance delays and offset expiry by hand:
time only moves in `advance`, which runs every timer that falls due, in
deadline order (ties in scheduling order), with `now_ms()` equal to the
timer's deadline while its callback runs.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch (persisted in commit and state timestamps)."""
        ...

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        """Run ``fn`` once, ``delay_ms`` (>= 0) from now, on the coordinator's thread."""
        ...


# A timer that fires this much later than due means the broker did not run meanwhile (SIGSTOP, a
# stalled host): it waits GRACE_S more (at most its delay) instead of firing, time enough for the
# requests queued meanwhile (a live member heartbeats every 3 s by default) to be read.
STALL_S = 1.0
GRACE_S = 3.0


class _LoopTimer:
    """A `LoopClock` timer: cancelling it cancels whichever loop handle it has now."""

    __slots__ = ("handle",)

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


class LoopClock:
    """Wall-clock timestamps; timers on the running asyncio loop (so callbacks run on the loop).

    A timer that comes due while the process was not running (paused past
    ``STALL_S``) waits ``GRACE_S`` more (at most its delay) before it fires: after a pause
    the loop runs every overdue timer before it reads the requests waiting
    in its sockets, and a coordinator would otherwise expire every member's
    session at once, although their heartbeats had arrived.
    """

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        delay = max(delay_ms, 0) / 1000.0
        due = loop.time() + delay
        timer = _LoopTimer()

        def fire() -> None:
            if loop.time() - due > STALL_S:
                timer.handle = loop.call_later(min(delay, GRACE_S), fn)
            else:
                fn()

        timer.handle = loop.call_later(delay, fire)
        return timer


class _FakeTimer:
    __slots__ = ("cancelled", "deadline", "fn")

    def __init__(self, deadline: int, fn: Callable[[], None]) -> None:
        self.deadline = deadline
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A manual clock for tests: nothing happens until `advance`."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._heap: list[tuple[int, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer(self._now + max(delay_ms, 0), fn)
        heapq.heappush(self._heap, (timer.deadline, next(self._seq), timer))
        return timer

    @property
    def pending(self) -> int:
        """Timers scheduled and not cancelled."""
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, running due timers (including ones they schedule) in order."""
        target = self._now + ms
        while self._heap and self._heap[0][0] <= target:
            deadline, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, deadline)
            timer.fn()
        self._now = target

    def run_due(self) -> None:
        """Run timers due now (zero-delay ones included) without moving time."""
        self.advance(0)
