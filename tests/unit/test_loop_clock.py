"""`LoopClock` timers on a real event loop: on time normally, one more delay after the loop stalled."""

from __future__ import annotations

import asyncio
import time

from broker.groups.clock import STALL_S, LoopClock


async def test_a_timer_fires_on_time() -> None:
    fired: list[float] = []
    start = time.monotonic()
    LoopClock().call_later(50, lambda: fired.append(time.monotonic() - start))
    await asyncio.sleep(0.2)
    assert len(fired) == 1 and 0.04 <= fired[0] < 0.2


async def test_a_timer_due_while_the_loop_did_not_run_waits_its_delay_once_more() -> None:
    """As a coordinator resuming from SIGSTOP: the members' heartbeats, read after the overdue timers
    ran, must still find their sessions alive."""
    fired: list[str] = []
    clock = LoopClock()
    clock.call_later(100, lambda: fired.append("session expired"))
    time.sleep(STALL_S + 0.3)  # the loop does not run: a paused process
    await asyncio.sleep(0.02)
    assert fired == [], "expired at once after the stall"
    await asyncio.sleep(0.2)
    assert fired == ["session expired"]


async def test_cancel_reaches_the_timer_armed_again_after_a_stall() -> None:
    fired: list[str] = []
    timer = LoopClock().call_later(100, lambda: fired.append("fired"))
    time.sleep(STALL_S + 0.3)
    await asyncio.sleep(0.02)
    timer.cancel()  # a heartbeat arrived
    await asyncio.sleep(0.2)
    assert fired == []
