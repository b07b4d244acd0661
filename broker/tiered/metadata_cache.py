"""What is in remote storage, per partition: Kafka's RemoteLogMetadataCache and RemotePartitionMetadataStore.

`RemoteLogMetadataCache` holds one partition's remote segments, built from its
``__remote_log_metadata`` records (metadata_records.py) in topic order.

Segment states (Kafka's RemoteLogSegmentState and its isValidTransition):

    (new) -> COPY_SEGMENT_STARTED     add_copy_started only (a RemoteLogSegmentMetadataRecord)
    COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED | DELETE_SEGMENT_STARTED
    COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED
    DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED   the segment leaves the cache
    every state -> itself                                idempotent (retries, failover)

Any other move raises `InvalidStateTransition`, an update of a segment the
cache does not hold `UnknownSegment`. An update never moves a segment *into*
COPY_SEGMENT_STARTED, not even from itself (Kafka refuses such updates too).

Visibility, as in Kafka: reads (`segment_for`) see only COPY_SEGMENT_FINISHED
segments; listings (`segments`) show COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED
and DELETE_SEGMENT_STARTED, so that half-copied and half-deleted segments can be
cleaned up.

Index: per leader epoch, the FINISHED segments holding records of that epoch,
keyed by the offset at which the epoch starts in the segment, in sorted lists
searched with bisect (`segment_for` is O(log n)). Each entry also keeps the
epoch's last offset in that segment: the next epoch's start - 1 in the segment,
or the segment's end offset. When a segment finishes, the entries of its epochs
that start at or after its own start are dropped from the index (kept only in
listings) as long as the epoch's highest offset so far is <= the new segment's
end in that epoch: a new leader's upload of the same range, or a superset of
it, replaces the old leader's segments (Kafka's RemoteLogLeaderEpochState). A
replaced segment stays listed until it is deleted.

`highest_offset_for_epoch(e)` is Kafka's highestOffsetForEpoch: the highest
last offset of epoch e over every segment that ever reached
COPY_SEGMENT_FINISHED. Like Kafka's, it does not go down when segments are
deleted, so a leader never copies again what retention already removed.

`RemoteLogMetadataStore` keeps one cache per `TopicIdPartition` and routes the
records of the topic to them (`apply`). A partition is "loading" until the
caller marks it loaded (it has read its metadata partition up to the end as
of the start): while loading, records that do not apply (an update of a segment
whose first record is no longer in the topic, a stale transition) are dropped,
as Kafka's consumer does during its initial load; afterwards they raise.
"""

from __future__ import annotations

import dataclasses
import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from broker.tiered.metadata_records import (
    MetadataRecord,
    PartitionDeleteMetadata,
    PartitionDeleteState,
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)

__all__ = [
    "InvalidStateTransition",
    "RemoteLogMetadataCache",
    "RemoteLogMetadataError",
    "RemoteLogMetadataStore",
    "UnknownSegment",
    "is_valid_transition",
]

STARTED = SegmentState.COPY_SEGMENT_STARTED
FINISHED = SegmentState.COPY_SEGMENT_FINISHED
DELETE_STARTED = SegmentState.DELETE_SEGMENT_STARTED
DELETE_FINISHED = SegmentState.DELETE_SEGMENT_FINISHED

_NEXT: dict[SegmentState | None, frozenset[SegmentState]] = {
    None: frozenset({STARTED}),
    STARTED: frozenset({STARTED, FINISHED, DELETE_STARTED}),
    FINISHED: frozenset({FINISHED, DELETE_STARTED}),
    DELETE_STARTED: frozenset({DELETE_STARTED, DELETE_FINISHED}),
    DELETE_FINISHED: frozenset({DELETE_FINISHED}),
}


def is_valid_transition(src: SegmentState | None, dst: SegmentState) -> bool:
    """Kafka's RemoteLogSegmentState.isValidTransition (None: the segment is not known yet)."""
    return dst in _NEXT[src]


class RemoteLogMetadataError(Exception):
    """A metadata record that does not fit the cache's state."""


class InvalidStateTransition(RemoteLogMetadataError):
    """A segment asked to move between states Kafka does not allow."""


class UnknownSegment(RemoteLogMetadataError):
    """An update of a segment the cache does not hold (never added, or deleted)."""


def _epoch_ranges(md: SegmentMetadata) -> Iterator[tuple[int, int, int]]:
    """(epoch, first offset, last offset) of each of the segment's epochs, within the segment."""
    epochs = md.segment_leader_epochs
    for i, (epoch, start) in enumerate(epochs):
        end = epochs[i + 1][1] - 1 if i + 1 < len(epochs) else md.end_offset
        yield epoch, start, end


