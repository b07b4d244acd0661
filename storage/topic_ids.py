"""Topic IDs: Kafka's 16-byte topic UUIDs, their text form and the ``partition.metadata`` file.

A topic gets a random ID when it is created, and keeps it for life: a topic
deleted and created again under the same name has a new one, which is how
clients and replicas tell the two apart (UNKNOWN_TOPIC_ID, stale replicas).

Text form (registry, ZooKeeper, ``partition.metadata``): the 16 bytes in
URL-safe base64 without padding, 22 characters, as Kafka's ``Uuid.toString``.
Kafka never hands out the zero UUID (it means "no ID" on the wire), nor the
one it reserves for its metadata topic (``int=1``), nor an ID whose text
starts with '-' (it would read as a command-line option).

``<topic>-<partition>/partition.metadata``, as Kafka writes it (no final newline)::

    version: 0
    topic_id: <text form>
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import uuid

from storage import naming
from storage.fs import FileSystem

ZERO = uuid.UUID(int=0)
METADATA_TOPIC_ID = uuid.UUID(int=1)
PARTITION_METADATA_VERSION = 0

_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")
_LINE = re.compile(r"([a-z_]+):\s+(\S+)")


def new_topic_id() -> uuid.UUID:
    """A random ID Kafka would accept as a topic's."""
    while True:
        topic_id = uuid.uuid4()
        if topic_id not in (ZERO, METADATA_TOPIC_ID) and not to_text(topic_id).startswith("-"):
            return topic_id


def to_text(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def from_text(text: str) -> uuid.UUID:
    """The UUID of a text form; ValueError unless it is 22 base64url characters."""
    if not isinstance(text, str) or not _TEXT.fullmatch(text):
        raise ValueError(f"not a topic id: {text!r}")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except (binascii.Error, ValueError):
        raise ValueError(f"not a topic id: {text!r}") from None


def metadata_path(partition_dir: str) -> str:
    return os.path.join(partition_dir, naming.PARTITION_METADATA)


def write_partition_metadata(fs: FileSystem, partition_dir: str, topic_id: uuid.UUID) -> None:
    """Write ``partition.metadata`` atomically and durably."""
    text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {to_text(topic_id)}"
    fs.atomic_write(metadata_path(partition_dir), text.encode("ascii"))


def read_partition_metadata(fs: FileSystem, partition_dir: str) -> uuid.UUID | None:
    """The topic ID in ``partition.metadata``; None if there is no such file.

    Raises ValueError (saying what is wrong) if the file is not Kafka's format
    or holds the zero ID. Like Kafka, any version from 0 up is read (a newer
    one keeps these two lines).
    """
    path = metadata_path(partition_dir)
    if not fs.exists(path):
        return None
    fields = {}
    for line in fs.read_bytes(path).decode("utf-8", errors="replace").splitlines():
        match = _LINE.fullmatch(line.strip())
        if match is None:
            raise ValueError(f"{path}: malformed line {line!r}")
        fields[match.group(1)] = match.group(2)
    if not fields.get("version", "").isdigit():
        raise ValueError(f"{path}: unsupported version {fields.get('version')!r}")
    topic_id = from_text(fields.get("topic_id", ""))
    if topic_id == ZERO:
        raise ValueError(f"{path}: the zero topic id")
    return topic_id
