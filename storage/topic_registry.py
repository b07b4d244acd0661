"""The topic registry, ``<data-dir>/__minikafka_topics.json``: reading, writing and rebuilding it.

Format (replaced atomically on every create, delete and config change, the
commit point of each)::

    {"version": 1, "topics": {"<name>": {"partitions": <n>, "topic_id": "<base64>",
                                         "configs": {"<key>": "<value>", ...}, "hosted": [<p>, ...]}}}

``configs`` holds the topic-level overrides as given (strings). ``hosted``
(cluster mode) lists the partitions whose replicas live in this data
directory; without it every partition 0..n-1 does. ``topic_id`` is the
topic's ID in Kafka's text form (`storage.topic_ids`); each partition
directory keeps a copy in its ``partition.metadata``. A registry written
before topic IDs existed has none: `read` takes the ID found in the topic's
partition directories, else leaves it ZERO for the cluster to assign
(`LogManager.set_topic_id`): the ID is the cluster's to decide, not the disk's.

The partition directories (``<topic>-<partition>``) are the other record of
which topics exist, so the registry can always be rebuilt from them (IDs from
their ``partition.metadata``), with the topic configs lost:

- a missing registry (first start after a crash before it was written, or
  deleted by hand) is rebuilt from the directories at open, with a warning;
- an unreadable one (empty, cut short, not JSON, wrong shape) stops the broker
  with `DataDirError`, one line pointing at `rebuild`
  (``minikafka broker --rebuild-registry``): silently dropping configs, or
  worse, treating every directory as an interrupted delete, would lose data.

`rebuild` keeps the damaged file aside (``.damaged-<UTC time>``), salvages the
configs of every topic whose entry in it still parses, and reports the topics
whose configs it could not recover.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from protocol.errors import ErrorCode, KafkaError
from storage import naming, topic_ids
from storage.config import LogConfig
from storage.errors import DataDirError
from storage.fs import FileSystem

log = logging.getLogger(__name__)

TOPICS_FILE_VERSION = 1
MAX_PARTITIONS = 100_000


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as registered: ID, partition count, overrides as given, and the effective config."""

    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    config: LogConfig = field(default_factory=LogConfig)
    hosted: tuple[int, ...] | None = None  # partitions with a local replica (None: all)
    topic_id: uuid.UUID = topic_ids.ZERO  # ZERO: registered before topic IDs, none assigned yet

    @property
    def local_partitions(self) -> tuple[int, ...]:
        return tuple(range(self.partitions)) if self.hosted is None else self.hosted


@dataclass(frozen=True)
class RebuildReport:
    """What `rebuild` did: the topics it registered, whose configs it kept, and where the old file went."""

    topics: dict[str, int]  # name -> partition count
    configs_recovered: list[str]
    configs_lost: list[
        str
    ]  # topics with no readable entry in the damaged file (their overrides, if any, are gone)
    damaged_copy: str | None


def _parse(data: bytes, default_config: LogConfig) -> dict[str, TopicInfo]:
    """The registry's topics; ValueError (with a short reason) if it is not what `write` writes."""
    if not data.strip():
        raise ValueError("the file is empty")
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != TOPICS_FILE_VERSION:
        raise ValueError(f"unsupported version {doc.get('version') if isinstance(doc, dict) else doc!r}")
    entries = doc.get("topics")
    if not isinstance(entries, dict):
        raise ValueError("no topics object")
    return {name: _entry(name, entry, default_config) for name, entry in entries.items()}


def _entry(name: str, entry: object, default_config: LogConfig) -> TopicInfo:
    try:
        if not isinstance(entry, dict) or naming.topic_name_error(name) is not None:
            raise ValueError("not a topic entry")
        partitions = entry["partitions"]
        if not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions {partitions!r}")
        configs = {str(k): str(v) for k, v in (entry.get("configs") or {}).items()}
        hosted = entry.get("hosted")
        if hosted is not None and (
            not isinstance(hosted, list)
            or not all(isinstance(h, int) and 0 <= h < partitions for h in hosted)
        ):
            raise ValueError(f"hosted {hosted!r}")
        text_id = entry.get("topic_id")
        topic_id = topic_ids.ZERO if text_id is None else topic_ids.from_text(text_id)
        config = LogConfig.from_topic_configs(configs, default_config)
        hosted_tuple = None if hosted is None else tuple(sorted(hosted))
        return TopicInfo(name, partitions, configs, config, hosted_tuple, topic_id)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"topic {name!r}: {exc}") from None


