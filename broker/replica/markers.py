"""Transaction markers on a partition: closing a producer's transaction, the LSO, the aborted index.

- A COMMIT or ABORT marker (a control batch, `protocol.control_records`) closes
  its producer's open transaction in the partition's producer state; an ABORT
  that closed one adds an `AbortedTxn` (producer id, first offset, marker
  offset, the LSO after it) to the log's transaction index, which read_committed
  fetches use to drop the aborted records.
- The entry's last stable offset is Kafka's: the first offset of the oldest
  other transaction still open, else the marker's offset + 1.
- `last_stable_offset`: the high watermark, or the first offset of the oldest
  undecided transaction if that is smaller.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from protocol.control_records import ABORT, read_marker
from storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from broker.replica.partition import Partition
    from protocol.records import BatchHeader
    from storage.partition_log import PartitionLog

_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a batch's base offset and the length of the rest


def close_transaction(
    part: Partition,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    offset: int,
    now_ms: int,
) -> None:
    """A marker of ``producer_id`` now sits at ``offset``: update the producer state and the aborted index."""
    producers = part.producer_state()
    first = producers.complete(producer_id, producer_epoch, coordinator_epoch, offset, now_ms)
    if commit or first < 0:
        return
    others = [f for pid, f in producers.ongoing.items() if pid != producer_id]
    lso = min(others) if others else offset + 1
    part.log.append_aborted_txn(AbortedTxn(producer_id, first, offset, lso))


def replicated_marker(
    part: Partition, buf: bytes | bytearray | memoryview, h: BatchHeader, now_ms: int
) -> None:
    """A follower appended the leader's control batch ``h`` (at ``h.position`` in ``buf``)."""
    kind, epoch = read_marker(buf, h)
    close_transaction(part, h.producer_id, h.producer_epoch, epoch, kind != ABORT, h.base_offset, now_ms)


def last_stable_offset(part: Partition) -> int:
    """The partition's LSO: read_committed consumers read below it."""
    hw = part.log.high_watermark
    producers = part.producers
    if producers is None or not (producers.ongoing or producers.unreplicated):
        return hw
    first = producers.first_unstable_offset(hw)
    return hw if first is None else min(first, hw)


def bytes_below(data: bytes | memoryview, offset: int) -> int:
    """How many bytes of ``data`` (whole batches) come before the first batch starting at or past ``offset``."""
    position, end = 0, len(data)
    while position + _OFFSET_AND_LENGTH.size <= end:
        base, length = _OFFSET_AND_LENGTH.unpack_from(data, position)
        if base >= offset:
            break
        position += _OFFSET_AND_LENGTH.size + length
    return min(position, end)


def aborted_in(plog: PartitionLog, fetch_offset: int, upper_bound: int) -> list[dict[str, Any]]:
    """Fetch's aborted_transactions for a read_committed read from ``fetch_offset`` below ``upper_bound``."""
    return [
        {"producer_id": t.producer_id, "first_offset": t.first_offset}
        for t in plog.aborted_transactions(fetch_offset, upper_bound)
    ]
