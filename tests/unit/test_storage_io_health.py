"""Storage failures are logged once per partition and errno, counted per op, and their end is logged."""

from __future__ import annotations

import errno
import logging

import pytest

from storage.config import LogConfig
from storage.errors import KafkaStorageError
from storage.fs import FaultyFileSystem
from storage.io_health import IoHealth, describe_os_error
from storage.partition_log import PartitionLog
from tests.unit.test_storage_support import append, make_batch


def _storage_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "minikafka.storage"]


def test_failed_writes_log_once_count_each_and_log_recovery(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.storage")
    fs, health = FaultyFileSystem(), IoHealth()
    log = PartitionLog(str(tmp_path / "orders-3"), LogConfig(), fs, health=health)
    append(log, make_batch(1), now_ms=0)
    for _ in range(3):
        fs.fail_next_write(".log")
        with pytest.raises(KafkaStorageError):
            append(log, make_batch(2), now_ms=0)
    assert health.errors == {("orders", 3, "append"): 3}
    lines = _storage_lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    message = lines[0].getMessage()
    assert "orders-3 (append)" in message and str(tmp_path / "orders-3") in message and "[EIO]" in message

    append(log, make_batch(1), now_ms=0)
    append(log, make_batch(1), now_ms=0)  # a second success logs nothing more
    lines = _storage_lines(caplog)
    assert len(lines) == 2 and "works again: append succeeded after 3 failed writes" in lines[1].getMessage()

    fs.fail_next_write(".log")  # a new failure after recovery is logged afresh
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(2), now_ms=0)
    assert len(_storage_lines(caplog)) == 3 and health.errors[("orders", 3, "append")] == 4
    log.close()


def test_failed_fsync_is_logged_as_offline_at_error(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="minikafka.storage")
    fs, health = FaultyFileSystem(), IoHealth()
    log = PartitionLog(str(tmp_path / "t-0"), LogConfig(), fs, health=health)
    append(log, make_batch(1), now_ms=0)
    fs.fail_next_fsync()
    with pytest.raises(KafkaStorageError):
        log.flush()
    with pytest.raises(KafkaStorageError):
        append(log, make_batch(1), now_ms=0)  # offline: refused before touching a file, not counted again
    assert health.errors == {("t", 0, "fsync"): 1}
    (line,) = _storage_lines(caplog)
    assert line.levelno == logging.ERROR and "offline until the broker restarts" in line.getMessage()
    log.close()


def test_describe_os_error_names_the_errno() -> None:
    exc = OSError(errno.ENOSPC, "No space left on device")
    assert describe_os_error(exc) == "[ENOSPC] No space left on device"
    wrapped = KafkaStorageError("append failed")
    wrapped.__cause__ = exc
    assert describe_os_error(wrapped) == "[ENOSPC] No space left on device"
    assert describe_os_error(ValueError("x")) == "x"