class _EpochIndex:
    """One leader epoch's FINISHED segments (sorted by the epoch's start in them) and the rest."""

    __slots__ = ("starts", "ends", "ids", "unreferenced", "highest")

    def __init__(self) -> None:
        self.starts: list[int] = []  # the epoch's first offset in each indexed segment, ascending
        self.ends: list[int] = []  # the epoch's last offset in the same segment
        self.ids: list[uuid.UUID] = []
        self.unreferenced: set[uuid.UUID] = set()  # listed but not readable: started, deleting, replaced
        self.highest: int | None = None  # highest last offset of any segment that finished in this epoch

    def finish(self, segment_id: uuid.UUID, start: int, end: int) -> None:
        """Index a segment that reached COPY_SEGMENT_FINISHED, replacing those it covers."""
        while self.starts and self.starts[-1] >= start and self.highest is not None and self.highest <= end:
            self.starts.pop()
            self.ends.pop()
            self.unreferenced.add(self.ids.pop())
        i = bisect_left(self.starts, start)
        if i < len(self.starts) and self.starts[i] == start:  # same start, not covered: the newest wins
            if self.ids[i] != segment_id:
                self.unreferenced.add(self.ids[i])
            self.ends[i], self.ids[i] = end, segment_id
        else:
            self.starts.insert(i, start)
            self.ends.insert(i, end)
            self.ids.insert(i, segment_id)
        self.unreferenced.discard(segment_id)
        if self.highest is None or end > self.highest:
            self.highest = end

    def unindex(self, segment_id: uuid.UUID, start: int) -> None:
        """Remove the segment's entry at `start`, if it is this segment's."""
        i = bisect_left(self.starts, start)
        if i < len(self.starts) and self.starts[i] == start and self.ids[i] == segment_id:
            del self.starts[i], self.ends[i], self.ids[i]

    def empty(self) -> bool:
        return not self.starts and not self.unreferenced and self.highest is None


class RemoteLogMetadataCache:
    """The remote segments of one partition (see the module docstring for states and visibility).

    If `tip` is given, records of other partitions raise ValueError.
    """

    def __init__(self, tip: TopicIdPartition | None = None) -> None:
        self.tip = tip
        self._segments: dict[uuid.UUID, SegmentMetadata] = {}  # every state but DELETE_SEGMENT_FINISHED
        self._epochs: dict[int, _EpochIndex] = {}
        self._finished_bytes = 0

    def __len__(self) -> int:
        """Segments held: copying, copied or being deleted."""
        return len(self._segments)

    def _check_tip(self, tip: TopicIdPartition) -> None:
        if self.tip is not None and tip != self.tip:
            raise ValueError(f"record of {tip} given to the cache of {self.tip}")

    def _epoch(self, epoch: int) -> _EpochIndex:
        index = self._epochs.get(epoch)
        if index is None:
            index = self._epochs[epoch] = _EpochIndex()
        return index

    def add_copy_started(self, md: SegmentMetadata) -> None:
        """Track a segment whose upload starts (listed, not readable). Adding it again is a no-op
        apart from taking the new record's fields; InvalidStateTransition if `md` is not in
        COPY_SEGMENT_STARTED or the segment has moved on."""
        self._check_tip(md.tip)
        if md.state != STARTED:
            raise InvalidStateTransition(
                f"segment {md.segment_id}: a segment is added in {STARTED.name}, not {md.state.name}"
            )
        old = self._segments.get(md.segment_id)
        if old is not None:
            if old.state != STARTED:
                raise InvalidStateTransition(f"segment {md.segment_id}: {old.state.name} -> {STARTED.name}")
            self._drop_from_epochs(old)
        for epoch, _, _ in _epoch_ranges(md):
            self._epoch(epoch).unreferenced.add(md.segment_id)
        self._segments[md.segment_id] = md

    def update(self, upd: SegmentMetadataUpdate) -> SegmentMetadata | None:
        """Move a segment to `upd.state`; returns the segment as it now is (None once deleted).

        UnknownSegment if the cache does not hold it, InvalidStateTransition for a move Kafka does
        not allow (including any update to COPY_SEGMENT_STARTED)."""
        self._check_tip(upd.tip)
        old = self._segments.get(upd.segment_id)
        if old is None:
            raise UnknownSegment(f"no remote segment {upd.segment_id} in {upd.tip}")
        if upd.state == STARTED or not is_valid_transition(old.state, upd.state):
            raise InvalidStateTransition(f"segment {upd.segment_id}: {old.state.name} -> {upd.state.name}")
        new = old.with_update(upd)
        if upd.state == old.state:  # idempotent: only the record's fields change
            self._segments[new.segment_id] = new
            return new
        if upd.state == FINISHED:
            for epoch, start, end in _epoch_ranges(new):
                self._epoch(epoch).finish(new.segment_id, start, end)
            self._finished_bytes += new.size_in_bytes
        elif upd.state == DELETE_STARTED:
            if old.state == FINISHED:
                self._finished_bytes -= old.size_in_bytes
            for epoch, start, _ in _epoch_ranges(new):
                index = self._epoch(epoch)
                index.unindex(new.segment_id, start)
                index.unreferenced.add(new.segment_id)
        else:  # DELETE_SEGMENT_FINISHED
            self._drop_from_epochs(new)
            del self._segments[new.segment_id]
            return None
        self._segments[new.segment_id] = new
        return new

    def _drop_from_epochs(self, md: SegmentMetadata) -> None:
        for epoch, start, _ in _epoch_ranges(md):
            index = self._epochs.get(epoch)
            if index is None:
                continue
            index.unindex(md.segment_id, start)
            index.unreferenced.discard(md.segment_id)
            if index.empty():
                del self._epochs[epoch]

    def segment_for(self, epoch: int, offset: int) -> SegmentMetadata | None:
        """The COPY_SEGMENT_FINISHED segment holding `offset` written in leader epoch `epoch`, or None."""
        index = self._epochs.get(epoch)
        if index is None:
            return None
        i = bisect_right(index.starts, offset) - 1
        if i < 0 or offset > index.ends[i]:
            return None
        return self._segments[index.ids[i]]

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        """The highest offset of `epoch` ever copied (see the module docstring), or None."""
        index = self._epochs.get(epoch)
        return None if index is None else index.highest

    def segments(self, epoch: int | None = None) -> list[SegmentMetadata]:
        """Listed segments (copying, copied, being deleted) by start offset; only those with
        records of `epoch` if given, replaced ones included, and then, as in Kafka, a readable
        segment comes before others with the same start offset."""
        if epoch is None:
            found = list(self._segments.values())
        else:
            index = self._epochs.get(epoch)
            if index is None:
                return []
            found = [self._segments[i] for i in index.ids]
            found.extend(self._segments[i] for i in index.unreferenced)
        found.sort(key=lambda md: md.start_offset)
        return found

    def segment(self, segment_id: uuid.UUID) -> SegmentMetadata | None:
        """The segment with this id in any state but DELETE_SEGMENT_FINISHED, or None."""
        return self._segments.get(segment_id)

    def total_finished_bytes(self) -> int:
        """The size of the COPY_SEGMENT_FINISHED segments, replaced ones included."""
        return self._finished_bytes


