"""A leader copying its closed segments to the object store (Kafka's RLMCopyTask).

Rules, as Kafka's:

- When a partition gets a new leader (or leader epoch), the copied offset is
  found again from the remote metadata (`highest_remote_offset`): walking the
  leader-epoch cache from the newest epoch down, the first epoch E the remote
  metadata has segments for gives min(highest remote offset of E, end of E in
  this log - 1). Segments copied by an earlier leader past this log's lineage
  are not counted.
- Each pass copies, oldest first, every segment whose records are all below
  the last stable offset (the next segment's base <= LSO; the active segment
  never), from the one holding max(copied offset + 1, log start offset). A
  segment whose producer snapshot is still being written (the broker writes
  it in the background when the segment rolls) waits for the next pass, with
  the ones after it: Kafka takes the snapshot as it rolls, so it is always
  there to be copied.
- One segment: a random segment id; COPY_SEGMENT_STARTED published (and read
  back); the `.log`, indexes, the producer snapshot at the segment's end and
  the leader-epoch checkpoint text of the epochs below its end uploaded;
  COPY_SEGMENT_FINISHED published; only then the log's highest remote offset
  moves (so local retention may delete the segment). A failed upload deletes
  what it wrote (DELETE_SEGMENT_STARTED, objects, DELETE_SEGMENT_FINISHED, best
  effort) and the next pass copies the segment again under a new id.
- The pass stops at once when this broker stops leading the partition or its
  leader epoch changes. A leader deposed in the middle of an upload does not
  publish COPY_SEGMENT_FINISHED: it deletes what it uploaded (the new leader,
  which counts only finished segments, copies those offsets again; finishing
  late could make them FINISHED twice). Kafka finishes it regardless.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from broker.replica.markers import last_stable_offset
from broker.tiered.metadata_records import (
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)
from broker.tiered.reader import segment_ref
from broker.tiered.segment_store import SegmentFiles
from storage import naming

if TYPE_CHECKING:
    from broker.replica.partition import Partition
    from broker.tiered.context import RemoteLog
    from broker.tiered.metadata_cache import RemoteLogMetadataCache
    from storage.leader_epoch import LeaderEpochCache
    from storage.segment import LogSegment

log = logging.getLogger("minikafka.tiered")


@dataclass
class LeaderState:
    """What a leader's copy task knows of one partition, for one leader epoch."""

    tip: TopicIdPartition
    leader_epoch: int
    copied_offset: int = -1
    being_copied: set[uuid.UUID] = field(default_factory=set)


def highest_remote_offset(
    epochs: LeaderEpochCache, log_end_offset: int, cache: RemoteLogMetadataCache
) -> int:
    """The highest offset of this log's lineage already copied (-1: none), as Kafka's
    findHighestRemoteOffset."""
    for epoch, _ in reversed(epochs.entries):
        highest = cache.highest_offset_for_epoch(epoch)
        if highest is None:
            continue
        _, end = epochs.end_offset_for(epoch, log_end_offset)
        return end - 1 if end <= highest else highest
    return -1


def epochs_in_range(epochs: LeaderEpochCache, start: int, end: int) -> tuple[tuple[int, int], ...]:
    """The leader epochs of offsets [start, end): (epoch, first offset), the first clamped to ``start``."""
    out: list[tuple[int, int]] = []
    for epoch, offset in epochs.entries:
        if offset >= end:
            break
        if offset <= start:
            out = [(epoch, start)]
        else:
            out.append((epoch, offset))
    return tuple(out)


def epoch_checkpoint_text(epochs: LeaderEpochCache, end: int) -> bytes:
    """Kafka's leader-epoch-checkpoint file text of the epochs starting below ``end``."""
    entries = [(e, o) for e, o in epochs.entries if o < end]
    lines = ["0", str(len(entries)), *(f"{e} {o}" for e, o in entries)]
    return ("\n".join(lines) + "\n").encode()


