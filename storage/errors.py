"""Exceptions raised by the storage engine.

- `CorruptIndexError`: an `.index`/`.timeindex` file failed its sanity checks.
  Never escapes a `PartitionLog`: the segment's indexes are rebuilt from the log.
- `KafkaStorageError`: a write or fsync failed (maps to KAFKA_STORAGE_ERROR, 56).
  After a failed fsync the partition goes offline: the page cache may have
  dropped the unsynced bytes, so nothing more is appended or read.
- `LogDirLockedError`: another process holds the data directory's `.lock`.
- `DataDirError`: a file of the data directory the broker cannot start without
  is damaged (``meta.properties``, the topic registry). Its message is one line
  naming the file and what to do about it.
"""

from __future__ import annotations

from protocol.errors import ErrorCode, KafkaError


class CorruptIndexError(Exception):
    """An index file is malformed (size not a multiple of the entry size, entries not increasing, ...)."""


class KafkaStorageError(KafkaError):
    """An I/O error on a partition's files."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirLockedError(RuntimeError):
    """The data directory is locked by another broker process."""


class DataDirError(RuntimeError):
    """A file the broker cannot start without is damaged; the message names it and the fix."""
