"""Group commit: one fsync round serves every acks=all produce waiting at that moment.

`sync(log)` marks a partition log dirty and returns a future that resolves once
an fsync that *started after the call* has finished for that log. While one
round runs in the executor, new callers collect into the next round, so under
load the number of fsyncs per second is bounded by the disk, not by the number
of requests. A failed fsync fails every waiter of that round (their writes are
never acknowledged).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

log = logging.getLogger("minikafka.group_commit")


class Flushable(Protocol):
    def flush(self) -> None: ...


class GroupCommit:
    def __init__(self) -> None:
        self._dirty: dict[int, Flushable] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._running = False
        self.rounds = 0

    def sync(self, target: Flushable) -> asyncio.Future[None]:
        return self.sync_many((target,))

    def sync_many(self, targets: Iterable[Flushable]) -> asyncio.Future[None]:
        """`sync` of several logs with one future: all of them join the same round."""
        loop = asyncio.get_running_loop()
        for target in targets:
            self._dirty[id(target)] = target
        fut: asyncio.Future[None] = loop.create_future()
        self._waiters.append(fut)
        if not self._running:
            self._start(loop)
        return fut

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        targets, waiters = list(self._dirty.values()), self._waiters
        self._dirty, self._waiters = {}, []
        self._running = True
        self.rounds += 1
        done = loop.run_in_executor(None, _flush_all, targets)
        done.add_done_callback(lambda f: self._finished(loop, f, waiters))

    def _finished(
        self, loop: asyncio.AbstractEventLoop, f: asyncio.Future[None], waiters: list[asyncio.Future[None]]
    ) -> None:
        self._running = False
        exc = f.exception()
        if exc is not None:
            log.error("fsync failed: %s", exc)
        for w in waiters:
            if w.done():
                continue
            if exc is None:
                w.set_result(None)
            else:
                w.set_exception(exc)
        if self._waiters:
            self._start(loop)


def _flush_all(targets: Iterable[Flushable]) -> None:
    for t in targets:
        t.flush()
