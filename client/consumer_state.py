"""Per-partition consumer state, and `ConsumerBase`, what the consumer's mixins share.

Each assigned partition has a `_PartitionState`:

- ``position``: the next offset `poll` returns (None until known; ``reset``
  then says how to find it: ``committed``, ``earliest``, ``latest`` or
  ``none``);
- ``fetch_offset``: the next offset to ask the broker for, ahead of the
  position by what is buffered;
- ``completed``: fetched record sets not yet decoded (`_Completed`: the raw
  bytes, the aborted transactions as (producer id, first offset) pairs, and
  the ``epoch`` they were fetched under), ``buffered`` their total size;
- ``records``/``index``: decoded records not yet returned, and
  ``next_after``, the offset after the decoded set;
- ``epoch``: bumped by `discard` (seek, reset, revocation), so that record
  sets and fetch answers of an older epoch are dropped;
- the watermarks of the last fetch, a pending ``error`` for poll to raise and
  ``backoff_until`` (monotonic seconds) before the partition is fetched again.
"""

from __future__ import annotations

import asyncio
import collections
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from client.types import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from client.cluster import Cluster
    from client.group import GroupMember


class _Completed:
    __slots__ = ("raw", "aborted", "epoch")

    def __init__(self, raw: bytes, aborted: list[tuple[int, int]], epoch: int) -> None:
        self.raw = raw
        self.aborted = aborted
        self.epoch = epoch


class _PartitionState:
    __slots__ = (
        "position",
        "reset",
        "paused",
        "epoch",
        "fetch_offset",
        "fetching",
        "completed",
        "buffered",
        "records",
        "index",
        "next_after",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "error",
        "backoff_until",
    )

    def __init__(self, reset: str) -> None:
        self.position: int | None = None
        self.reset: str | None = reset  # committed | earliest | latest | none, while position is None
        self.paused = False
        self.epoch = 0
        self.fetch_offset = 0
        self.fetching = False
        self.completed: collections.deque[_Completed] = collections.deque()
        self.buffered = 0
        self.records: list[ConsumerRecord] = []
        self.index = 0
        self.next_after = 0
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.error: BaseException | None = None
        self.backoff_until = 0.0

    def set_position(self, offset: int) -> None:
        self.position = offset
        self.fetch_offset = offset
        self.reset = None
        self.error = None
        self.discard()

    def discard(self) -> None:
        self.epoch += 1
        self.completed.clear()
        self.buffered = 0
        self.records = []
        self.index = 0


def _as_tp(tp: Any) -> TopicPartition:
    if isinstance(tp, TopicPartition):
        return tp
    topic, partition = tp
    return TopicPartition(topic, partition)


class ConsumerBase:
    """Base of the mixins `client.consumer_aio.AIOConsumer` is made of.

    Declares, for type checkers only, the state `AIOConsumer.__init__` sets
    and the methods one mixin calls on another; it adds nothing at run time.
    """

    if TYPE_CHECKING:
        config: dict[str, Any]
        _assigned: dict[TopicPartition, _PartitionState]
        _group: GroupMember | None
        _topics: set[str]
        _pattern: re.Pattern[str] | None
        _manual: bool
        _closed: bool
        _auto_reset: str
        _read_committed: bool
        _check_crcs: bool
        _request_timeout: float
        _api_timeout: float
        _retry_backoff: float
        _auto_commit: bool
        _auto_commit_interval: float
        _next_auto_commit: float
        _key_deserializer: Callable[[bytes | None], Any] | None
        _value_deserializer: Callable[[bytes | None], Any] | None
        _prefetch_limit: int
        _nodes_fetching: set[int]
        _fetch_waiter: asyncio.Future[None] | None
        _fetch_woken: bool
        _rotate: int

        @property
        def cluster(self) -> Cluster: ...

        def _ensure_open(self) -> None: ...

        def _wake(self) -> None: ...

        def _wake_fetcher(self) -> None: ...

        def _refresh_metadata_bg(self) -> None: ...

        async def _commit_quietly(self, partitions: Iterable[TopicPartition]) -> None: ...
