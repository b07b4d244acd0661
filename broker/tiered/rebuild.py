"""A follower below its leader's local log start rebuilds its state from remote storage (Kafka's
TierStateMachine, KIP-405).

A follower whose fetch offset lies in the leader's [log start, local log start)
gets OFFSET_MOVED_TO_TIERED_STORAGE: those records exist only in the object
store, and a follower never copies them. The replica fetcher then hands the
partition to `rebuild_follower` (through ``FetcherManager.on_offset_moved_to_tiered``)
and leaves it out of its fetches until the rebuild is over. The steps, as
Kafka's ``TierStateMachine.buildRemoteLogAuxState``:

1. ListOffsets -4 (EARLIEST_LOCAL, v8) to the leader: its local log start L and
   the leader epoch E of L.
2. The epoch of L-1: E if E is 0; otherwise OffsetForLeaderEpoch(E-1) to the
   leader, and if the end offset it answers is past L-1, the epoch it answers
   (the newest epoch at or below E-1 that has records: this skips epochs in
   which nothing was written), else E.
3. The remote segment holding L-1 in that epoch, from this broker's copy of
   the remote metadata (``__remote_log_metadata``, read up to date first); with
   its LEADER_EPOCH and PRODUCER_SNAPSHOT indexes from the object store.
4. Only then, with no await in between (nothing else sees a half-built log):
   the local log is dropped and starts empty at ``segment end + 1`` with the
   leader's log start offset below it; the leader-epoch cache becomes the
   segment's checkpoint; the segment's producer snapshot is written as
   ``<segment end + 1>.snapshot`` (atomically) and the producer state reloaded
   from it; the log's highest remote offset is the segment's end (so local
   retention knows what is safely remote).
5. The fetcher fetches from ``segment end + 1`` (>= L: the leader has it locally).

Unlike Kafka, the local log is untouched until everything remote has been
read, and the fetcher keeps fetching the partition's neighbours meanwhile
(Kafka's fetcher thread blocks on the remote reads).

Outcomes: True once rebuilt. False when not now: the role or leader epoch
changed meanwhile, or the leader answered an error (not leader, fenced or
unknown epoch: the cluster metadata will catch up), or `RebuildFailed`,
raised for what the next fetch round retries: the topic not tiered on this
broker, the object store or the metadata topic failing, no remote segment
known for L-1 yet (this broker's metadata reader lags behind the leader's
copies), an unreadable checkpoint.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.producer_state import write_snapshot
from broker.tiered.reader import segment_ref
from broker.tiered.segment_store import IndexType
from protocol.errors import ErrorCode
from storage.checkpoint import CorruptCheckpointError
from storage.leader_epoch import parse_epoch_checkpoint

if TYPE_CHECKING:
    from broker.replica.partition import Partition
    from broker.tiered.context import RemoteLog
    from broker.txn.broker_links import BrokerLinks

log = logging.getLogger("minikafka.tiered")

LIST_OFFSETS, LIST_OFFSETS_VERSION = 2, 8  # v8: the first that knows EARLIEST_LOCAL (KIP-405)
EPOCH_END, EPOCH_END_VERSION = 23, 3
EARLIEST_LOCAL = -4
LEADER_TIMEOUT_S = 10.0


class RebuildFailed(Exception):
    """The rebuild could not be done now; the next fetch round tries again."""


class _NotNow(Exception):
    """The leader answered an error that the cluster metadata settles (not leader, fenced epoch)."""


@dataclass(frozen=True, slots=True)
class _Role:
    """What the partition was when the rebuild began; it must still be so when the log changes."""

    leader_id: int
    leader_epoch: int
    log_end_offset: int

    @staticmethod
    def of(part: Partition) -> _Role:
        return _Role(part.leader_id, part.leader_epoch, part.log.log_end_offset)

    def holds(self, rlm: RemoteLog, part: Partition, plog: Any) -> bool:
        return (
            rlm.replicas.get(part.tp) is part
            and part.log is plog
            and not plog.closed
            and not plog.offline
            and not part.is_leader
            and not part.needs_truncation
            and part.leader_id == self.leader_id
            and part.leader_epoch == self.leader_epoch
            and plog.log_end_offset == self.log_end_offset
        )


async def rebuild_follower(rlm: RemoteLog, part: Partition, leader_log_start: int) -> bool:
    """Rebuild ``part`` (a follower answered OFFSET_MOVED_TO_TIERED_STORAGE with the leader's log
    start offset ``leader_log_start``) from remote storage, as the module docstring says. Raises
    `RebuildFailed` for a failure the next fetch round retries, and the errors of the object store,
    the metadata topic and the link to the leader (`broker.tiered.manager.FAILURES`,
    `broker.txn.broker_links.LINK_ERRORS`)."""
    plog = part.log
    if plog.remote is None:
        raise RebuildFailed("remote storage is not enabled for the topic on this broker")
    role = _Role.of(part)
    try:
        local_start, epoch = await _earliest_local(rlm.leader_links, part)
        target = epoch if epoch == 0 else await _epoch_of(rlm.leader_links, part, local_start - 1, epoch)
    except _NotNow as exc:
        log.debug("%s-%d: not rebuilt now: %s", part.topic, part.index, exc)
        return False
    tip = rlm.tip(part)
    await rlm.metadata.load(tip)
    await rlm.metadata.catch_up(tip)
    md = rlm.cache(tip).segment_for(target, local_start - 1)
    if md is None:
        raise RebuildFailed(
            f"no remote segment holds offset {local_start - 1} of leader epoch {target}"
            f" (the leader's local log starts at {local_start})"
        )
    ref = segment_ref(md)
    checkpoint = await rlm.segments.fetch_index(ref, IndexType.LEADER_EPOCH)
    snapshot = await rlm.segments.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT)
    try:
        epochs = parse_epoch_checkpoint(
            checkpoint, f"leader-epoch checkpoint of remote segment {md.segment_id}"
        )
    except CorruptCheckpointError as exc:
        raise RebuildFailed(str(exc)) from exc
    if not role.holds(rlm, part, plog):
        log.debug("%s-%d: role changed during the rebuild; not rebuilt", part.topic, part.index)
        return False
    next_offset = md.end_offset + 1
    plog.truncate_fully_and_start_at(
        next_offset, time.time_ns() // 1_000_000, log_start_offset=leader_log_start
    )
    plog.leader_epochs.replace([(e, start) for e, start in epochs if start < next_offset])
    if snapshot:  # a segment tiered before its topic kept producer snapshots has none
        write_snapshot(plog.fs, plog.directory, next_offset, snapshot)
    rlm.replicas.rebuild_producers(part)
    plog.remote.update_highest(md.end_offset)
    log.info(
        "%s-%d: rebuilt from remote storage up to offset %d (segment %s, leader %d's local log starts at %d);"
        " log start offset %d, %d leader epoch(s), fetching from %d",
        part.topic,
        part.index,
        md.end_offset,
        md.segment_id,
        role.leader_id,
        local_start,
        plog.log_start_offset,
        len(plog.leader_epochs.entries),
        next_offset,
    )
    return True


def _answer(part: Partition, code: int, what: str) -> None:
    """Raise for an error code of the leader's answer about ``part``."""
    if code == ErrorCode.NONE:
        return
    if code in (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
    ):
        raise _NotNow(f"{what}: error {code}")
    raise RebuildFailed(f"{what} of {part.topic}-{part.index}: error {code}")


