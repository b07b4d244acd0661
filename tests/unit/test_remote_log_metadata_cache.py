"""The remote segment metadata cache and store (broker/tiered/metadata_cache.py), against Kafka's semantics.

Kafka's RemoteLogMetadataCache / RemoteLogLeaderEpochState (storage module) are the reference:
the transitions of RemoteLogSegmentState.isValidTransition, reads that see only
COPY_SEGMENT_FINISHED, listings of everything not yet deleted, the per-epoch index in which a new
leader's upload replaces the segments it covers, and highestOffsetForEpoch.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.tiered.metadata_cache import (
    InvalidStateTransition,
    RemoteLogMetadataCache,
    RemoteLogMetadataStore,
    UnknownSegment,
    is_valid_transition,
)
from broker.tiered.metadata_records import (
    PartitionDeleteMetadata,
    PartitionDeleteState,
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    TopicIdPartition,
)

S = SegmentState
TIP = TopicIdPartition("t", uuid.UUID(int=0x1234), 0)
OTHER = TopicIdPartition("t", uuid.UUID(int=0x1234), 1)


def seg(
    start: int,
    end: int,
    epochs: Iterable[tuple[int, int]] | None = None,
    size: int = 100,
    tip: TopicIdPartition = TIP,
) -> SegmentMetadata:
    return SegmentMetadata(
        tip=tip,
        segment_id=uuid.uuid4(),
        start_offset=start,
        end_offset=end,
        broker_id=1,
        max_timestamp_ms=end,
        event_timestamp_ms=0,
        segment_leader_epochs=tuple(epochs) if epochs is not None else ((0, start),),
        size_in_bytes=size,
        custom_metadata=None,
        state=S.COPY_SEGMENT_STARTED,
    )


def upd(md: SegmentMetadata, state: SegmentState, when: int = 1) -> SegmentMetadataUpdate:
    return SegmentMetadataUpdate(md.tip, md.segment_id, 2, when, b"cm", state)


def finished(cache: RemoteLogMetadataCache, md: SegmentMetadata) -> SegmentMetadata:
    cache.add_copy_started(md)
    out = cache.update(upd(md, S.COPY_SEGMENT_FINISHED))
    assert out is not None
    return out


def ids(mds: Iterable[SegmentMetadata | None]) -> list[uuid.UUID | None]:
    return [None if md is None else md.segment_id for md in mds]


# -- transitions ---------------------------------------------------------------------------------

ALLOWED = {
    (None, S.COPY_SEGMENT_STARTED),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_STARTED),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
    (S.DELETE_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED),
}
PATH = {  # how to bring a segment into each state
    S.COPY_SEGMENT_STARTED: [],
    S.COPY_SEGMENT_FINISHED: [S.COPY_SEGMENT_FINISHED],
    S.DELETE_SEGMENT_STARTED: [S.DELETE_SEGMENT_STARTED],
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product([None, *S], S)))
def test_is_valid_transition_is_kafkas_table(src: SegmentState | None, dst: SegmentState) -> None:
    assert is_valid_transition(src, dst) == ((src, dst) in ALLOWED)


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(PATH, S)))
def test_every_update_from_every_held_state(src: SegmentState, dst: SegmentState) -> None:
    """Updates of a held segment: Kafka's table, except that no update enters COPY_SEGMENT_STARTED."""
    cache = RemoteLogMetadataCache(TIP)
    md = seg(0, 9)
    cache.add_copy_started(md)
    for state in PATH[src]:
        cache.update(upd(md, state))
    if dst == S.COPY_SEGMENT_STARTED or (src, dst) not in ALLOWED:
        with pytest.raises(InvalidStateTransition):
            cache.update(upd(md, dst))
        assert cache.segment(md.segment_id).state == src  # type: ignore[union-attr]
        return
    result = cache.update(upd(md, dst, when=7))
    if dst == S.DELETE_SEGMENT_FINISHED:
        assert result is None and cache.segment(md.segment_id) is None and len(cache) == 0
        assert cache.segments() == [] and cache.segments(0) == []
    else:
        assert result == cache.segment(md.segment_id)
        assert result is not None and result.state == dst and result.event_timestamp_ms == 7
        assert cache.segments() == [result]
    assert (cache.segment_for(0, 5) is not None) == (dst == S.COPY_SEGMENT_FINISHED)


