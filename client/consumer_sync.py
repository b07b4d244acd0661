"""`Consumer`, the synchronous consumer: `AIOConsumer` run on a background event loop thread.

Each method runs its `AIOConsumer` twin on the consumer's `client._loop.LoopThread`
and waits for it (coroutines via ``LoopThread.run``, plain methods via `_call`),
so heartbeats and prefetching go on between calls. `close` closes the
`AIOConsumer` and stops the thread; calls after it raise (`ClientClosedError`,
or `IllegalStateError` from the stopped loop).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from client._loop import LoopThread
from client.consumer_aio import AIOConsumer
from client.consumer_fetch import ConsumerRecords
from client.consumer_subscription import ConsumerRebalanceListener
from client.errors import ClientClosedError
from client.records import RecordColumns
from client.types import (
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


class Consumer:
    """Synchronous consumer; I/O, heartbeats and prefetching run on a background event loop thread.

    ``Consumer("topic", group_id="g", bootstrap_servers="localhost:9092")``
    subscribes at once; ``Consumer(bootstrap_servers=...)`` then `assign`.
    Iterating yields records forever (until `close`).
    """

    def __init__(self, *topics: Any, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOConsumer(*topics, config=config, **kwargs)
        self.config = self._core.config
        self._lt = LoopThread("minikafka-consumer")
        self._closed = False
        try:
            self._lt.run(self._core.start())
        except BaseException:
            self._lt.stop()
            raise

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(_call(lambda: fn(*args, **kwargs)))

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        self._run(self._core.subscribe, topics, pattern=pattern, listener=listener)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._run(self._core.assign, list(partitions))

    def unsubscribe(self) -> None:
        self._lt.run(self._core.unsubscribe())

    def assignment(self) -> set[TopicPartition]:
        return self._run(self._core.assignment)

    def subscription(self) -> set[str]:
        return self._run(self._core.subscription)

    def poll(self, timeout: float = 0.0, max_records: int | None = None) -> ConsumerRecords:
        """Records for the assigned partitions, waiting up to ``timeout`` s (see `AIOConsumer.poll`)."""
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(self._core.poll(timeout, max_records))

    def poll_columns(self, timeout: float = 0.0) -> list[tuple[TopicPartition, RecordColumns]]:
        """Fetched records as columns (see `AIOConsumer.poll_columns`)."""
        if self._closed:
            raise ClientClosedError("consumer is closed")
        return self._lt.run(self._core.poll_columns(timeout))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while not self._closed:
            yield from self.poll(1.0)

    def commit(
        self, offsets: Mapping[Any, int | OffsetAndMetadata] | None = None, *, asynchronous: bool = False
    ) -> None:
        """Commit ``offsets`` (default: every position); ``asynchronous=True`` returns at once."""
        if asynchronous:
            self.commit_async(offsets)
            return
        self._lt.run(self._core.commit(offsets))

    def commit_async(
        self,
        offsets: Mapping[Any, int | OffsetAndMetadata] | None = None,
        callback: Callable[[dict[TopicPartition, OffsetAndMetadata], BaseException | None], Any]
        | None = None,
    ) -> None:
        """Start a commit; ``callback(offsets, error)`` runs on the I/O thread when it completes."""
        self._run(self._core.commit_async, offsets, callback)

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return self._lt.run(self._core.committed(list(partitions)))

    def group_metadata(self) -> ConsumerGroupMetadata:
        """See `AIOConsumer.group_metadata`."""
        return self._run(self._core.group_metadata)  # type: ignore[no-any-return]

    def position(self, partition: TopicPartition | tuple[str, int]) -> int:
        return self._lt.run(self._core.position(partition))

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        self._run(self._core.seek, partition, offset)

    def seek_to_beginning(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.seek_to_beginning, *partitions)

    def seek_to_end(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.seek_to_end, *partitions)

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition | tuple[str, int], int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._lt.run(self._core.offsets_for_times(dict(timestamps)))

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.beginning_offsets(list(partitions)))

    def end_offsets(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, int]:
        return self._lt.run(self._core.end_offsets(list(partitions)))

    def pause(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.pause, *partitions)

    def resume(self, *partitions: TopicPartition | tuple[str, int]) -> None:
        self._run(self._core.resume, *partitions)

    def paused(self) -> set[TopicPartition]:
        return self._run(self._core.paused)

    def highwater(self, partition: TopicPartition | tuple[str, int]) -> int | None:
        return self._run(self._core.highwater, partition)

    def topics(self) -> dict[str, int]:
        return self._lt.run(self._core.topics())

    def partitions_for(self, topic: str) -> set[int]:
        return self._lt.run(self._core.partitions_for(topic))

    def close(self, autocommit: bool = True) -> None:
        """Commit (when auto-committing), leave the group, close connections and stop the I/O thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._core.close(autocommit))
        finally:
            self._lt.stop()