@dataclasses.dataclass(slots=True)
class _Partition:
    cache: RemoteLogMetadataCache
    loaded: bool = False
    delete_state: PartitionDeleteState | None = None


class RemoteLogMetadataStore:
    """Every partition's `RemoteLogMetadataCache`, fed with the records of ``__remote_log_metadata``.

    Partitions appear with their first record (or `mark_loaded`). Partition deletion records
    are kept as the partition's latest delete state without checks, as Kafka's store does;
    DELETE_PARTITION_FINISHED forgets the partition.
    """

    def __init__(self) -> None:
        self._partitions: dict[TopicIdPartition, _Partition] = {}

    def _partition(self, tip: TopicIdPartition) -> _Partition:
        p = self._partitions.get(tip)
        if p is None:
            p = self._partitions[tip] = _Partition(RemoteLogMetadataCache(tip))
        return p

    def apply(self, rec: MetadataRecord) -> bool:
        """Apply one record of the topic; False if it was dropped while its partition was loading.

        After `mark_loaded` the cache's errors (UnknownSegment, InvalidStateTransition) propagate."""
        p = self._partition(rec.tip)
        try:
            if isinstance(rec, SegmentMetadata):
                p.cache.add_copy_started(rec)
            elif isinstance(rec, SegmentMetadataUpdate):
                p.cache.update(rec)
            elif isinstance(rec, PartitionDeleteMetadata):
                p.delete_state = rec.state
                if rec.state == PartitionDeleteState.DELETE_PARTITION_FINISHED:
                    self.forget(rec.tip)
            else:
                raise TypeError(f"not a remote log metadata record: {rec!r}")
        except RemoteLogMetadataError:
            if p.loaded:
                raise
            return False
        return True

    def mark_loaded(self, tip: TopicIdPartition) -> None:
        """The caller has read everything the topic held for `tip` when it started: from now on
        records that do not apply raise."""
        self._partition(tip).loaded = True

    def is_loaded(self, tip: TopicIdPartition) -> bool:
        p = self._partitions.get(tip)
        return p is not None and p.loaded

    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache | None:
        """The partition's cache, or None if no record of it has been seen (or it was forgotten)."""
        p = self._partitions.get(tip)
        return None if p is None else p.cache

    def partition_delete_state(self, tip: TopicIdPartition) -> PartitionDeleteState | None:
        p = self._partitions.get(tip)
        return None if p is None else p.delete_state

    def forget(self, tip: TopicIdPartition) -> None:
        """Drop everything known about `tip` (cache, loaded flag, delete state)."""
        self._partitions.pop(tip, None)

    def partitions(self) -> list[TopicIdPartition]:
        return list(self._partitions)