def check_new_topic(name: str, partitions: int, existing: Iterable[str]) -> None:
    """Kafka's checks for a new topic name and partition count against the ``existing`` topics.

    Raises `KafkaError`: INVALID_TOPIC_EXCEPTION (illegal name, or equal to an
    existing one once '.' and '_' are equated, as Kafka forbids),
    TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS (outside [1, MAX_PARTITIONS]).
    """
    error = naming.topic_name_error(name)
    if error is not None:
        raise KafkaError(error, code=ErrorCode.INVALID_TOPIC_EXCEPTION)
    names = set(existing)
    if name in names:
        raise KafkaError(f"topic {name!r} already exists", code=ErrorCode.TOPIC_ALREADY_EXISTS)
    collision = name.replace(".", "_")
    for other in names:
        if other.replace(".", "_") == collision:
            raise KafkaError(
                f"topic {name!r} collides with existing topic {other!r}",
                code=ErrorCode.INVALID_TOPIC_EXCEPTION,
            )
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise KafkaError(
            f"number of partitions must be in [1, {MAX_PARTITIONS}], got {partitions}",
            code=ErrorCode.INVALID_PARTITIONS,
        )


def check_partition_increase(name: str, current: int, count: int) -> None:
    """Kafka's checks for CreatePartitions: INVALID_PARTITIONS unless current < count <= MAX_PARTITIONS."""
    if count == current:
        raise KafkaError(f"Topic {name} already has {current} partitions.", code=ErrorCode.INVALID_PARTITIONS)
    if count < current:
        raise KafkaError(
            f"Topic {name} currently has {current} partitions, which is higher than the requested {count}.",
            code=ErrorCode.INVALID_PARTITIONS,
        )
    if count > MAX_PARTITIONS:
        raise KafkaError(
            f"number of partitions must be at most {MAX_PARTITIONS}, got {count}",
            code=ErrorCode.INVALID_PARTITIONS,
        )


def read(fs: FileSystem, data_dir: str, default_config: LogConfig) -> dict[str, TopicInfo]:
    """The registered topics; rebuilt from the partition directories if the file is missing.

    Raises `DataDirError` if the file is there but unreadable.
    """
    path = os.path.join(data_dir, naming.TOPICS_FILE)
    if not fs.exists(path):
        topics = from_dirs(fs, data_dir, default_config)
        if topics:
            log.warning("%s missing: rebuilt the topic list from partition directories", path)
        return topics
    try:
        topics = _parse(fs.read_bytes(path), default_config)
    except ValueError as exc:
        raise DataDirError(
            f"topic registry {path} is damaged ({exc}); rebuild it from the partition directories with "
            f"`minikafka broker --rebuild-registry` and the same data directory"
        ) from None
    for info in topics.values():
        if info.topic_id == topic_ids.ZERO:
            found = _id_from_dirs(fs, data_dir, info.name, info.local_partitions)
            if found is not None:
                topics[info.name] = replace(info, topic_id=found)
    return topics


def _id_from_dirs(fs: FileSystem, data_dir: str, name: str, partitions: Iterable[int]) -> uuid.UUID | None:
    """The ID in the first readable ``partition.metadata`` of the topic's partitions, if any."""
    for p in partitions:
        directory = os.path.join(data_dir, naming.partition_dir_name(name, p))
        try:
            found = topic_ids.read_partition_metadata(fs, directory)
        except (ValueError, OSError):
            continue
        if found is not None:
            return found
    return None


