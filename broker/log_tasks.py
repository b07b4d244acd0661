"""Background log maintenance: flush policy, checkpoints, retention, file removal, compaction, producer expiry.

Each task is a coroutine on the event loop; its blocking work (fsyncs,
checkpoint writes, unlinking files, cleaning) runs in an executor and reports
back to the loop, so log state is only ever changed on the loop thread:

- housekeeping, every `HOUSEKEEPING_S`: logs whose flush policy says so
  (``flush.messages``/``flush.ms`` reached, or a segment rolled since the last
  flush, which keeps the recovery point close to the log end) are flushed through
  the broker's group commit; ``.deleted`` files past ``log.segment.delete.delay.ms``
  are unlinked.
- retention, every ``log.retention.check.interval.ms``; a producer snapshot is
  taken where it rolled a tiered log's active segment (to be copied with it);
  then the log start offsets are checkpointed if anything was deleted.
- ``recovery-point-offset-checkpoint`` every ``log.flush.offset.checkpoint.interval.ms``,
  ``log-start-offset-checkpoint`` every ``log.flush.start.offset.checkpoint.interval.ms``,
  ``replication-offset-checkpoint`` (HWs) every ``replica.high.watermark.checkpoint.interval.ms``.
- idle idempotent producers forgotten every ``producer.id.expiration.check.interval.ms``.
- the cleaner (``log.cleaner.enable``): ``log.cleaner.threads`` loops, each
  cleaning the filthiest compacted log no other one is cleaning in a worker
  thread of its own, running the swap steps and writing
  ``cleaner-offset-checkpoint``; each sleeps ``log.cleaner.backoff.ms`` when
  there is nothing to clean. `reconfigure_cleaner` changes the three cleaner
  settings while running (dynamic broker configs): new loops start, surplus
  ones stop after their current cleaning, sleeping ones wake to the new
  backoff, and ``log.cleaner.dedupe.buffer.size`` is shared among the threads
  (as Kafka's LogCleaner sizes each thread's offset map) from the next cleaning.

Checkpoint files are written by one writer at a time (`write_checkpoint`).
`stop` lets the running steps finish (aborting a cleaning in progress) so that
`Broker.close` never overlaps a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from storage import naming
from storage.cleaner import CleaningJob
from storage.errors import KafkaStorageError
from storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.replica import ReplicaManager
    from storage.log_manager import LogManager

log = logging.getLogger("minikafka.log_tasks")

HOUSEKEEPING_S = 0.5


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class LogTasks:
    def __init__(
        self, cfg: BrokerConfig, logs: LogManager, replicas: ReplicaManager, group_commit: GroupCommit
    ) -> None:
        self.logs = logs
        self.replicas = replicas
        self.group_commit = group_commit
        self._intervals = {
            "retention": int(cfg["log.retention.check.interval.ms"]) / 1000,
            "recovery": int(cfg["log.flush.offset.checkpoint.interval.ms"]) / 1000,
            "log_start": int(cfg["log.flush.start.offset.checkpoint.interval.ms"]) / 1000,
            "high_watermark": int(cfg["replica.high.watermark.checkpoint.interval.ms"]) / 1000,
            "producers": int(cfg["producer.id.expiration.check.interval.ms"]) / 1000,
        }
        self._cleaner_enabled = bool(cfg["log.cleaner.enable"])
        self._cleaner_backoff = int(cfg["log.cleaner.backoff.ms"]) / 1000
        self.cleaner_threads = int(cfg["log.cleaner.threads"])
        self._cleaner_wake = asyncio.Event()
        self._stop = asyncio.Event()
        self._checkpoint_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._cleaner_loops: dict[int, asyncio.Task[None]] = {}
        self._flushing: set[int] = set()
        self._jobs: set[CleaningJob] = set()
        self._cleaner_pool: ThreadPoolExecutor | None = None
        self._cleaner_pool_size = 0
        self.cleanings = 0  # partition logs compacted (exported by broker/metrics.py)
        self.segments_deleted = 0  # segments removed by retention (same)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._stop.clear()
        periodic: list[tuple[float, Callable[[], object]]] = [
            (HOUSEKEEPING_S, self.housekeeping),
            (self._intervals["retention"], self.retention),
            (self._intervals["recovery"], self.checkpoint_recovery_points),
            (self._intervals["log_start"], self.checkpoint_log_starts),
            (self._intervals["high_watermark"], self.checkpoint_high_watermarks),
            (self._intervals["producers"], self._expire_producers),
        ]
        for interval, fn in periodic:
            self._tasks.append(asyncio.ensure_future(self._every(interval, fn)))
        if self._cleaner_enabled:
            self._start_cleaners()

    def _start_cleaners(self) -> None:
        """Start the cleaner loops that ``cleaner_threads`` calls for and are not running."""
        if self._cleaner_pool is None or self._cleaner_pool_size < self.cleaner_threads:
            self._cleaner_pool_size = max(1, self.cleaner_threads)
            old, self._cleaner_pool = (
                self._cleaner_pool,
                ThreadPoolExecutor(max_workers=self._cleaner_pool_size, thread_name_prefix="log-cleaner"),
            )
            if old is not None:
                old.shutdown(wait=False)  # its running cleanings finish; new ones go to the new pool
        for index in range(self.cleaner_threads):
            if index not in self._cleaner_loops:
                task = asyncio.ensure_future(self._cleaner_loop(index))
                self._cleaner_loops[index] = task
                self._tasks.append(task)

    def reconfigure_cleaner(self, threads: int, backoff_ms: int, dedupe_buffer_bytes: int) -> None:
        """New ``log.cleaner.threads``, ``log.cleaner.backoff.ms`` and ``log.cleaner.dedupe.buffer.size``."""
        self._cleaner_backoff = backoff_ms / 1000
        self.logs.cleaner.set_dedupe_buffer(dedupe_buffer_bytes // max(1, threads))
        if threads != self.cleaner_threads:
            log.info("log cleaner threads: %d -> %d", self.cleaner_threads, threads)
            self.cleaner_threads = threads
            if self._cleaner_enabled and self._tasks and not self._stop.is_set():
                self._start_cleaners()
        self._cleaner_wake.set()  # sleeping loops: a new backoff, or time to stop

    async def stop(self) -> None:
        """Stop every task after its current step (a cleaning in progress is aborted)."""
        self._stop.set()
        self._cleaner_wake.set()
        for job in list(self._jobs):
            job.abort()
        tasks, self._tasks = self._tasks, []
        self._cleaner_loops.clear()
        for result in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(result, BaseException):
                log.error("log task failed: %r", result)
        if self._cleaner_pool is not None:
            self._cleaner_pool.shutdown(wait=True)
            self._cleaner_pool = None

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; False once stopping."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0.001)):
                await self._stop.wait()
        return not self._stop.is_set()

    async def _every(self, interval: float, fn: Callable[[], object]) -> None:
        while await self._sleep(interval):
            try:
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("log task %s failed", getattr(fn, "__name__", fn))

    # -- the tasks -----------------------------------------------------------------------------

    async def housekeeping(self) -> None:
        now = _now_ms()
        for _, plog in self.logs.logs():
            if id(plog) not in self._flushing and plog.flush_due(now):
                self._background_flush(plog)
        doomed = self.logs.take_expired_deletions(now)
        if doomed:
            fs = self.logs.fs
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: [fs.remove_if_exists(p) for p in doomed]
            )

    def _background_flush(self, plog: PartitionLog) -> None:
        key = id(plog)
        self._flushing.add(key)
        fut = self.group_commit.sync(plog, full=True)

        def done(f: asyncio.Future[None]) -> None:
            self._flushing.discard(key)
            if not f.cancelled() and f.exception() is not None:
                log.error("background flush of %s failed: %s", plog.directory, f.exception())

        fut.add_done_callback(done)

    async def retention(self) -> None:
        deleted = self.logs.delete_old_segments(_now_ms())
        self.replicas.snapshot_rolled_segments()  # tiered logs roll their active segment to copy it
        self.segments_deleted += deleted
        if deleted:
            await self.checkpoint_log_starts()

    async def write_checkpoint(self, name: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Write one offset checkpoint file in the executor, one writer at a time."""
        async with self._checkpoint_lock:
            if self.logs.closed:
                return
            await asyncio.get_running_loop().run_in_executor(
                None, self.logs.write_checkpoint, name, dict(offsets)
            )

    async def checkpoint_recovery_points(self) -> None:
        await self.write_checkpoint(naming.RECOVERY_POINT_CHECKPOINT, self.logs.recovery_points())

    async def checkpoint_log_starts(self) -> None:
        await self.write_checkpoint(naming.LOG_START_OFFSET_CHECKPOINT, self.logs.log_start_offsets())

    async def checkpoint_high_watermarks(self) -> None:
        await self.write_checkpoint(naming.REPLICATION_OFFSET_CHECKPOINT, self.logs.high_watermarks())

    def _expire_producers(self) -> None:
        expired = self.replicas.expire_producers(_now_ms())
        if expired:
            log.info("forgot %d idle producer(s)", expired)

    async def _cleaner_loop(self, index: int = 0) -> None:
        try:
            while not self._stop.is_set() and index < self.cleaner_threads:
                try:
                    cleaned = await self.clean_once()
                except Exception:
                    log.exception("log cleaner step failed")
                    cleaned = False
                if not cleaned:
                    self._cleaner_wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(max(self._cleaner_backoff, 0.001)):
                            await self._cleaner_wake.wait()
        finally:
            if self._cleaner_loops.get(index) is asyncio.current_task():
                del self._cleaner_loops[index]

    async def clean_once(self) -> bool:
        """Clean the filthiest compacted log, if any (the swap steps as in `storage.partition_log`)."""
        logs = self.logs
        cleaner = logs.cleaner
        loop = asyncio.get_running_loop()
        job = cleaner.grab_filthiest(logs.logs(), _now_ms(), self.replicas.producer_last_offsets)
        if job is None:
            return False
        self._jobs.add(job)
        try:
            result = await loop.run_in_executor(self._cleaner_pool, cleaner.clean, job)
        except Exception as exc:
            cleaner.fail(job, exc)
            return False
        finally:
            self._jobs.discard(job)
        if not cleaner.commit(result):
            return False
        retired = False
        try:
            await loop.run_in_executor(None, cleaner.sync_dir, result)
            cleaner.retire(result)
            retired = True
            await loop.run_in_executor(None, cleaner.sync_dir, result)
            cleaner.install(result)
        except (OSError, KafkaStorageError) as exc:
            log.error("%s: compaction swap failed: %s", job.directory, exc)
            if not retired:
                job.log.swap_abort(result.outputs)
            cleaner.release(job)
            return False
        self.cleanings += 1
        await self.write_checkpoint(naming.CLEANER_OFFSET_CHECKPOINT, logs.cleaner_offsets())
        return True