@pytest.mark.parametrize(
    "state", [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED]
)
def test_segments_enter_only_copy_started(state: SegmentState) -> None:
    cache = RemoteLogMetadataCache(TIP)
    md = seg(0, 9)
    with pytest.raises(InvalidStateTransition):
        cache.add_copy_started(md.with_update(upd(md, state)))
    assert len(cache) == 0


def test_adding_again_is_idempotent_until_the_segment_moves_on() -> None:
    cache = RemoteLogMetadataCache(TIP)
    md = seg(0, 9)
    cache.add_copy_started(md)
    cache.add_copy_started(md)
    assert cache.segments() == [md] and cache.segments(0) == [md]
    cache.update(upd(md, S.COPY_SEGMENT_FINISHED))
    with pytest.raises(InvalidStateTransition):
        cache.add_copy_started(md)


@pytest.mark.parametrize(
    "state", [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED]
)
def test_update_of_an_unknown_segment(state: SegmentState) -> None:
    with pytest.raises(UnknownSegment):
        RemoteLogMetadataCache(TIP).update(upd(seg(0, 9), state))


def test_records_of_another_partition_are_refused() -> None:
    cache = RemoteLogMetadataCache(TIP)
    with pytest.raises(ValueError):
        cache.add_copy_started(seg(0, 9, tip=OTHER))


def test_self_transitions_change_only_the_records_fields() -> None:
    cache = RemoteLogMetadataCache(TIP)
    a = finished(cache, seg(0, 9, size=10))
    b = finished(cache, seg(10, 19, size=20))
    again = cache.update(upd(a, S.COPY_SEGMENT_FINISHED, when=99))
    assert again is not None and again.event_timestamp_ms == 99
    assert ids([cache.segment_for(0, 5), cache.segment_for(0, 15)]) == [a.segment_id, b.segment_id]
    assert cache.total_finished_bytes() == 30 and cache.highest_offset_for_epoch(0) == 19


# -- lookups -------------------------------------------------------------------------------------


def test_lookups_across_epochs_with_a_segment_spanning_three() -> None:
    cache = RemoteLogMetadataCache(TIP)
    a = finished(cache, seg(0, 99, [(0, 0)]))
    b = finished(cache, seg(100, 299, [(0, 100), (1, 150), (3, 250)]))  # epochs 0, 1, 3 (2 had no records)
    c = finished(cache, seg(300, 399, [(3, 300), (4, 350)]))
    expect = {
        (0, 0): a,
        (0, 99): a,
        (0, 100): b,
        (0, 149): b,
        (0, 150): None,  # offset 150 is epoch 1's
        (1, 149): None,
        (1, 150): b,
        (1, 249): b,
        (1, 250): None,
        (2, 200): None,
        (3, 250): b,
        (3, 299): b,
        (3, 300): c,
        (3, 349): c,
        (3, 350): None,
        (4, 350): c,
        (4, 399): c,
        (4, 400): None,
        (5, 400): None,
        (0, -1): None,
    }
    for (epoch, offset), md in expect.items():
        assert cache.segment_for(epoch, offset) == md, (epoch, offset)
    assert [cache.highest_offset_for_epoch(e) for e in range(6)] == [149, 249, None, 349, 399, None]
    assert cache.segments() == [a, b, c]
    assert cache.segments(0) == [a, b] and cache.segments(1) == [b] and cache.segments(3) == [b, c]
    assert cache.segments(2) == [] and cache.total_finished_bytes() == 300


def test_started_and_deleting_segments_are_listed_but_not_read() -> None:
    cache = RemoteLogMetadataCache(TIP)
    a = finished(cache, seg(0, 99))
    b = seg(100, 199)
    cache.add_copy_started(b)
    assert cache.segment_for(0, 150) is None and cache.highest_offset_for_epoch(0) == 99
    assert ids(cache.segments()) == [a.segment_id, b.segment_id]
    cache.update(upd(a, S.DELETE_SEGMENT_STARTED))
    assert cache.segment_for(0, 50) is None and cache.total_finished_bytes() == 0
    assert ids(cache.segments(0)) == [a.segment_id, b.segment_id]
    cache.update(upd(a, S.DELETE_SEGMENT_FINISHED))
    assert ids(cache.segments()) == [b.segment_id] and len(cache) == 1
    assert cache.highest_offset_for_epoch(0) == 99  # Kafka's: what was copied once stays counted