def partition_dirs(fs: FileSystem, data_dir: str) -> dict[str, set[int]]:
    """{topic: partition numbers} of the ``<topic>-<partition>`` directories."""
    found: dict[str, set[int]] = {}
    for name in fs.listdir(data_dir):
        parsed = naming.parse_partition_dir_name(name)
        if parsed is not None and fs.isdir(os.path.join(data_dir, name)):
            found.setdefault(parsed[0], set()).add(parsed[1])
    return found


def _from_dir(
    fs: FileSystem, data_dir: str, name: str, partitions: set[int], default_config: LogConfig
) -> TopicInfo:
    """A topic as its directories show it: count = highest partition + 1, ``hosted`` if some are
    missing, the ID of their ``partition.metadata`` (ZERO if none has one)."""
    count = max(partitions) + 1
    hosted = None if len(partitions) == count else tuple(sorted(partitions))
    topic_id = _id_from_dirs(fs, data_dir, name, sorted(partitions)) or topic_ids.ZERO
    return TopicInfo(name, count, {}, default_config, hosted, topic_id)


def from_dirs(fs: FileSystem, data_dir: str, default_config: LogConfig) -> dict[str, TopicInfo]:
    """Topics, IDs and partition counts from the partition directories, with no overrides."""
    return {
        t: _from_dir(fs, data_dir, t, ps, default_config) for t, ps in partition_dirs(fs, data_dir).items()
    }


def write(fs: FileSystem, data_dir: str, topics: Mapping[str, TopicInfo]) -> None:
    """Replace the registry atomically and durably."""
    doc = {
        "version": TOPICS_FILE_VERSION,
        "topics": {
            t.name: {
                "partitions": t.partitions,
                "topic_id": topic_ids.to_text(t.topic_id),
                "configs": dict(sorted(t.configs.items())),
            }
            | ({} if t.hosted is None else {"hosted": list(t.hosted)})
            for t in sorted(topics.values(), key=lambda t: t.name)
        },
    }
    fs.atomic_write(os.path.join(data_dir, naming.TOPICS_FILE), (json.dumps(doc, indent=1) + "\n").encode())


def _salvage(data: bytes, default_config: LogConfig) -> dict[str, TopicInfo]:
    """The entries of a damaged registry that still parse one by one (none if it is not a JSON object)."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    entries = doc.get("topics") if isinstance(doc, dict) else None
    salvaged = {}
    for name, entry in (entries if isinstance(entries, dict) else {}).items():
        try:
            salvaged[name] = _entry(name, entry, default_config)
        except ValueError:
            continue
    return salvaged


def rebuild(fs: FileSystem, data_dir: str, default_config: LogConfig | None = None) -> RebuildReport:
    """Write a registry with every topic that has partition directories, keeping the old file aside.

    Partition counts come from the directories (the highest partition number
    + 1); configs from the old file's entries that still parse, for topics whose
    count agrees with it. The caller must hold the data directory's lock.
    """
    default_config = default_config or LogConfig()
    path = os.path.join(data_dir, naming.TOPICS_FILE)
    old: dict[str, TopicInfo] = {}
    damaged_copy = None
    if fs.exists(path):
        data = fs.read_bytes(path)
        old = _salvage(data, default_config)
        damaged_copy = f"{path}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        fs.atomic_write(damaged_copy, data)
    topics: dict[str, TopicInfo] = {}
    recovered, lost = [], []
    for name, found in sorted(partition_dirs(fs, data_dir).items()):
        kept = old.get(name)
        if kept is not None and found <= set(kept.local_partitions):
            if kept.topic_id == topic_ids.ZERO:
                found_id = _id_from_dirs(fs, data_dir, name, sorted(found))
                kept = replace(kept, topic_id=found_id or topic_ids.ZERO)
            topics[name] = kept
            recovered.append(name)
        else:
            topics[name] = _from_dir(fs, data_dir, name, found, default_config)
            lost.append(name)
    write(fs, data_dir, topics)
    return RebuildReport({t.name: t.partitions for t in topics.values()}, recovered, lost, damaged_copy)
