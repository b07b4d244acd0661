"""Rebuilding transaction indexes (`storage.txn_index`) from the log.

Used at open for the segments whose index cannot be trusted: every segment
`LogSegment.recover` scanned (after an unclean shutdown, or because its offset or
time index was bad) and every segment whose `.txnindex` is corrupt.

The replay (Kafka's ProducerStateManager, reduced to what the index needs),
over batch headers in offset order:

- a producer's open transaction starts at its first transactional data batch
  after its previous marker;
- any control batch of a producer closes its open transaction; if it is an
  ABORT marker and the transaction had data, that is
  ``AbortedTxn(pid, first offset, marker offset, lso)`` where lso is the smallest
  first offset among the other open transactions, else the marker offset + 1
  (Kafka's lastStableOffset).

Only control batches are read beyond their header (the first record's key, a
few bytes).

Transactions open at the start of a run of rebuilt segments began earlier in
the log. A run that starts at the log's first segment is replayed exactly. A
later run is first replayed on its own, and each ABORT found there is settled
by the entry the old index already has for the same producer and marker offset
when that agrees with what the replay saw (the broker wrote it knowing every
open transaction; after a killed process the page cache still had it).
Otherwise (the old index lost it, or was corrupt) the replay starts over from
the log's first segment, headers only outside the rebuilt segments: correct
first, fast in the usual case.

A transaction none of whose data is left (below the first segment, or dropped
by the cleaner) gets no entry: there is nothing left to abort. Where only part
of its data is left, the entry starts at the first batch left, and the last
stable offsets follow from what is left; both still cover every aborted record
that remains, which is all a read_committed fetch needs.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from protocol.control_records import ABORT, marker_type
from protocol.records import BatchHeader
from storage.segment import LogSegment
from storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)


class _NeedHistory(Exception):
    """A rebuilt run depends on transactions opened before it: replay from the log start."""


class _Replay:
    """Open transactions by producer id (first offset), fed headers in offset order."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: dict[int, int] = {}

    def feed(self, seg: LogSegment, h: BatchHeader, read_markers: bool) -> tuple[int, int | None] | None:
        """Track ``h``; for an ABORT marker (when ``read_markers``) return (producer id, first offset
        of the transaction it closed or None); None otherwise."""
        if not h.is_transactional or h.producer_id < 0:
            return None
        pid = h.producer_id
        if not h.is_control:
            self.open.setdefault(pid, h.base_offset)
            return None
        first = self.open.pop(pid, None)
        if not read_markers:
            return None
        data = seg.log_file.pread(h.size, h.position)
        if marker_type(data, dataclasses.replace(h, position=0)) != ABORT:
            return None
        return pid, first

    def lso(self, marker_offset: int) -> int:
        """The LSO right after a marker closed its transaction (that one is no longer open)."""
        return min(self.open.values(), default=marker_offset + 1)


def _may_hold_transactions(seg: LogSegment) -> bool:
    # A segment `recover` scanned knows; one that was only loaded must be scanned to find out.
    return not seg.recovered or seg.saw_transactional


def _replay_run(segments: Sequence[LogSegment], first: int, last: int, exact: bool) -> list[list[AbortedTxn]]:
    """Entries of ``segments[first..last]`` replayed from an empty state at ``first``.

    With ``exact`` (the run starts at the log's first segment) the replay is the truth;
    otherwise each ABORT must be confirmed by the old index (`_NeedHistory` if not).
    """
    replay = _Replay()
    run_start = segments[first].base_offset
    marked: set[int] = set()  # producers with a marker earlier in the run: their next start is known
    out: list[list[AbortedTxn]] = []
    for seg in segments[first : last + 1]:
        entries: list[AbortedTxn] = []
        out.append(entries)
        if not _may_hold_transactions(seg):
            continue
        old = {(t.producer_id, t.last_offset): t for t in seg.txn_index.entries}
        for h in seg.iter_headers():
            began_in_run = h.producer_id in marked
            if h.is_control and h.producer_id >= 0:
                marked.add(h.producer_id)
            closed = replay.feed(seg, h, True)
            if closed is None:
                continue
            pid, begin = closed
            if exact:
                if begin is not None:
                    entries.append(AbortedTxn(pid, begin, h.base_offset, replay.lso(h.base_offset)))
                continue
            known = old.get((pid, h.base_offset))
            if known is None or not _agrees(known, begin, began_in_run, run_start):
                raise _NeedHistory(f"{seg!r}: ABORT marker at {h.base_offset} of producer {pid}")
            entries.append(known)
    return out


def _agrees(known: AbortedTxn, begin: int | None, began_in_run: bool, run_start: int) -> bool:
    """Whether an old entry fits what a replay from ``run_start`` saw of its transaction: data
    from ``begin`` (None: none), and whether the producer's previous marker was in the run."""
    if began_in_run:
        return begin is not None and known.first_offset == begin
    # The transaction may have started before the run.
    return known.first_offset < run_start or known.first_offset == begin


def _replay_all(segments: Sequence[LogSegment], targets: set[int]) -> dict[int, list[AbortedTxn]]:
    """Entries of the ``targets`` segments, replaying every segment from the first one."""
    replay = _Replay()
    out: dict[int, list[AbortedTxn]] = {}
    for i, seg in enumerate(segments[: max(targets) + 1]):
        rebuilt = i in targets
        entries: list[AbortedTxn] = []
        if rebuilt:
            out[i] = entries
        if rebuilt and not _may_hold_transactions(seg):
            continue
        for h in seg.iter_headers():
            closed = replay.feed(seg, h, rebuilt)
            if closed is not None and closed[1] is not None:
                entries.append(AbortedTxn(closed[0], closed[1], h.base_offset, replay.lso(h.base_offset)))
    return out


def rebuild_txn_indexes(segments: Sequence[LogSegment], targets: Sequence[int]) -> list[LogSegment]:
    """Rebuild the transaction indexes of ``segments[i]`` for each i in ``targets``; return the
    segments whose `.txnindex` file changed (each written atomically).

    ``segments`` is the whole log in offset order, already loaded or recovered.
    """
    wanted = sorted(set(targets))
    if not wanted:
        return []
    results: dict[int, list[AbortedTxn]] = {}
    try:
        k = 0
        while k < len(wanted):
            first = last = wanted[k]
            while k + 1 < len(wanted) and wanted[k + 1] == last + 1:
                k += 1
                last = wanted[k]
            k += 1
            for i, entries in enumerate(_replay_run(segments, first, last, exact=first == 0), first):
                results[i] = entries
    except _NeedHistory as why:
        log.info("rebuilding transaction indexes from the start of the log: %s", why)
        results = _replay_all(segments, set(wanted))
    changed = []
    for i in wanted:
        seg = segments[i]
        if seg.txn_index.replace(results[i]):
            changed.append(seg)
    return changed