def test_a_new_leaders_superset_replaces_the_old_leaders_segment() -> None:
    """Kafka's case 1: L0 uploaded 0-100, the new leader 0-200 for the same epoch."""
    cache = RemoteLogMetadataCache(TIP)
    old = finished(cache, seg(0, 100, [(0, 0)]))
    new = finished(cache, seg(0, 200, [(0, 0), (1, 150)]))
    assert cache.segment_for(0, 50) == new and cache.segment_for(1, 180) == new
    assert ids(cache.segments(0)) == [new.segment_id, old.segment_id]  # still listed, for cleanup
    assert cache.total_finished_bytes() == 200
    cache.update(upd(old, S.DELETE_SEGMENT_STARTED))
    cache.update(upd(old, S.DELETE_SEGMENT_FINISHED))
    assert cache.segment_for(0, 50) == new and cache.segments() == [new]


def test_overlapping_segments_from_two_leaders() -> None:
    """Kafka's case 2: L0 uploaded 10-90; L1 uploads 5-100 and 101-200; offset 95 is read from L1's."""
    cache = RemoteLogMetadataCache(TIP)
    s0 = finished(cache, seg(10, 90, [(0, 10)]))
    s1 = finished(cache, seg(5, 100, [(0, 5)]))
    s2 = finished(cache, seg(101, 200, [(0, 101)]))
    assert cache.segment_for(0, 95) == s1 and cache.segment_for(0, 50) == s1 and cache.segment_for(0, 5) == s1
    assert cache.segment_for(0, 150) == s2 and cache.segment_for(0, 4) is None
    assert ids(cache.segments(0)) == [s1.segment_id, s0.segment_id, s2.segment_id]
    assert cache.highest_offset_for_epoch(0) == 200


def test_an_older_narrower_upload_does_not_hide_a_wider_one() -> None:
    """A segment finishing late that ends below what the epoch already has is indexed beside it."""
    cache = RemoteLogMetadataCache(TIP)
    wide = finished(cache, seg(0, 200))
    late = finished(cache, seg(50, 80))
    assert cache.segment_for(0, 40) == wide
    assert cache.segment_for(0, 60) == late and cache.segment_for(0, 90) is None  # as Kafka's floorEntry does
    same_start = finished(cache, seg(50, 70))
    assert cache.segment_for(0, 60) == same_start
    assert ids(cache.segments(0)) == [wide.segment_id, same_start.segment_id, late.segment_id]


def test_deleting_a_replaced_segment_leaves_its_replacement_readable() -> None:
    cache = RemoteLogMetadataCache(TIP)
    old = finished(cache, seg(0, 100))
    new = finished(cache, seg(0, 100))  # the same range again, from a new leader
    for state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):
        cache.update(upd(old, state))
    assert cache.segment_for(0, 100) == new


# -- the store -----------------------------------------------------------------------------------


def test_store_routes_records_by_partition() -> None:
    store = RemoteLogMetadataStore()
    a, b = seg(0, 9), seg(0, 9, tip=OTHER)
    assert store.apply(a) and store.apply(b)
    assert store.apply(upd(a, S.COPY_SEGMENT_FINISHED))
    assert store.cache(TIP).segment_for(0, 3).segment_id == a.segment_id  # type: ignore[union-attr]
    assert store.cache(OTHER).segment_for(0, 3) is None  # type: ignore[union-attr]
    assert set(store.partitions()) == {TIP, OTHER}
    assert store.cache(TopicIdPartition("t", uuid.UUID(int=0x1234), 2)) is None


def test_store_drops_what_does_not_apply_only_while_loading() -> None:
    store = RemoteLogMetadataStore()
    gone = seg(0, 9)  # its first record was deleted from the topic by retention
    assert store.apply(upd(gone, S.DELETE_SEGMENT_FINISHED)) is False
    live = seg(10, 19)
    assert store.apply(live) and store.apply(upd(live, S.DELETE_SEGMENT_STARTED))
    assert store.apply(upd(live, S.COPY_SEGMENT_FINISHED)) is False  # a late write of a replaced leader
    assert not store.is_loaded(TIP)
    store.mark_loaded(TIP)
    assert store.is_loaded(TIP)
    with pytest.raises(UnknownSegment):
        store.apply(upd(gone, S.DELETE_SEGMENT_FINISHED))
    with pytest.raises(InvalidStateTransition):
        store.apply(upd(live, S.COPY_SEGMENT_FINISHED))
    assert not store.is_loaded(OTHER)
    assert store.apply(upd(seg(0, 9, tip=OTHER), S.COPY_SEGMENT_FINISHED)) is False