async def _earliest_local(links: BrokerLinks, part: Partition) -> tuple[int, int]:
    """(the leader's local log start offset, its leader epoch): ListOffsets -4."""
    body = {
        "replica_id": part.local_id,
        "isolation_level": 0,
        "topics": [
            {
                "name": part.topic,
                "partitions": [
                    {
                        "partition_index": part.index,
                        "current_leader_epoch": part.leader_epoch,
                        "timestamp": EARLIEST_LOCAL,
                    }
                ],
            }
        ],
    }
    answer = await links.call(part.leader_id, LIST_OFFSETS, LIST_OFFSETS_VERSION, body, LEADER_TIMEOUT_S)
    result = answer.topics[0].partitions[0]
    _answer(part, result.error_code, "ListOffsets(earliest local)")
    return int(result.offset), int(result.leader_epoch)


async def _epoch_of(links: BrokerLinks, part: Partition, offset: int, epoch: int) -> int:
    """The leader epoch of ``offset``, the last offset below the leader's local log start, whose own
    epoch is ``epoch`` > 0 (step 2 of the module docstring)."""
    body = {
        "replica_id": part.local_id,
        "topics": [
            {
                "topic": part.topic,
                "partitions": [
                    {
                        "partition": part.index,
                        "current_leader_epoch": part.leader_epoch,
                        "leader_epoch": epoch - 1,
                    }
                ],
            }
        ],
    }
    answer = await links.call(part.leader_id, EPOCH_END, EPOCH_END_VERSION, body, LEADER_TIMEOUT_S)
    result = answer.topics[0].partitions[0]
    _answer(part, result.error_code, f"OffsetForLeaderEpoch({epoch - 1})")
    return int(result.leader_epoch) if result.end_offset > offset else epoch
