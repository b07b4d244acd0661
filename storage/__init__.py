"""Storage engine: Kafka-format segment files, partition logs and the data directory.

Layers, bottom up: `fs` (filesystem seam), `naming`, `index` (mmap'd numpy
indexes), `txn_index` (aborted transactions), `segment` (`.log` + indexes),
`txn_recovery` (rebuilding transaction indexes), `partition_log` (segments +
offsets, recovery, retention, the compaction swap), `cleaner` (compaction),
`log_manager` (data directory, topics, checkpoints). Only `protocol` is
imported from above.
"""

from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.errors import CorruptIndexError, KafkaStorageError, LogDirLockedError
from storage.fs import FaultyFileSystem, FileSystem
from storage.log_manager import LogManager
from storage.partition_log import AppendResult, PartitionLog, ReadResult
from storage.topic_registry import TopicInfo

__all__ = [
    "AppendResult",
    "CorruptIndexError",
    "FaultyFileSystem",
    "FileSystem",
    "KafkaStorageError",
    "LogCleaner",
    "LogConfig",
    "LogDirLockedError",
    "LogManager",
    "PartitionLog",
    "ReadResult",
    "TopicInfo",
]
