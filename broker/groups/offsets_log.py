"""What the group coordinator is built on: its settings and the `__consumer_offsets` log it writes."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from protocol.errors import ErrorCode

Done = Callable[[ErrorCode], None]
RecordKV = tuple[bytes, bytes | None]


class OffsetsLog(Protocol):
    """The `__consumer_offsets` topic as the coordinator uses it.

    `append` writes one batch of (key, value) records (value None: tombstone)
    to a partition right away, so appends land in call order; ``done``, if
    given, is called later (never from inside `append`) with NONE once the
    batch is durable, MESSAGE_TOO_LARGE if the batch exceeds the topic's
    limit, or KAFKA_STORAGE_ERROR if writing or syncing failed.
    `when_committed` calls ``done`` with NONE once every record appended to a
    partition so far is durable (at once, from inside the call, when nothing
    is pending), or with the error that keeps it from being so: Kafka's
    coordinator runtime answers an operation that writes nothing only once the
    last written offset is committed.
    `read` yields (key, value) of every record of a partition, in offset order.
    ``producer`` (id, epoch) makes the batch a transactional one (TxnOffsetCommit);
    its records are read only once a COMMIT marker follows, and those of
    transactions still open when `read` ends are left in ``open_transactions``
    (partition -> producer id -> records).
    """

    open_transactions: dict[int, dict[int, list[RecordKV]]]

    @property
    def num_partitions(self) -> int: ...

    def append(
        self,
        partition: int,
        records: Sequence[RecordKV],
        done: Done | None,
        producer: tuple[int, int] | None = None,
    ) -> None: ...

    def when_committed(self, partition: int, done: Done) -> None: ...

    def read(self, partition: int) -> Iterator[RecordKV]: ...


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Kafka's broker settings for groups (names in the comments), in milliseconds."""

    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    max_group_size: int = 2**31 - 1  # group.max.size
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
