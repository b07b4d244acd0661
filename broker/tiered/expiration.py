"""A leader deleting remote segments past retention (Kafka's RLMExpirationTask).

Each pass, over the partition's listed remote segments in offset order:

- a segment this leader is copying stops the pass;
- a segment in DELETE_SEGMENT_STARTED (an interrupted deletion) is deleted again;
- a segment entirely below the log start offset is deleted (log-start breach:
  DeleteRecords, or an earlier pass);
- else, with ``retention.ms`` >= 0, a segment whose largest timestamp is at
  least that old is deleted; with ``retention.bytes`` >= 0, while the
  partition's total size (local segments not yet remote + finished remote
  segments) exceeds it by at least the segment's size, the segment is deleted;
- the first segment kept ends the pass.

A segment left in COPY_SEGMENT_STARTED by another leader (one that died or
lost leadership in the middle of an upload; nobody finishes it, the new leader
copies its offsets again under a new id) is judged like any other: it goes,
with whatever objects the upload left, when the log start offset passes it or
retention.ms/bytes take it, as in Kafka's RLMExpirationTask. It never stops the
pass (it did: a dead leader's segment then held every later one back forever).

Before deleting for time or size, the log start offset moves past the last
segment deleted (consumers then get OFFSET_OUT_OF_RANGE below it, never a
half-deleted segment). Each deletion is DELETE_SEGMENT_STARTED, the objects,
DELETE_SEGMENT_FINISHED (`RemoteLogManager.delete_segment`).

Left out (see the closing note of issue 44): Kafka's lineage checks for
segments written by leaders of diverged epochs after an unclean election.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from broker.tiered.copier import LeaderState, still_leading
from broker.tiered.metadata_records import SegmentMetadata, SegmentState

if TYPE_CHECKING:
    from broker.replica.partition import Partition
    from broker.tiered.context import RemoteLog

log = logging.getLogger("minikafka.tiered")


def expired_segments(
    segments: list[SegmentMetadata],
    *,
    log_start_offset: int,
    local_only_bytes: int,
    retention_ms: int,
    retention_bytes: int,
    now_ms: int,
    being_copied: set[object],
) -> tuple[list[SegmentMetadata], int]:
    """(segments to delete in order, the new log start offset or -1): the pass's decisions, pure.

    ``being_copied``: the ids of the segments this leader is uploading now. ``retention.bytes`` counts
    the COPY_SEGMENT_FINISHED segments only; another leader's COPY_SEGMENT_STARTED segment deleted for
    size is subtracted all the same (Kafka's RemoteLogRetentionHandler does both)."""
    finished = [s for s in segments if s.state == SegmentState.COPY_SEGMENT_FINISHED]
    breach = -1
    if retention_bytes >= 0:
        breach = local_only_bytes + sum(s.size_in_bytes for s in finished) - retention_bytes
    cutoff = now_ms - retention_ms if retention_ms >= 0 else None
    out: list[SegmentMetadata] = []
    new_start = -1
    for seg in sorted(segments, key=lambda s: (s.start_offset, s.end_offset)):
        if seg.segment_id in being_copied:
            break
        if seg.state == SegmentState.DELETE_SEGMENT_STARTED or seg.end_offset < log_start_offset:
            out.append(seg)
            continue
        if cutoff is not None and seg.max_timestamp_ms <= cutoff:
            out.append(seg)
            new_start = max(new_start, seg.end_offset + 1)
            breach -= seg.size_in_bytes
            continue
        if breach >= seg.size_in_bytes:
            out.append(seg)
            new_start = max(new_start, seg.end_offset + 1)
            breach -= seg.size_in_bytes
            continue
        break
    return out, new_start


async def expire_pass(rlm: RemoteLog, part: Partition, state: LeaderState) -> int:
    """Delete what retention says; returns the number of remote segments deleted."""
    plog = part.log
    remote = plog.remote
    if remote is None:
        return 0
    cache = rlm.cache(state.tip)
    highest = remote.highest_offset
    local_only = sum(s.size for s in plog.segments if s.base_offset > highest)
    config = plog.config
    doomed, new_start = expired_segments(
        cache.segments(),
        log_start_offset=plog.log_start_offset,
        local_only_bytes=local_only,
        retention_ms=config.retention_ms if config.delete else -1,
        retention_bytes=config.retention_bytes if config.delete else -1,
        now_ms=time.time_ns() // 1_000_000,
        being_copied=state.being_copied,
    )
    if not doomed or not still_leading(part, state):
        return 0
    if new_start > plog.log_start_offset:
        plog.raise_log_start(new_start, "remote retention")
    deleted = 0
    for seg in doomed:
        if not still_leading(part, state):
            break
        await rlm.delete_segment(seg)
        deleted += 1
    return deleted
