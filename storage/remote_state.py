"""What a local log knows of its tiered (remote) part, for KIP-405 tiered storage.

A `PartitionLog` whose topic is tiered carries a `RemoteLogState`. The remote
log manager (``broker/tiered/``) owns the remote segments; the local log only
needs two facts from it:

- ``highest_offset``: the highest offset (inclusive) already copied to the
  object store, -1 when nothing is. It only ever increases (Kafka's
  ``highestOffsetInRemoteStorage``). Local retention deletes a segment only
  once every offset in it is at or below this (the segment is "safely
  remote").
- ``copy_enabled``: ``remote.log.copy.disable`` is false. With copy enabled,
  local retention follows ``local.retention.*`` and moves only the local log
  start; with copy disabled (tiered data kept read-only) it follows
  ``retention.*`` and moves the log start offset, as in Kafka.

Offsets of a tiered log: ``log start offset`` <= ``local log start offset``
<= HW <= LEO; records in [log start, local log start) are only in the object
store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class RemoteLogState:
    highest_offset: int = -1
    copy_enabled: bool = True

    def update_highest(self, offset: int) -> None:
        """Note that everything up to ``offset`` (inclusive) is in the object store; never moves back."""
        if offset > self.highest_offset:
            self.highest_offset = offset
