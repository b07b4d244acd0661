"""The per-partition leader epoch cache and its ``leader-epoch-checkpoint`` file.

Entries ``(epoch, start_offset)``: the first offset written under each leader
epoch, both strictly increasing. The file (see `storage.checkpoint`) is
``0\\n<count>\\n<epoch> <startOffset>\\n...``, rewritten atomically whenever an
entry is added or removed. After a crash the log is the truth: recovery drops
entries at or past the recovered log end offset and adds any epoch found in the
recovered batches' partitionLeaderEpoch fields.
"""

from __future__ import annotations

import logging
from bisect import bisect_right

from storage.checkpoint import CorruptCheckpointError, format_checkpoint, parse_checkpoint
from storage.fs import FileSystem

log = logging.getLogger(__name__)


def parse_epoch_checkpoint(data: bytes, source: str) -> list[tuple[int, int]]:
    """The ``(epoch, start offset)`` entries of a leader-epoch checkpoint's text (the file, or the
    copy a remote segment carries); `CorruptCheckpointError` unless both strictly increase (a start
    offset may repeat: an epoch with no records)."""
    entries: list[tuple[int, int]] = []
    for epoch_s, start_s in parse_checkpoint(data, 2, source):
        try:
            epoch, start = int(epoch_s), int(start_s)
        except ValueError:
            raise CorruptCheckpointError(f"{source}: bad entry {epoch_s} {start_s}") from None
        if entries and (epoch <= entries[-1][0] or start < entries[-1][1]):
            raise CorruptCheckpointError(f"{source}: entries not increasing at {epoch} {start}")
        entries.append((epoch, start))
    return entries


class LeaderEpochCache:
    """(epoch, start offset) pairs of one partition, persisted to ``path``."""

    def __init__(self, fs: FileSystem, path: str) -> None:
        self._fs = fs
        self.path = path
        self._entries: list[tuple[int, int]] = []
        self.loaded_cleanly = True
        if fs.exists(path):
            try:
                self._entries = parse_epoch_checkpoint(fs.read_bytes(path), path)
            except CorruptCheckpointError as exc:
                log.warning("ignoring corrupt leader epoch checkpoint: %s", exc)
                self.loaded_cleanly = False
        else:
            self.loaded_cleanly = False

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, -1 if none."""
        return self._entries[-1][0] if self._entries else -1

    def assign(self, epoch: int, start_offset: int, *, persist: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` if it is newer than the latest; True if added.

        An epoch older than the latest is a `ValueError` (a stale leader must not append).
        """
        if epoch < 0:
            return False
        if self._entries:
            latest, latest_start = self._entries[-1]
            if epoch == latest:
                return False
            if epoch < latest:
                raise ValueError(f"leader epoch {epoch} is older than the latest recorded epoch {latest}")
            if start_offset < latest_start:
                raise ValueError(
                    f"epoch {epoch} start offset {start_offset} is before epoch {latest}'s start"
                )
        self._entries.append((epoch, start_offset))
        if persist:
            self.flush()
        return True

    def replace(self, entries: list[tuple[int, int]]) -> None:
        """The cache becomes ``entries`` (from `parse_epoch_checkpoint`), persisted: a follower
        rebuilding from remote storage takes the leader epochs of the remote segment below its new
        log start (Kafka's LeaderEpochFileCache.assign of the segment's checkpoint)."""
        self._entries = list(entries)
        self.flush()

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        keep = [e for e in self._entries if e[1] < end_offset]
        if keep != self._entries:
            self._entries = keep
            self.flush()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch, as Kafka's LeaderEpochFileCache.endOffsetFor answers it.

        - ``epoch`` -1, or newer than every recorded epoch: ``(-1, -1)``;
        - the latest epoch: ``(epoch, log_end_offset)``;
        - otherwise ``(largest epoch <= epoch, start offset of the next epoch)``, and when
          every recorded epoch is newer (the log starts after the data of ``epoch`` was
          removed) ``(epoch, start offset of the first recorded epoch)``.
        """
        entries = self._entries
        if epoch < 0 or not entries or epoch > entries[-1][0]:
            return -1, -1
        if epoch == entries[-1][0]:
            return epoch, log_end_offset
        i = bisect_right([e for e, _ in entries], epoch)
        following = entries[i][1]
        return (entries[i - 1][0] if i else epoch), following

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch under which ``offset`` was written (largest start offset <= it), -1 if none."""
        i = bisect_right([start for _, start in self._entries], offset)
        return self._entries[i - 1][0] if i else -1

    def flush(self) -> None:
        """Atomically rewrite the checkpoint file."""
        self._fs.atomic_write(self.path, format_checkpoint(self._entries))
