"""Kafka's text checkpoint files.

Format (UTF-8, '\\n' line ends)::

    0                 version
    <count>           number of entry lines
    <entry>           count lines, fields separated by one space

- Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``):
  entries ``<topic> <partition> <offset>``.
- ``leader-epoch-checkpoint`` (per partition): entries ``<epoch> <startOffset>``.

Files are replaced atomically (`FileSystem.atomic_write`). A malformed file raises
`CorruptCheckpointError`; callers fall back to recovering without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from storage.fs import FileSystem

VERSION = 0


class CorruptCheckpointError(ValueError):
    """A checkpoint file does not follow the format above."""


def format_checkpoint(entries: Iterable[tuple[object, ...]]) -> bytes:
    lines = [" ".join(str(field) for field in entry) for entry in entries]
    return ("\n".join([str(VERSION), str(len(lines)), *lines]) + "\n").encode()


def parse_checkpoint(data: bytes, fields: int, path: str = "<checkpoint>") -> list[list[str]]:
    """Entry lines of a checkpoint, each split into exactly ``fields`` fields."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"{path}: not UTF-8") from exc
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or lines[0].strip() != str(VERSION):
        raise CorruptCheckpointError(f"{path}: missing or unsupported version line")
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(f"{path}: bad count line {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:]]
    if count != len(entries):
        raise CorruptCheckpointError(f"{path}: count says {count} entries, found {len(entries)}")
    for entry in entries:
        if len(entry) != fields:
            raise CorruptCheckpointError(f"{path}: bad entry {' '.join(entry)!r}")
    return entries


def write_offsets(fs: FileSystem, path: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Atomically write ``{(topic, partition): offset}`` as an offset checkpoint."""
    fs.atomic_write(path, format_checkpoint((t, p, o) for (t, p), o in sorted(offsets.items())))


def read_offsets(fs: FileSystem, path: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` from an offset checkpoint; {} if the file is absent."""
    if not fs.exists(path):
        return {}
    out: dict[tuple[str, int], int] = {}
    for topic, partition, offset in parse_checkpoint(fs.read_bytes(path), 3, path):
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CorruptCheckpointError(f"{path}: bad entry {topic} {partition} {offset}") from None
    return out