def still_leading(part: Partition, state: LeaderState) -> bool:
    return part.is_leader and part.leader_epoch == state.leader_epoch and not part.log.closed


async def copy_pass(rlm: RemoteLog, part: Partition, state: LeaderState) -> int:
    """Copy what is ready; returns the number of segments copied."""
    plog = part.log
    remote = plog.remote
    if remote is None or not remote.copy_enabled:
        return 0
    lso = last_stable_offset(part)
    if lso <= 0 or state.copied_offset >= lso - 1:
        return 0
    start = max(state.copied_offset + 1, plog.log_start_offset)
    segments = plog.segments
    copied = 0
    for seg, nxt in zip(segments, segments[1:], strict=False):
        if nxt.base_offset <= start:
            continue
        if nxt.base_offset > lso:
            break
        if not still_leading(part, state) or nxt.base_offset in part.snapshots_pending:
            break
        if not await _copy_segment(rlm, part, state, seg, nxt.base_offset):
            break
        copied += 1
    return copied


async def _copy_segment(
    rlm: RemoteLog, part: Partition, state: LeaderState, seg: LogSegment, next_base: int
) -> bool:
    """Copy one segment (see the module docstring); False if this broker stopped leading meanwhile."""
    plog = part.log
    epochs = plog.leader_epochs
    segment_id = uuid.uuid4()
    md = SegmentMetadata(
        tip=state.tip,
        segment_id=segment_id,
        start_offset=seg.base_offset,
        end_offset=next_base - 1,
        broker_id=rlm.node_id,
        max_timestamp_ms=seg.largest_timestamp,
        event_timestamp_ms=_now_ms(),
        segment_leader_epochs=epochs_in_range(epochs, seg.base_offset, next_base),
        size_in_bytes=seg.size,
        custom_metadata=None,
        state=SegmentState.COPY_SEGMENT_STARTED,
    )
    log_path, index_path, time_path, txn_path = seg.file_paths()
    snapshot = Path(naming.snapshot_file(plog.directory, next_base))
    try:
        snapshot_bytes = snapshot.read_bytes()
    except FileNotFoundError:
        # a segment rolled before the topic was tiered: no snapshot was kept for it
        log.warning("%s: no producer snapshot at %d; copying %s without one", plog.directory, next_base, seg)
        snapshot_bytes = b""
    files = SegmentFiles(
        log=Path(log_path),
        offset_index=Path(index_path),
        time_index=Path(time_path),
        txn_index=Path(txn_path) if seg.txn_index.exists else None,
        producer_snapshot=snapshot_bytes,
        leader_epochs=epoch_checkpoint_text(epochs, next_base),
    )
    state.being_copied.add(segment_id)
    try:
        await rlm.metadata.publish(md)
        rlm.metrics.copy_requests += 1
        try:
            await rlm.segments.copy(segment_ref(md), files)
        except BaseException:
            rlm.metrics.copy_errors += 1
            await rlm.delete_segment(md, best_effort=True)
            raise
        if not part.is_leader or plog.closed:
            # deposed during the upload: the new leader does not count this segment (not FINISHED) and
            # copies its offsets itself; finishing it now could make them FINISHED twice
            log.info(
                "%s: no longer leading; deleting the upload of [%d, %d]",
                plog.directory,
                seg.base_offset,
                next_base - 1,
            )
            await rlm.delete_segment(md, best_effort=True)
            return False
        await rlm.metadata.publish(
            SegmentMetadataUpdate(
                state.tip, segment_id, rlm.node_id, _now_ms(), None, SegmentState.COPY_SEGMENT_FINISHED
            )
        )
    finally:
        state.being_copied.discard(segment_id)
    rlm.metrics.copy_bytes += md.size_in_bytes
    state.copied_offset = md.end_offset
    if plog.remote is not None:
        plog.remote.update_highest(md.end_offset)
    log.debug("%s: segment [%d, %d] copied as %s", plog.directory, md.start_offset, md.end_offset, segment_id)
    return True


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
