"""Naming rules for everything the storage engine puts on disk (the one place for them).

Kafka-compatible layout::

    <data-dir>/
      meta.properties  .lock  .kafka_cleanshutdown  __minikafka_topics.json
      recovery-point-offset-checkpoint  log-start-offset-checkpoint  cleaner-offset-checkpoint
      replication-offset-checkpoint   (each partition's high watermark)
      <topic>-<partition>/
        00000000000000000000.log  .index  .timeindex  .txnindex
        00000000000000000000.snapshot   (producer state at that offset; not part of a segment)
        leader-epoch-checkpoint
        partition.metadata   (the topic's ID: `storage.topic_ids`)

- Segment files: the segment's base offset as 20 zero-padded decimal digits plus
  a suffix. A segment pending deletion has `.deleted` appended to each file name.
  The `.txnindex` (aborted transactions, `storage.txn_index`) exists only once a
  segment has had an entry: a segment without one has no aborted transactions.
- The log cleaner writes a segment's replacement as ``<base>.log.cleaned`` (and
  ``.index.cleaned``, ``.timeindex.cleaned``, ``.txnindex.cleaned`` if it has one),
  renames those to ``.swap`` once they are complete, and finally to the plain
  names (see `storage.partition_log` for the protocol).
- Partition directory: ``<topic>-<partition>``; topic names may contain '-', so
  parsing splits on the *last* '-'.
- A partition directory being deleted is renamed ``<topic>-<partition>.<hex id>-delete``
  first, so a crash half-way leaves something recognisable to finish removing.
"""

from __future__ import annotations

import os
import re

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"
DELETE_DIR_SUFFIX = "-delete"

SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX)
# The files that make up one segment (a producer snapshot shares the naming but has its own lifecycle).
# The `.txnindex` may be absent; every other one exists.
SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
# The order a segment's files are renamed in: the `.log` last, so a `.log` under a new name
# always has its indexes beside it.
SEGMENT_RENAME_ORDER = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LOG_SUFFIX)

META_PROPERTIES = "meta.properties"
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
TOPICS_FILE = "__minikafka_topics.json"

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_OFFSET_DIGITS = 20


def offset_filename(base_offset: int) -> str:
    """``"%020d" % base_offset``: the stem shared by a segment's files."""
    if base_offset < 0:
        raise ValueError(f"negative base offset {base_offset}")
    return f"{base_offset:020d}"


def segment_file(directory: str, base_offset: int, suffix: str) -> str:
    """Path of one of a segment's files, e.g. ``segment_file(d, 0, LOG_SUFFIX)``."""
    return os.path.join(directory, offset_filename(base_offset) + suffix)


def log_file(directory: str, base_offset: int) -> str:
    return segment_file(directory, base_offset, LOG_SUFFIX)


def index_file(directory: str, base_offset: int) -> str:
    return segment_file(directory, base_offset, INDEX_SUFFIX)


def time_index_file(directory: str, base_offset: int) -> str:
    return segment_file(directory, base_offset, TIME_INDEX_SUFFIX)


def txn_index_file(directory: str, base_offset: int) -> str:
    return segment_file(directory, base_offset, TXN_INDEX_SUFFIX)


def snapshot_file(directory: str, base_offset: int) -> str:
    return segment_file(directory, base_offset, SNAPSHOT_SUFFIX)


def parse_stage_filename(name: str, stage: str) -> tuple[int, str] | None:
    """``"00000000000000000042.log.swap"`` with stage ``.swap`` -> ``(42, ".log")``; None otherwise.

    For the cleaner's intermediate files (`CLEANED_SUFFIX`, `SWAP_SUFFIX`) and `DELETED_SUFFIX`.
    """
    if not name.endswith(stage):
        return None
    parsed = parse_segment_filename(name[: -len(stage)])
    if parsed is None or parsed[1] not in SEGMENT_FILE_SUFFIXES:
        return None
    return parsed


def parse_segment_filename(name: str) -> tuple[int, str] | None:
    """``"00000000000000000042.index"`` -> ``(42, ".index")``; None for anything else.

    Names carrying a `.deleted` or `.tmp` suffix are not segment files (None).
    """
    stem, dot, ext = name.partition(".")
    if not dot or len(stem) != _OFFSET_DIGITS or not stem.isdigit():
        return None
    suffix = "." + ext
    if suffix not in SEGMENT_SUFFIXES:
        return None
    return int(stem), suffix


def partition_dir_name(topic: str, partition: int) -> str:
    """``"<topic>-<partition>"``."""
    if partition < 0:
        raise ValueError(f"negative partition {partition}")
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``"my-topic-3"`` -> ``("my-topic", 3)``; None if the name is not a partition directory."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit() or not partition.isascii():
        return None
    if topic_name_error(topic) is not None:
        return None
    return topic, int(partition)


def delete_dir_name(partition_dir: str, unique: str) -> str:
    """Name a partition directory (base name) is renamed to before removal: ``<topic>-<p>.<unique>-delete``."""
    return f"{partition_dir}.{unique}{DELETE_DIR_SUFFIX}"


def is_delete_dir_name(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX) and "." in name


def topic_name_error(name: str) -> str | None:
    """Why ``name`` is not a legal Kafka topic name, or None if it is.

    Kafka's rules: 1 to 249 characters from ``[a-zA-Z0-9._-]``, and neither "." nor "..".
    """
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be {name!r}"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is {len(name)} characters long, more than {MAX_TOPIC_NAME_LENGTH}"
    if not _LEGAL_TOPIC.fullmatch(name):
        return f"topic name {name!r} has characters outside [a-zA-Z0-9._-]"
    return None
