"""Which transaction markers a cleaning pass may drop (Kafka's CleanedTransactionMetadata).

A pass reads the log from its start in offset order. Per producer it notes
whether a data batch of the producer's current transaction was read since
the producer's last marker:

- a transactional data batch inside one of the producer's aborted ranges
  (`AbortedRanges`) marks its aborted transaction as having data; the cleaner
  drops such batches (or keeps the last one of an active producer empty);
- any other transactional data batch marks a committed transaction as having
  data (whether or not compaction keeps its records in this pass).

At the marker, `on_marker` answers whether the transaction had no data left:
only then may the marker go, and only once its delete horizon has passed
(``delete.retention.ms`` after the pass that first found it alone; the cleaner
sets the horizon on the marker's batch). So a read_committed consumer that
has read a transaction's data always finds its marker, for at least
``delete.retention.ms``.

An ABORT marker whose transaction had no data left also takes its
transaction-index entry with it (`drops_index_entry`): nothing remains for a
read_committed reader to skip. Entries of aborted transactions that still
have a batch (an active producer's empty last batch) are kept.
"""

from __future__ import annotations

from protocol.records import BatchHeader
from storage.txn_index import AbortedRanges, AbortedTxn


def is_aborted_batch(h: BatchHeader, aborted: AbortedRanges) -> bool:
    """A data batch of an aborted transaction (control batches never are)."""
    return h.is_transactional and not h.is_control and aborted.is_aborted(h.producer_id, h.base_offset)


class CleanedTransactions:
    """Per-pass transaction bookkeeping of the cleaner (see the module docstring)."""

    __slots__ = ("_aborted", "_with_data", "_dropped_entries")

    def __init__(self, aborted: AbortedRanges) -> None:
        self._aborted = aborted
        self._with_data: set[int] = set()  # producers whose current transaction has data read
        self._dropped_entries: set[tuple[int, int]] = set()  # (producer id, ABORT marker offset)

    def is_aborted(self, h: BatchHeader) -> bool:
        """A data batch of an aborted transaction (control batches never are)."""
        return bool(self._aborted) and is_aborted_batch(h, self._aborted)

    def on_data(self, h: BatchHeader) -> None:
        """A data batch was read (aborted or not)."""
        if h.is_transactional:
            self._with_data.add(h.producer_id)

    def on_marker(self, h: BatchHeader) -> bool:
        """A control batch was read; True if its transaction has no data left (it may go)."""
        pid = h.producer_id
        if pid in self._with_data:
            self._with_data.discard(pid)
            return False
        self._dropped_entries.add((pid, h.last_offset))
        return True

    def drops_index_entry(self, txn: AbortedTxn) -> bool:
        """Is ``txn``'s index entry left out of the cleaned segment (its marker was found alone)?"""
        return (txn.producer_id, txn.last_offset) in self._dropped_entries
