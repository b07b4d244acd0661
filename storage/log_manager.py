"""The data directory: every partition log, the topic registry, locks, checkpoints, clean shutdown.

Files at the top of the data directory:

- ``.lock``: held with an exclusive ``flock`` while a `LogManager` is open; a
  second broker on the same directory fails with `LogDirLockedError`.
- ``meta.properties``: Java properties text (``#`` comment lines, then
  ``cluster.id=...``, ``node.id=...``, ``version=1``). Created on first start; on
  later starts a different configured node id is an error.
- ``__minikafka_topics.json``: the topic registry (format, and what happens
  when it is missing or damaged: `storage.topic_registry`).
- ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``cleaner-offset-checkpoint``, ``replication-offset-checkpoint`` (high
  watermarks): Kafka's text checkpoints (``0``, count,
  ``<topic> <partition> <offset>`` lines), written atomically by `checkpoint`,
  `flush_all`, `close`, after a recovery, and (through `write_checkpoint`, from an
  executor) by the broker's periodic tasks.
- ``.kafka_cleanshutdown``: written last by `close` after everything is fsynced;
  removed right after opening. Its absence at open means the last run crashed:
  logs are opened with recovery from their checkpointed recovery point (0 if none).

High watermarks: ``replication-offset-checkpoint`` is written at open, and
then with the other checkpoints. Every log opens with its checkpointed HW (a
partition missing from it, created after the last write, with its log start
offset), as Kafka does; only a data directory that never had the file (written
by an older minikafka) keeps HW = LEO. Whoever leads the partition moves the
HW up again (`broker.replica`).

Partition directories not in the registry (a crash during `delete_topic`) and
``*-delete`` directories are removed at open.

Retention, compaction: `delete_old_segments` applies every log's retention,
`take_expired_deletions` hands out `.deleted` files that are due for removal, and
`cleaner` (a `storage.cleaner.LogCleaner`) compacts ``cleanup.policy=compact`` logs.

Threading: everything on the loop thread, except `flush_all` and
`write_checkpoint`, which may run in an executor (`flush_all` flushes logs via the
thread-safe `PartitionLog.flush`); `close` must not overlap either.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import logging
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace

from protocol.errors import ErrorCode, KafkaError
from storage import naming, topic_ids, topic_registry
from storage.checkpoint import CorruptCheckpointError, read_offsets, write_offsets
from storage.cleaner import DEFAULT_DEDUPE_BUFFER_BYTES, LogCleaner
from storage.config import LogConfig
from storage.errors import DataDirError, KafkaStorageError, LogDirLockedError
from storage.fs import FileSystem
from storage.io_health import IoHealth
from storage.partition_log import PartitionLog
from storage.topic_registry import TopicInfo, check_partition_increase

log = logging.getLogger(__name__)

META_VERSION = 1


class LogManager:
    """Owns the data directory and every `PartitionLog` in it."""

    def __init__(
        self,
        data_dir: str,
        default_config: LogConfig | None = None,
        fs: FileSystem | None = None,
        *,
        node_id: int = 0,
        cluster_id: str | None = None,
        cleaner_dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES,
        remote_log_system_enabled: bool = False,
    ) -> None:
        """Lock and open ``data_dir`` (created if absent), recovering logs if the last shutdown was unclean.

        Raises `LogDirLockedError` if another process holds the directory, and
        `DataDirError` if ``meta.properties`` or the topic registry is damaged, or
        ``meta.properties`` disagrees with ``node_id``/``cluster_id``.
        ``remote_log_system_enabled``: ``remote.log.storage.system.enable``; the logs of topics with
        ``remote.storage.enable`` are then tiered (`PartitionLog.set_tiered`).
        """
        self.data_dir = data_dir
        self.remote_log_system_enabled = remote_log_system_enabled
        self.default_config = default_config or LogConfig()
        self._fs = fs if fs is not None else FileSystem()
        self.health = IoHealth()  # failed file operations of every partition log, logged and counted
        self._fs.makedirs(data_dir)
        self._lock_fd = lock_data_dir(data_dir)
        self._closed = False
        try:
            self.node_id, self.cluster_id = self._load_meta(node_id, cluster_id)
            marker = self._path(naming.CLEAN_SHUTDOWN_FILE)
            self.clean_shutdown = self._fs.exists(marker)
            self._topics: dict[str, TopicInfo] = {}
            self._logs: dict[tuple[str, int], PartitionLog] = {}
            self.cleaner = LogCleaner(self._fs, data_dir, cleaner_dedupe_buffer_bytes)
            self._open_logs()
            if self.clean_shutdown:
                self._fs.remove(marker)
                self._fs.fsync_dir(data_dir)
            else:
                # Recovered logs were fsynced: record that, so the next crash does not rescan them.
                self.write_checkpoint(naming.RECOVERY_POINT_CHECKPOINT, self.recovery_points())
            # From now on a partition missing from it (created, then a crash) opens at its log start.
            self.write_checkpoint(naming.REPLICATION_OFFSET_CHECKPOINT, self.high_watermarks())
        except BaseException:
            self._unlock()
            raise

    # -- directory plumbing ------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return os.path.join(self.data_dir, name)

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            fd, self._lock_fd = self._lock_fd, -1
            unlock_data_dir(fd)

    def _load_meta(self, node_id: int, cluster_id: str | None) -> tuple[int, str]:
        """(node id, cluster id) from ``meta.properties``, written first if absent.

        A damaged file or one of another node or cluster raises `DataDirError`.
        A missing one is written anew (with a new cluster id unless one is given);
        if partition directories exist, that is logged, since their cluster id is lost.
        """
        path = self._path(naming.META_PROPERTIES)
        if self._fs.exists(path):
            props = parse_properties(self._fs.read_bytes(path).decode("utf-8", errors="replace"))
            fix = "restore it, or move it aside to let the broker write a new one"
            if props.get("version") != str(META_VERSION):
                raise DataDirError(f"{path}: unsupported or missing version {props.get('version')!r}; {fix}")
            stored_node = props.get("node.id")
            if stored_node is None or stored_node != str(node_id):
                raise DataDirError(
                    f"{path}: node.id={stored_node} but this broker is configured with node.id={node_id};"
                    f" start it with node.id={stored_node} or give it another data directory"
                )
            stored_cluster = props.get("cluster.id")
            if not stored_cluster:
                raise DataDirError(f"{path}: no cluster.id; {fix}")
            if cluster_id is not None and cluster_id != stored_cluster:
                raise DataDirError(f"{path}: cluster.id={stored_cluster} but {cluster_id} was requested")
            return node_id, stored_cluster
        if topic_registry.partition_dirs(self._fs, self.data_dir):
            log.warning("%s missing in a data directory with partitions: writing a new one", path)
        cluster = cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
        text = f"#\n#{stamp}\ncluster.id={cluster}\nnode.id={node_id}\nversion={META_VERSION}\n"
        self._fs.atomic_write(path, text.encode())
        return node_id, cluster

    def _read_checkpoint(self, name: str) -> dict[tuple[str, int], int] | None:
        path = self._path(name)
        try:
            return read_offsets(self._fs, path) if self._fs.exists(path) else None
        except CorruptCheckpointError as exc:
            log.warning("ignoring %s", exc)
            return None

    def _open_logs(self) -> None:
        recover = not self.clean_shutdown
        recovery_points = self._read_checkpoint(naming.RECOVERY_POINT_CHECKPOINT) or {}
        log_starts = self._read_checkpoint(naming.LOG_START_OFFSET_CHECKPOINT) or {}
        high_watermarks = self._read_checkpoint(naming.REPLICATION_OFFSET_CHECKPOINT)
        self._topics = topic_registry.read(self._fs, self.data_dir, self.default_config)
        wanted = {(t.name, p) for t in self._topics.values() for p in t.local_partitions}
        for name in self._fs.listdir(self.data_dir):
            path = self._path(name)
            if naming.is_delete_dir_name(name) and self._fs.isdir(path):
                self._fs.rmtree(path)
                continue
            parsed = naming.parse_partition_dir_name(name)
            if parsed is not None and parsed not in wanted and self._fs.isdir(path):
                log.warning("removing %s: its topic is not registered (interrupted delete)", path)
                self._fs.rmtree(path)
        for tp in sorted(wanted):
            self._logs[tp] = PartitionLog(
                self._path(naming.partition_dir_name(*tp)),
                self._topics[tp[0]].config,
                self._fs,
                recover=recover,
                recovery_point=recovery_points.get(tp, 0) if recover else None,
                log_start_offset=log_starts.get(tp),
                health=self.health,
                tiered=self._tiered(tp[0], self._topics[tp[0]].config),
            )
            self._apply_config(self._logs[tp], tp[0], self._topics[tp[0]].config)
            if high_watermarks is not None and not self._logs[tp].offline:
                self._logs[tp].restore_high_watermark(high_watermarks.get(tp, 0))
            if not self._logs[tp].offline and self._topics[tp[0]].topic_id != topic_ids.ZERO:
                self._check_partition_metadata(self._topics[tp[0]], self._logs[tp].directory)

    def _check_partition_metadata(self, info: TopicInfo, directory: str) -> None:
        """Make ``partition.metadata`` hold the registry's topic ID (written if missing or different)."""
        try:
            found = topic_ids.read_partition_metadata(self._fs, directory)
        except (ValueError, OSError) as exc:
            log.warning("%s; rewriting it with the registry's topic id", exc)
            found = None
        if found == info.topic_id:
            return
        if found is not None:
            log.warning(
                "%s: topic id %s differs from the registry's %s; keeping the registry's",
                topic_ids.metadata_path(directory),
                topic_ids.to_text(found),
                topic_ids.to_text(info.topic_id),
            )
        try:
            topic_ids.write_partition_metadata(self._fs, directory, info.topic_id)
        except OSError as exc:  # the log itself opened: it keeps serving, the file is written next start
            log.error("%s: cannot write: %s", topic_ids.metadata_path(directory), exc)

    # -- public API --------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        hosted: tuple[int, ...] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> None:
        """Register ``name`` with ``partitions`` empty logs and topic-level config overrides.

        ``hosted``: only these partitions get a local log (cluster mode: the
        replicas assigned to this broker); None: all of them. ``topic_id``: the
        ID the cluster gave the topic; None: a new one.

        Raises `KafkaError` with INVALID_TOPIC_EXCEPTION (bad name, or colliding with
        an existing topic once '.' and '_' are equated, as Kafka forbids),
        TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS or INVALID_CONFIG. With
        ``validate_only`` nothing is created.
        """
        self._check_open()
        topic_registry.check_new_topic(name, partitions, self._topics)
        given = {k: v for k, v in (configs or {}).items() if v is not None}
        try:
            config = LogConfig.from_topic_configs(given, self.default_config)
        except ValueError as exc:
            raise KafkaError(str(exc), code=ErrorCode.INVALID_CONFIG) from None
        if validate_only:
            return
        info = TopicInfo(
            name,
            partitions,
            {k: str(v) for k, v in given.items()},
            config,
            hosted,
            topic_id or topic_ids.new_topic_id(),
        )
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: info})
        self._topics[name] = info
        self._create_logs(info, info.local_partitions)

    def set_topic_id(self, name: str, topic_id: uuid.UUID) -> None:
        """Give ``topic_id`` to a topic registered without one (a registry older than topic IDs).

        Persisted in the registry and every local ``partition.metadata``.
        Raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION, or ValueError if the
        topic already has another ID (an ID is for life).
        """
        self._check_open()
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(f"unknown topic {name!r}", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if info.topic_id == topic_id:
            return
        if info.topic_id != topic_ids.ZERO or topic_id == topic_ids.ZERO:
            raise ValueError(f"topic {name} has id {topic_ids.to_text(info.topic_id)}, not {topic_id}")
        updated = replace(info, topic_id=topic_id)
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: updated})
        self._topics[name] = updated
        for p in info.local_partitions:
            partition_log = self._logs.get((name, p))
            if partition_log is not None and not partition_log.offline:
                self._check_partition_metadata(updated, partition_log.directory)
        log.info("topic %s: id %s", name, topic_ids.to_text(topic_id))

    def add_partitions(self, name: str, count: int, *, validate_only: bool = False) -> tuple[int, ...]:
        """Raise the partition count of ``name`` to ``count``; returns the new partitions' indexes.

        A topic whose every partition is local (single broker) gets empty logs
        for the new ones; one registered with only some hosted (cluster mode)
        just learns the count, and `host_partition` adds the replicas assigned
        here. Raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION or INVALID_PARTITIONS
        (Kafka's messages: a topic never shrinks).
        """
        self._check_open()
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(f"unknown topic {name!r}", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        check_partition_increase(name, info.partitions, count)
        added = tuple(range(info.partitions, count))
        if validate_only:
            return added
        updated = replace(info, partitions=count)
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: updated})
        self._topics[name] = updated
        if info.hosted is None:
            self._create_logs(updated, added)
        return added

    def host_partition(self, name: str, partition: int) -> PartitionLog:
        """Add a local replica of ``partition`` to a topic registered with only some hosted (cluster mode)."""
        self._check_open()
        info = self._topics[name]
        existing = self._logs.get((name, partition))
        if existing is not None:
            return existing
        if not 0 <= partition < info.partitions:
            raise KafkaError(
                f"{name} has no partition {partition}", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        hosted = tuple(sorted({*info.local_partitions, partition}))
        updated = replace(info, hosted=hosted)
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: updated})
        self._topics[name] = updated
        self._create_logs(updated, (partition,))
        return self._logs[(name, partition)]

    def unhost_partition(self, name: str, partition: int) -> None:
        """Remove the local replica of ``partition`` (cluster mode: a reassignment moved it away): the
        registry first, then its directory. The topic stays registered, even with no replica left."""
        self._check_open()
        info = self._topics.get(name)
        if info is None or partition not in info.local_partitions:
            raise KafkaError(f"no local replica of {name}-{partition}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        updated = replace(info, hosted=tuple(p for p in info.local_partitions if p != partition))
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: updated})
        self._topics[name] = updated
        self.cleaner.forget((name, partition))
        partition_log = self._logs.pop((name, partition), None)
        if partition_log is not None:
            partition_log.delete()

    def _create_logs(self, info: TopicInfo, partitions: tuple[int, ...]) -> None:
        for p in partitions:
            directory = self._path(naming.partition_dir_name(info.name, p))
            if self._fs.exists(directory):
                self._fs.rmtree(directory)  # stale leftovers of an earlier topic with this name
            plog = self._logs[(info.name, p)] = PartitionLog(
                directory, info.config, self._fs, health=self.health
            )
            self._apply_config(plog, info.name, info.config)
            topic_ids.write_partition_metadata(self._fs, directory, info.topic_id)
        self._fs.fsync_dir(self.data_dir)

    def delete_topic(self, name: str) -> None:
        """Unregister ``name`` and remove its partition directories; UNKNOWN_TOPIC_OR_PARTITION if absent."""
        self._check_open()
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(f"unknown topic {name!r}", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        remaining = {t: i for t, i in self._topics.items() if t != name}
        topic_registry.write(self._fs, self.data_dir, remaining)
        self._topics = remaining
        for p in info.local_partitions:
            self.cleaner.forget((name, p))
            partition_log = self._logs.pop((name, p), None)
            if partition_log is not None:
                partition_log.delete()

    def alter_topic_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> LogConfig:
        """Replace the topic-level overrides of ``name`` (persisted, applied to every partition log).

        Raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION or INVALID_CONFIG (message names the key).
        Segments already written keep their files; new settings apply from the next append/roll.
        """
        self._check_open()
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(f"unknown topic {name!r}", code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            config = LogConfig.from_topic_configs(overrides, self.default_config)
        except ValueError as exc:
            raise KafkaError(str(exc), code=ErrorCode.INVALID_CONFIG) from None
        if validate_only:
            return config
        updated = replace(info, configs=dict(overrides), config=config)
        topic_registry.write(self._fs, self.data_dir, {**self._topics, name: updated})
        self._topics[name] = updated
        for p in info.local_partitions:
            partition_log = self._logs.get((name, p))
            if partition_log is not None:
                self._apply_config(partition_log, name, config)
        return config

    def _tiered(self, name: str, config: LogConfig) -> bool:
        return config.remote_log_enabled(self.remote_log_system_enabled, name)

    def _apply_config(self, plog: PartitionLog, name: str, config: LogConfig) -> None:
        plog.config = config
        plog.set_tiered(self._tiered(name, config), copy_enabled=not config.remote_log_copy_disable)

    def set_default_config(self, default_config: LogConfig) -> None:
        """New broker defaults (a dynamic broker config changed): every topic's config is rebuilt from
        its own overrides over them, so topics without an override of a key follow the new default
        at once (retention from its next check, segment size from the next append). A topic whose
        overrides no longer combine with the defaults keeps its current config (logged)."""
        self._check_open()
        self.default_config = default_config
        for name, info in list(self._topics.items()):
            try:
                config = LogConfig.from_topic_configs(info.configs, default_config)
            except ValueError as exc:
                log.error("topic %s keeps its configuration: %s", name, exc)
                continue
            if config == info.config and config.extra == info.config.extra:
                continue
            self._topics[name] = replace(info, config=config)
            for p in info.local_partitions:
                partition_log = self._logs.get((name, p))
                if partition_log is not None:
                    self._apply_config(partition_log, name, config)

    @property
    def fs(self) -> FileSystem:
        return self._fs

    @property
    def closed(self) -> bool:
        return self._closed

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def topics(self) -> dict[str, TopicInfo]:
        """A copy of the registry."""
        return dict(self._topics)

    def topic_overrides(self, name: str) -> dict[str, str]:
        """The topic-level configs of ``name`` as given ({} for a topic not registered here)."""
        info = self._topics.get(name)
        return info.configs if info is not None else {}

    def logs(self) -> Iterator[tuple[tuple[str, int], PartitionLog]]:
        """Every ``((topic, partition), log)`` (a snapshot)."""
        return iter(list(self._logs.items()))

    def recovery_points(self) -> dict[tuple[str, int], int]:
        """Every log's recovery point (loop thread), for ``recovery-point-offset-checkpoint``."""
        return {tp: lg.recovery_point for tp, lg in self._logs.items()}

    def log_start_offsets(self) -> dict[tuple[str, int], int]:
        """Every log's start offset (loop thread), for ``log-start-offset-checkpoint``."""
        return {tp: lg.log_start_offset for tp, lg in self._logs.items()}

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """Every log's high watermark (loop thread), for ``replication-offset-checkpoint``."""
        return {tp: lg.high_watermark for tp, lg in self._logs.items()}

    def cleaner_offsets(self) -> dict[tuple[str, int], int]:
        """Cleaner offsets of existing logs (loop thread), for ``cleaner-offset-checkpoint``."""
        return self.cleaner.checkpoint_data(self._logs)

    def write_checkpoint(self, name: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Atomically write the offset checkpoint ``name`` (any thread; callers serialise writes of one file)."""
        write_offsets(self._fs, self._path(name), offsets)

    def checkpoint(self) -> None:
        """Write the recovery-point, log-start-offset, cleaner-offset and HW checkpoints (loop thread)."""
        self.write_checkpoint(naming.RECOVERY_POINT_CHECKPOINT, self.recovery_points())
        self.write_checkpoint(naming.REPLICATION_OFFSET_CHECKPOINT, self.high_watermarks())
        self.write_checkpoint(naming.LOG_START_OFFSET_CHECKPOINT, self.log_start_offsets())
        self.write_checkpoint(naming.CLEANER_OFFSET_CHECKPOINT, self.cleaner_offsets())

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply every online log's retention (loop thread); returns the number of segments deleted.

        A log whose deletion fails goes offline (logged); the others carry on.
        """
        deleted = 0
        for tp, partition_log in list(self._logs.items()):
            if partition_log.offline:
                continue
            try:
                deleted += partition_log.delete_old_segments(now_ms)
            except KafkaStorageError as exc:
                log.error("retention of %s-%d failed: %s", tp[0], tp[1], exc)
        return deleted

    def take_expired_deletions(self, now_ms: int | None = None) -> list[str]:
        """`.deleted` files whose ``file.delete.delay.ms`` has passed, from every log (loop thread)."""
        return [p for _, lg in self._logs.items() for p in lg.take_expired_deletions(now_ms)]

    def flush_all(self) -> None:
        """Flush every online log, then checkpoint recovery points. Raises the first `KafkaStorageError`."""
        first_error: KafkaStorageError | None = None
        logs = list(self._logs.items())
        for _, partition_log in logs:
            if partition_log.offline:
                continue
            try:
                partition_log.flush()
            except KafkaStorageError as exc:
                first_error = first_error or exc
        write_offsets(
            self._fs, self._path(naming.RECOVERY_POINT_CHECKPOINT), {tp: lg.recovery_point for tp, lg in logs}
        )
        if first_error is not None:
            raise first_error

    def close(self) -> None:
        """Close every log (trim indexes, fsync), write checkpoints and, if all went well, the clean-shutdown marker."""
        if self._closed:
            return
        self._closed = True
        try:
            clean = True
            for _, partition_log in list(self._logs.items()):
                try:
                    partition_log.close()
                except (OSError, KafkaStorageError) as exc:
                    log.error("closing %s: %s", partition_log.directory, exc)
                    clean = False
                clean = clean and not partition_log.offline
            self.checkpoint()
            if clean:
                self._fs.atomic_write(self._path(naming.CLEAN_SHUTDOWN_FILE), b"")
        finally:
            self._unlock()

    def abandon(self) -> None:
        """Simulate a crash (fault injection for tests): drop every descriptor and the lock without
        trimming, fsyncing, checkpointing or writing the clean-shutdown marker."""
        if self._closed:
            return
        self._closed = True
        for _, partition_log in list(self._logs.items()):
            partition_log.abandon()
        self._unlock()

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError("log manager is closed")

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lock_data_dir(data_dir: str) -> int:
    """Take the data directory's ``.lock`` (flock, exclusive); `LogDirLockedError` if another process has it."""
    fd = os.open(os.path.join(data_dir, naming.LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLockedError(
            f"data directory {data_dir} is in use by another broker (could not lock {naming.LOCK_FILE})"
        ) from None
    return fd


def unlock_data_dir(fd: int) -> None:
    """Release and close a descriptor from `lock_data_dir`."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def parse_properties(text: str) -> dict[str, str]:
    """Java properties text (the simple subset Kafka writes): ``key=value`` lines, ``#``/``!`` comments."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
        else:
            props[line[:sep].strip()] = line[sep + 1 :].strip()
    return props
