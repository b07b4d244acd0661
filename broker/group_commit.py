"""Group commit: one fsync serves every acknowledged write of a log waiting at that moment.

`sync(log)` marks a partition log dirty and returns a future that resolves once
an fsync of that log that *started after the call* has finished. While a log's
fsync runs in the executor, new callers for that log collect into its next one,
so under load the number of fsyncs per second of a log is bounded by the disk,
not by the number of requests. Each log has its own rounds: a write to another
log does not wait behind this one's fsync, and the fsyncs of different logs run
in parallel (the disk completes concurrent fsyncs of different files together).
A failed fsync fails every waiter of that log's round (their writes are never
acknowledged).

Two depths of sync:

- the default (acks=all produce, coordinator records, transaction markers) is
  `PartitionLog.flush_data`: the `.log` files and the directory, which is what
  an acknowledged write needs; the indexes are rebuilt from the log by
  recovery, which starts at the recovery point;
- ``full=True`` (the background flush of ``flush.messages`` / ``flush.ms`` and
  segment rolls) is `PartitionLog.flush`: indexes too, and the recovery point
  moves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Protocol

log = logging.getLogger("minikafka.group_commit")


class Flushable(Protocol):
    def flush(self) -> object: ...

    def flush_data(self) -> None: ...


class _LogRounds:
    """One log's fsync rounds: whether one runs, and the callers waiting for the next."""

    __slots__ = ("target", "running", "waiters", "full")

    def __init__(self, target: Flushable) -> None:
        self.target = target
        self.running = False
        self.waiters: list[asyncio.Future[None]] = []
        self.full = False


class GroupCommit:
    def __init__(self) -> None:
        self._logs: dict[int, _LogRounds] = {}
        self.rounds = 0

    def sync(self, target: Flushable, *, full: bool = False) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        rounds = self._logs.get(id(target))
        if rounds is None:
            rounds = self._logs[id(target)] = _LogRounds(target)
        fut: asyncio.Future[None] = loop.create_future()
        rounds.waiters.append(fut)
        rounds.full = rounds.full or full
        if not rounds.running:
            self._start(loop, rounds)
        return fut

    def sync_many(self, targets: Iterable[Flushable], *, full: bool = False) -> asyncio.Future[Any]:
        """`sync` of several logs with one future, done once all of them are (failed if one failed)."""
        futures = [self.sync(t, full=full) for t in targets]
        if len(futures) == 1:
            return futures[0]
        return asyncio.gather(*futures)

    def _start(self, loop: asyncio.AbstractEventLoop, rounds: _LogRounds) -> None:
        waiters, full = rounds.waiters, rounds.full
        rounds.waiters, rounds.full = [], False
        rounds.running = True
        self.rounds += 1
        target = rounds.target
        job = loop.run_in_executor(None, target.flush if full else target.flush_data)
        job.add_done_callback(lambda f: self._finished(loop, rounds, f, waiters))

    def _finished(
        self,
        loop: asyncio.AbstractEventLoop,
        rounds: _LogRounds,
        f: asyncio.Future[object],
        waiters: list[asyncio.Future[None]],
    ) -> None:
        rounds.running = False
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
        if rounds.waiters:
            self._start(loop, rounds)
        else:
            del self._logs[id(rounds.target)]  # idle: forgotten (logs come and go)
