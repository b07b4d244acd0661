"""Remote retention's decisions (broker/tiered/expiration.py `expired_segments`, Kafka's RLMExpirationTask),
pure: which remote segments go, and where the log start offset moves."""

from __future__ import annotations

import uuid

from broker.tiered.expiration import expired_segments
from broker.tiered.metadata_records import SegmentMetadata, SegmentState, TopicIdPartition

TIP = TopicIdPartition("t", uuid.UUID(int=7), 0)
FINISHED, STARTED = SegmentState.COPY_SEGMENT_FINISHED, SegmentState.COPY_SEGMENT_STARTED


def _segment(
    start: int, end: int, state: SegmentState = FINISHED, ts: int = 1_000, broker: int = 1
) -> SegmentMetadata:
    return SegmentMetadata(TIP, uuid.uuid4(), start, end, broker, ts, ts, ((0, start),), 100, None, state)


def _expire(segments: list[SegmentMetadata], **kw: object) -> tuple[list[SegmentMetadata], int]:
    args: dict[str, object] = {
        "log_start_offset": 0,
        "local_only_bytes": 0,
        "retention_ms": -1,
        "retention_bytes": -1,
        "now_ms": 10_000,
        "being_copied": set(),
    }
    args.update(kw)
    return expired_segments(segments, **args)  # type: ignore[arg-type]


def test_a_dead_leaders_started_segment_is_judged_like_any_other() -> None:
    a, b = _segment(0, 99), _segment(100, 199)
    dead = _segment(200, 299, STARTED, broker=1)  # its leader died in the middle of the upload
    again, d = _segment(200, 299, broker=2), _segment(300, 399, broker=2)  # the new leader copied it again
    segments = [a, b, dead, again, d]
    # nothing breached: nothing goes (and nothing is read past, as before)
    assert _expire(segments) == ([], -1)
    # size: 400 bytes finished (the STARTED one is not counted), 100 allowed: the oldest two, then the
    # dead upload (still within the breach), and the pass went on past it
    doomed, start = _expire(segments, retention_bytes=100)
    assert doomed == [a, b, dead] and start == 300
    # the log start offset passed it (an earlier pass, DeleteRecords): it goes, and so do the others below it
    doomed, start = _expire(segments, log_start_offset=300)
    assert doomed == [a, b, dead, again] and start == -1
    # time: everything older than the cutoff, the dead upload included
    doomed, start = _expire(segments, retention_ms=5_000)
    assert doomed == segments and start == 400


def test_a_segment_this_leader_is_copying_stops_the_pass() -> None:
    a, copying, c = _segment(0, 99), _segment(100, 199, STARTED), _segment(200, 299)
    doomed, start = _expire([a, copying, c], retention_ms=5_000, being_copied={copying.segment_id})
    assert doomed == [a] and start == 100


def test_the_first_segment_kept_ends_the_pass() -> None:
    old, young, older = _segment(0, 99, ts=1_000), _segment(100, 199, ts=9_000), _segment(200, 299, ts=1_000)
    doomed, start = _expire([old, young, older], retention_ms=5_000)
    assert doomed == [old] and start == 100