def test_store_partition_delete_states_and_forget() -> None:
    store = RemoteLogMetadataStore()
    store.apply(seg(0, 9))
    store.mark_loaded(TIP)
    for state in PartitionDeleteState:
        if state != PartitionDeleteState.DELETE_PARTITION_FINISHED:
            assert store.apply(PartitionDeleteMetadata(TIP, 0, 0, state))
            assert store.partition_delete_state(TIP) == state and store.cache(TIP) is not None
    store.apply(PartitionDeleteMetadata(TIP, 0, 0, PartitionDeleteState.DELETE_PARTITION_FINISHED))
    assert store.cache(TIP) is None and store.partition_delete_state(TIP) is None and not store.is_loaded(TIP)
    store.apply(seg(0, 9, tip=OTHER))
    store.forget(OTHER)
    assert store.cache(OTHER) is None and store.partitions() == []


# -- invariants, against a brute-force model -------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[SegmentMetadata], list[list[SegmentState]]]:
    """Contiguous segments of one leader with rising epochs, and a legal state path for each."""
    segments, offset, epoch = [], 0, 0
    for _ in range(draw(st.integers(1, 8))):
        length = draw(st.integers(1, 30))
        epochs = [(epoch, offset)]
        for cut in sorted(draw(st.sets(st.integers(1, length - 1), max_size=2)) if length > 1 else []):
            epoch += draw(st.integers(1, 2))
            epochs.append((epoch, offset + cut))
        segments.append(seg(offset, offset + length - 1, epochs, size=length))
        offset += length
        epoch += draw(st.integers(0, 1))
    paths = draw(
        st.lists(
            st.sampled_from(
                [
                    [],
                    [S.COPY_SEGMENT_FINISHED],
                    [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED],
                    [S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED],
                    [S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED],
                ]
            ),
            min_size=len(segments),
            max_size=len(segments),
        )
    )
    return segments, paths


def epoch_offsets(md: SegmentMetadata) -> dict[int, range]:
    """The offsets of each epoch in the segment, written out plainly (each epoch here has records)."""
    bounds = [offset for _, offset in md.segment_leader_epochs] + [md.end_offset + 1]
    return {epoch: range(bounds[k], bounds[k + 1]) for k, (epoch, _) in enumerate(md.segment_leader_epochs)}


@settings(max_examples=150, deadline=None)
@given(history=histories(), data=st.data())
def test_cache_agrees_with_a_brute_force_model(
    history: tuple[list[SegmentMetadata], list[list[SegmentState]]], data: st.DataObject
) -> None:
    segments, paths = history
    queues: list[list[SegmentState | None]] = [[None, *p] for p in paths]  # None: add_copy_started
    order: list[tuple[int, SegmentState | None]] = []
    while any(queues):  # any interleaving of the segments' paths
        i = data.draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        order.append((i, queues[i].pop(0)))
    cache = RemoteLogMetadataCache(TIP)
    state: dict[int, SegmentState] = {}
    ever_finished: set[int] = set()
    for i, target in order:
        if target is None:
            cache.add_copy_started(segments[i])
            state[i] = S.COPY_SEGMENT_STARTED
        else:
            cache.update(upd(segments[i], target))
            state[i] = target
            ever_finished |= {i} if target == S.COPY_SEGMENT_FINISHED else set()
    live = [i for i in range(len(segments)) if state[i] != S.DELETE_SEGMENT_FINISHED]
    assert ids(cache.segments()) == [segments[i].segment_id for i in live]
    readable = {i for i in live if state[i] == S.COPY_SEGMENT_FINISHED}
    assert cache.total_finished_bytes() == sum(segments[i].size_in_bytes for i in readable)
    for i, md in enumerate(segments):
        for epoch, offsets in epoch_offsets(md).items():
            for offset in offsets:
                got = cache.segment_for(epoch, offset)
                assert (got.segment_id if got else None) == (md.segment_id if i in readable else None)
    for epoch in {e for md in segments for e, _ in md.segment_leader_epochs}:
        ends = [
            epoch_offsets(segments[i])[epoch][-1]
            for i in ever_finished
            if epoch in epoch_offsets(segments[i])
        ]
        assert cache.highest_offset_for_epoch(epoch) == (max(ends) if ends else None)
        listed = [i for i in live if any(e == epoch for e, _ in segments[i].segment_leader_epochs)]
        assert ids(cache.segments(epoch)) == [segments[i].segment_id for i in listed]
