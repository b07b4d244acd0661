"""Idempotent-producer state: producer ids, epochs and sequence numbers per partition.

Rules (Kafka's, for non-transactional idempotent producers):
- Per (producer id, partition) the broker remembers the epoch and the last five
  appended batches (first/last sequence, first/last offset).
- A batch whose epoch is older than the remembered one: INVALID_PRODUCER_EPOCH.
- A newer epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER.
- An unknown producer whose first batch does not start at 0: UNKNOWN_PRODUCER_ID.
- A batch equal (first and last sequence) to one of the last five: a duplicate,
  answered with success and the original base offset, not appended again.
- Otherwise its first sequence must follow the last one (int32 wrap to 0),
  else OUT_OF_ORDER_SEQUENCE_NUMBER.

State is rebuilt at start-up by replaying the batch headers of each log.
Producer ids are unique across restarts: they are handed out in blocks whose
upper bound is written (atomically) to `producer-id-block` in the data dir
before any id of the block is used.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader

MAX_CACHED_BATCHES = 5
INT32_MAX = 0x7FFFFFFF
ID_BLOCK = 1000


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def _last_seq(base_sequence: int, last_offset_delta: int) -> int:
    s = base_sequence + last_offset_delta
    return s - INT32_MAX - 1 if s > INT32_MAX else s


@dataclass(slots=True)
class _Batch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class _Producer:
    epoch: int
    batches: deque[_Batch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))


class PartitionProducers:
    """Producer state of one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, _Producer] = {}

    def check(self, h: BatchHeader) -> int | None:
        """Validate batch `h`; return the original base offset if it is a duplicate, else None.

        Raises KafkaError with Kafka's code when the batch must be rejected.
        """
        state = self.producers.get(h.producer_id)
        last = _last_seq(h.base_sequence, h.last_offset_delta)
        if state is None:
            if h.base_sequence != 0:
                raise KafkaError(
                    f"unknown producer id {h.producer_id} with sequence {h.base_sequence}",
                    ErrorCode.UNKNOWN_PRODUCER_ID,
                )
            return None
        if h.producer_epoch < state.epoch:
            raise KafkaError(
                f"epoch {h.producer_epoch} older than {state.epoch}", ErrorCode.INVALID_PRODUCER_EPOCH
            )
        if h.producer_epoch > state.epoch:
            if h.base_sequence != 0:
                raise KafkaError(
                    f"new epoch {h.producer_epoch} must start at sequence 0, got {h.base_sequence}",
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                )
            return None
        for b in state.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last:
                return b.first_offset
        if state.batches and h.base_sequence != _next_seq(state.batches[-1].last_seq):
            raise KafkaError(
                f"sequence {h.base_sequence} does not follow {state.batches[-1].last_seq}",
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            )
        return None

    def update(self, h: BatchHeader, base_offset: int) -> None:
        """Record an appended batch (header fields as sent, offsets as assigned)."""
        state = self.producers.get(h.producer_id)
        if state is None or h.producer_epoch > state.epoch:
            state = self.producers[h.producer_id] = _Producer(h.producer_epoch)
        state.batches.append(
            _Batch(
                h.base_sequence,
                _last_seq(h.base_sequence, h.last_offset_delta),
                base_offset,
                base_offset + h.last_offset_delta,
            )
        )

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        for h in headers:
            if h.producer_id >= 0 and not h.is_control:
                self.update(h, h.base_offset)


class ProducerIdAllocator:
    """Hands out producer ids that stay unique across restarts (see module doc)."""

    FILE = "producer-id-block"

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / self.FILE
        try:
            self._next = int(self.path.read_text().strip() or 0)
        except FileNotFoundError:
            self._next = 0
        except ValueError:
            raise RuntimeError(f"{self.path} is corrupt; cannot hand out unique producer ids") from None
        self._limit = self._next

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + ID_BLOCK
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                f.write(f"{self._limit}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        pid = self._next
        self._next += 1
        return pid
