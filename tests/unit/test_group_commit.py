"""Group commit: the two sync depths and per-log rounds.

- `PartitionLog.flush_data` (what acknowledged writes wait for) fsyncs the `.log` files (and the
  directory after a roll) but no index, and leaves the recovery point where it was; `flush`
  fsyncs the indexes too and moves it. A log reopened after a crash recovers from the recovery
  point and so rebuilds the indexes `flush_data` never synced.
- `GroupCommit`: a sync of a log whose fsync is running waits for the next one; syncs of other
  logs do not wait behind it; ``full=True`` asks for `flush`. The small writes asked for in one
  turn of the event loop share one executor job, and a failed fsync fails only its own log's waiters.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from broker.group_commit import SMALL_BYTES, GroupCommit
from storage.config import LogConfig
from storage.fs import File, FileSystem
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, make_batch

CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=64)


class RecordingFileSystem(FileSystem):
    def __init__(self) -> None:
        self.synced: list[str] = []

    def _fsync(self, file: File) -> None:
        self.synced.append(Path(file.path).name)
        super()._fsync(file)


def test_flush_data_syncs_the_log_files_and_not_the_indexes(tmp_path: Path) -> None:
    fs = RecordingFileSystem()
    log = PartitionLog(str(tmp_path / "t-0"), CONFIG, fs)
    for _ in range(40):
        append(log, make_batch(1, value_size=120))
    assert len(log.segments) > 1  # rolled: a new file in the directory
    fs.synced.clear()
    log.flush_data()
    assert fs.synced and all(name.endswith(".log") or name == "t-0" for name in fs.synced)
    assert "t-0" in fs.synced  # the directory, for the new segment files
    assert log.recovery_point < log.log_end_offset
    fs.synced.clear()
    log.flush_data()
    assert fs.synced == []  # nothing written since
    append(log, make_batch(1))
    log.flush_data()
    assert fs.synced == [f"{log.active_segment.base_offset:020d}.log"]
    fs.synced.clear()
    log.flush()
    assert any(name.endswith(".index") for name in fs.synced)
    assert log.recovery_point == log.log_end_offset
    log.close()


def test_a_crash_after_flush_data_rebuilds_the_indexes_from_the_recovery_point(tmp_path: Path) -> None:
    log = PartitionLog(str(tmp_path / "t-0"), CONFIG)
    for _ in range(10):
        append(log, make_batch(1, value_size=120))
    log.flush()
    point = log.recovery_point
    for _ in range(40):
        append(log, make_batch(1, value_size=120))
    log.flush_data()
    end = log.log_end_offset
    assert log.recovery_point == point
    log.abandon()
    reopened = PartitionLog(str(tmp_path / "t-0"), CONFIG, recover=True, recovery_point=point)
    assert reopened.log_end_offset == end
    assert [s.recovered for s in reopened.segments].count(True) >= 2  # every segment from the point on
    assert reopened.read(end - 1, 1 << 16).data  # found through the rebuilt index
    reopened.close()


class SlowLog:
    """A flushable whose fsync blocks until released; records which kind of flush ran."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def flush(self) -> int:
        self.release.wait(5)
        self.calls.append("flush")
        return 0

    def flush_data(self) -> None:
        self.release.wait(5)
        self.calls.append("flush_data")


async def test_rounds_are_per_log() -> None:
    commit = GroupCommit()
    slow, fast = SlowLog(), SlowLog()
    fast.release.set()
    first = commit.sync(slow)
    await asyncio.sleep(0.01)
    second = commit.sync(slow, full=True)  # arrives while the first fsync runs: waits for the next
    other = commit.sync(fast)
    await asyncio.wait_for(other, 2)  # not held behind the slow log
    assert not first.done() and not second.done()
    slow.release.set()
    await asyncio.wait_for(asyncio.gather(first, second), 2)
    assert slow.calls == ["flush_data", "flush"] and fast.calls == ["flush_data"]
    both = commit.sync_many([slow, fast])
    await asyncio.wait_for(both, 2)
    assert slow.calls[-1] == fast.calls[-1] == "flush_data"


class FailingLog:
    def flush(self) -> int:
        raise OSError("disk gone")

    def flush_data(self) -> None:
        raise OSError("disk gone")


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.jobs = 0

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        self.jobs += 1
        return super().submit(*args, **kwargs)


async def test_logs_asked_for_in_one_turn_share_a_job_and_fail_alone() -> None:
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    commit = GroupCommit()
    logs = [SlowLog() for _ in range(5)]
    for log in logs:
        log.release.set()
    broken = FailingLog()
    futures = [commit.sync(log) for log in logs]
    failed = commit.sync(broken)
    done = await asyncio.wait_for(asyncio.gather(*futures, failed, return_exceptions=True), 2)
    assert done[:5] == [None] * 5 and isinstance(done[5], OSError)
    assert [log.calls for log in logs] == [["flush_data"]] * 5
    assert executor.jobs == 1
    full = commit.sync(logs[0], full=True)  # a full flush may be long: a job of its own
    await asyncio.wait_for(asyncio.gather(full, commit.sync(logs[1])), 2)
    assert executor.jobs == 3 and logs[0].calls[-1] == "flush"
    large = commit.sync(logs[2], size=SMALL_BYTES + 1)  # its writeback overlaps the others'
    await asyncio.wait_for(asyncio.gather(large, commit.sync_many(logs[3:], sizes=[10, 10])), 2)
    assert executor.jobs == 5
