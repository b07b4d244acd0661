"""Group commit: one fsync serves every acknowledged write of a log waiting at that moment.

`sync(log)` marks a partition log dirty and returns a future that resolves once
an fsync of that log that *started after the call* has finished. While a log's
fsync runs in the executor, new callers for that log collect into its next one,
so under load the number of fsyncs per second of a log is bounded by the disk,
not by the number of requests. Each log has its own rounds: a write to another
log does not wait for this one's running fsync, and fsyncs asked for in
different turns of the event loop run in parallel (the disk completes concurrent
fsyncs of different files together). A failed fsync fails every waiter of that
log's round (their writes are never acknowledged); the other logs of its job are
not affected.

Executor jobs: the data-depth rounds of small writes asked for in one turn of
the event loop (a transaction's markers, coordinator records, pipelined small
Produce requests decoded together) share one job, up to ``BATCH`` logs, their
fsyncs running one after the other in it. An executor round trip costs the
event loop some 40 µs of Python, and one per log was a large part of a
transaction's broker time (bench/transactions.py), while the fsyncs of a few
small writes take about as long in one thread as in parallel. A log with more
than ``SMALL_BYTES`` written for its round (callers say how much with
``size``) gets a job of its own: the writeback of large writes overlaps when
their fsyncs run in parallel.

Two depths of sync:

- the default (acks=all produce, coordinator records, transaction markers) is
  `PartitionLog.flush_data`: the `.log` files and the directory, which is what
  an acknowledged write needs; the indexes are rebuilt from the log by
  recovery, which starts at the recovery point;
- ``full=True`` (the background flush of ``flush.messages`` / ``flush.ms`` and
  segment rolls) is `PartitionLog.flush`: indexes too, and the recovery point
  moves. Such a round gets a job of its own: it may take long.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Protocol

log = logging.getLogger("minikafka.group_commit")

BATCH = 16
SMALL_BYTES = 64 << 10


class Flushable(Protocol):
    def flush(self) -> object: ...

    def flush_data(self) -> None: ...


class _LogRounds:
    """One log's fsync rounds: whether one runs or is due, and the callers waiting for the next."""

    __slots__ = ("target", "running", "due", "waiters", "full", "size")

    def __init__(self, target: Flushable) -> None:
        self.target = target
        self.running = False
        self.due = False
        self.waiters: list[asyncio.Future[None]] = []
        self.full = False
        self.size = 0  # bytes written for the next round, as callers told


_Round = tuple[_LogRounds, list[asyncio.Future[None]], bool]


def _fsync_all(rounds: list[_Round]) -> list[BaseException | None]:
    """In the executor: each round's flush, in order; one failure does not stop the others."""
    failures: list[BaseException | None] = []
    for r, _, full in rounds:
        try:
            r.target.flush() if full else r.target.flush_data()
            failures.append(None)
        except Exception as exc:
            failures.append(exc)
    return failures


class GroupCommit:
    def __init__(self) -> None:
        self._logs: dict[int, _LogRounds] = {}
        self._due: list[_LogRounds] = []
        self.rounds = 0

    def sync(self, target: Flushable, *, full: bool = False, size: int = 0) -> asyncio.Future[None]:
        """``size``: the bytes the caller wrote to ``target`` (0 for a small write)."""
        loop = asyncio.get_running_loop()
        rounds = self._logs.get(id(target))
        if rounds is None:
            rounds = self._logs[id(target)] = _LogRounds(target)
        fut: asyncio.Future[None] = loop.create_future()
        rounds.waiters.append(fut)
        rounds.full = rounds.full or full
        rounds.size += size
        if not rounds.running and not rounds.due:
            self._queue(loop, rounds)
        return fut

    def sync_many(
        self, targets: Iterable[Flushable], *, full: bool = False, sizes: Iterable[int] | None = None
    ) -> asyncio.Future[Any]:
        """`sync` of several logs with one future, done once all of them are (failed if one failed)."""
        if sizes is None:
            futures = [self.sync(t, full=full) for t in targets]
        else:
            futures = [self.sync(t, full=full, size=n) for t, n in zip(targets, sizes, strict=True)]
        if len(futures) == 1:
            return futures[0]
        return asyncio.gather(*futures)

    def _queue(self, loop: asyncio.AbstractEventLoop, rounds: _LogRounds) -> None:
        """Due at the end of this turn of the loop, with the other logs asked for in it."""
        rounds.due = True
        if not self._due:
            loop.call_soon(self._launch, loop)
        self._due.append(rounds)

    def _launch(self, loop: asyncio.AbstractEventLoop) -> None:
        due, self._due = self._due, []
        batch: list[_Round] = []
        for rounds in due:
            round_: _Round = (rounds, rounds.waiters, rounds.full)
            alone = rounds.full or rounds.size > SMALL_BYTES
            rounds.waiters, rounds.full, rounds.size = [], False, 0
            rounds.due, rounds.running = False, True
            self.rounds += 1
            if alone:
                self._run(loop, [round_])
            else:
                batch.append(round_)
        for i in range(0, len(batch), BATCH):
            self._run(loop, batch[i : i + BATCH])

    def _run(self, loop: asyncio.AbstractEventLoop, batch: list[_Round]) -> None:
        job = loop.run_in_executor(None, _fsync_all, batch)
        job.add_done_callback(lambda f: self._finished(loop, batch, f))

    def _finished(
        self,
        loop: asyncio.AbstractEventLoop,
        batch: list[_Round],
        f: asyncio.Future[list[BaseException | None]],
    ) -> None:
        crashed = f.exception()  # the job itself, not an fsync (those come back in its result)
        failures = [crashed] * len(batch) if crashed is not None else f.result()
        for (rounds, waiters, _), exc in zip(batch, failures, strict=True):
            rounds.running = False
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
                self._queue(loop, rounds)
            else:
                del self._logs[id(rounds.target)]  # idle: forgotten (logs come and go)
