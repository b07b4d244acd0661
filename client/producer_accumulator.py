"""The producer's record accumulator: appending records to batches, waiting on them, completing them.

`RecordAccumulator` is a mixin of `client.producer.AIOProducer` (which sets
the state declared below in its ``__init__``). Every partition (a
(topic, partition) key) has a queue of batches in creation order, the last of
which may be its open batch, the one records are appended to. Appending runs
under the producer's one lock from any thread; a batch is closed once it
reaches batch.size (or its partition is drained), and then counts against
buffer.memory until it completes. `_complete` is the one way a batch ends:
it records the offset or error, releases its buffer space, wakes the threads
and coroutines waiting on it, and runs its delivery callbacks on the calling
thread (the producer's event loop thread).

`DeliveryFuture` is what `send` returns: one per record, a (producer, batch,
index) tuple whose `get` blocks and whose ``await`` waits on the loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from client.errors import ClientClosedError, KafkaError, KafkaTimeoutError, RecordTooLargeError
from client.partitioner import partition_for_key
from client.producer_batches import Batch, DeliveryCallback, HeadersArg, header_list, to_bytes
from client.types import RecordMetadata, TopicPartition

if TYPE_CHECKING:
    from collections.abc import Mapping

    from client.partitioner import StickyPartitioner
    from client.transactions import TransactionManager

log = logging.getLogger("client.producer")
_time_ns = time.time_ns
_tuple_new = tuple.__new__

# Record overhead bound used for batch sizing: length, attributes, deltas, key/value lengths, header count.
_RECORD_OVERHEAD = 21


class DeliveryFuture(tuple):  # type: ignore[type-arg]
    """The outcome of one `send`: `get()` blocks for the `RecordMetadata`; awaitable on the producer's loop.

    A tuple (producer, batch, index) underneath: one is made per record, and a
    tuple subclass is the cheapest object Python can build.
    """

    __slots__ = ()

    @property
    def _producer(self) -> RecordAccumulator:
        return self[0]  # type: ignore[no-any-return]

    @property
    def _batch(self) -> Batch:
        return self[1]  # type: ignore[no-any-return]

    @property
    def _index(self) -> int:
        return self[2]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"<DeliveryFuture {self._batch.tp} #{self._index} {state}>"

    def done(self) -> bool:
        return self._batch.done

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """The record's metadata, waiting up to ``timeout`` s; raises the delivery error if it failed."""
        batch = self._batch
        if not batch.done:
            event = self._producer._event_for(batch)
            if event is not None and not event.wait(timeout):
                raise KafkaTimeoutError(f"no delivery report within {timeout} s")
        if batch.error is not None:
            raise batch.error
        return batch.metadata(self._index)

    result = get

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            self.get(timeout)
        except KafkaTimeoutError:
            raise
        except BaseException as exc:
            return exc
        return None

    def add_callback(self, callback: DeliveryCallback) -> None:
        """Call ``callback(error, metadata)`` on completion (at once if already complete)."""
        self._producer._add_callback(self._batch, self._index, callback)

    def __await__(self) -> Any:
        batch = self._batch
        if not batch.done:
            yield from self._producer._afuture_for(batch).__await__()
        if batch.error is not None:
            raise batch.error
        return batch.metadata(self._index)


class RecordAccumulator:
    """Mixin of `client.producer.AIOProducer`: the append path, waiting helpers and batch completion."""

    if TYPE_CHECKING:
        config: Mapping[str, Any]
        _plain: bool
        _closing: bool
        _fatal: BaseException | None
        _txn: TransactionManager | None
        _key_serializer: Any
        _value_serializer: Any
        _ignore_keys: bool
        _sticky: StickyPartitioner
        _batch_size: int
        _max_request: int
        _max_record: int
        _buffer_memory: int
        _lock: threading.Lock
        _space: threading.Condition
        _queues: dict[tuple[str, int], collections.deque[Batch]]
        _open: dict[tuple[str, int], Batch]
        _incomplete: set[Batch]
        _buffered: int
        _serial: int
        _loop: asyncio.AbstractEventLoop | None
        _loop_thread: int | None
        _waiter: asyncio.Future[None] | None
        _woken: bool
        _space_waiters: list[asyncio.Future[None]]

    # -- appending (any thread) ----------------------------------------------------------------------

    def _append(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp_ms: int | None,
        headers: HeadersArg,
        on_delivery: DeliveryCallback | None,
        num_partitions: int,
    ) -> DeliveryFuture:
        """Append one record to its partition's batch; callable from any thread.

        The common case (bytes in, no serializers) runs straight through: this
        is the per-record cost of producing.
        """
        if not self._plain:
            if self._closing:
                raise ClientClosedError("producer is closed")
            if self._fatal is not None:
                raise self._fatal
            if self._txn is not None:
                self._txn.check_send()
            if self._key_serializer is not None:
                key = self._key_serializer(key)
            if self._value_serializer is not None:
                value = self._value_serializer(value)
        if key is not None and key.__class__ is not bytes:
            key = to_bytes(key, "key")
        if value is not None and value.__class__ is not bytes:
            value = to_bytes(value, "value")
        hdrs = header_list(headers) if headers else None
        sticky = False
        if partition is None:
            if key is not None and not self._ignore_keys:
                partition = partition_for_key(key, num_partitions)
            else:
                partition = self._sticky.partition(topic, num_partitions)
                sticky = True
        elif not 0 <= partition < num_partitions:
            raise KafkaError(
                f"partition {partition} of topic {topic!r} does not exist ({num_partitions} partitions)"
            )
        ts = timestamp_ms if timestamp_ms is not None else _time_ns() // 1_000_000
        size = _RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        if hdrs:
            size += sum(len(k) + len(v or b"") + 6 for k, v in hdrs)
        if size > self._max_record:
            raise RecordTooLargeError(
                f"record of {size} bytes is larger than max.request.size ({self._max_request})"
            )
        qkey = (topic, partition)
        with self._lock:
            batch = self._open.get(qkey)
            if batch is None or batch.size + size > self._batch_size:
                batch, qkey = self._roll(batch, qkey, size, sticky, num_partitions)
                wake = True
            else:
                wake = False
            if self._txn is not None:
                self._txn.add_partition(qkey)
            records = batch.records
            index = len(records)
            records.append((key, value, ts, hdrs))
            batch.size += size
            if on_delivery is not None:
                if batch.callbacks is None:
                    batch.callbacks = []
                batch.callbacks.append((index, on_delivery))
            if batch.size >= self._batch_size:
                self._close_open(batch, qkey)
                wake = True
                if sticky:
                    self._sticky.next(topic, num_partitions)
        if wake:
            self._wakeup()
        return _tuple_new(DeliveryFuture, (self, batch, index))

    def _roll(
        self, batch: Batch | None, qkey: tuple[str, int], size: int, sticky: bool, num_partitions: int
    ) -> tuple[Batch, tuple[str, int]]:
        """The batch a record of ``size`` bytes goes to when ``qkey``'s open batch is missing or full.

        Called with the lock held. A full batch is closed (it will be sent); a
        null-key record then moves the topic to another sticky partition
        (KIP-480) instead of starting a new batch on the old one.
        """
        topic = qkey[0]
        if batch is not None:
            if not batch.records:
                return batch, qkey  # an empty batch takes a record of any size
            self._close_open(batch, qkey)
            if sticky:
                qkey = (topic, self._sticky.next(topic, num_partitions))
                batch = self._open.get(qkey)
                if batch is not None and batch.size + size <= self._batch_size:
                    return batch, qkey
                if batch is not None:
                    self._close_open(batch, qkey)
        self._serial += 1
        batch = Batch(TopicPartition(topic, qkey[1]), self._serial)
        self._open[qkey] = batch
        q = self._queues.get(qkey)
        if q is None:
            q = self._queues[qkey] = collections.deque()
        q.append(batch)
        self._incomplete.add(batch)
        return batch, qkey

    def _close_open(self, batch: Batch, qkey: tuple[str, int]) -> None:
        """No more records for ``batch``: count it against buffer.memory (lock held)."""
        batch.closed = True
        if self._open.get(qkey) is batch:
            del self._open[qkey]
        if not batch.accounted:
            batch.accounted = True
            self._buffered += batch.size

    # -- waiting helpers (any thread) ----------------------------------------------------------------------

    def _wakeup(self) -> None:
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake_on_loop()
        else:
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(self._wake_on_loop)

    def _wake_on_loop(self) -> None:
        self._woken = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _event_for(self, batch: Batch) -> threading.Event | None:
        with self._lock:
            if batch.done:
                return None
            if batch.event is None:
                batch.event = threading.Event()
            return batch.event

    def _afuture_for(self, batch: Batch) -> asyncio.Future[None]:
        assert self._loop is not None
        if batch.afuture is None:
            batch.afuture = self._loop.create_future()
            if batch.done:
                batch.afuture.set_result(None)
        return batch.afuture

    def _add_callback(self, batch: Batch, index: int, callback: DeliveryCallback) -> None:
        with self._lock:
            if not batch.done:
                if batch.callbacks is None:
                    batch.callbacks = []
                batch.callbacks.append((index, callback))
                return
        self._run_callback(callback, batch, index)

    def _wait_space_sync(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._space:
            while self._buffered >= self._buffer_memory and not self._closing:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise KafkaTimeoutError(f"buffer.memory full for {timeout * 1000:.0f} ms (max.block.ms)")
                self._space.wait(left)

    async def _wait_space_async(self) -> None:
        deadline = time.monotonic() + self.config["max.block.ms"] / 1000
        while self._buffered >= self._buffer_memory and not self._closing:
            assert self._loop is not None
            fut = self._loop.create_future()
            self._space_waiters.append(fut)
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await fut
            except TimeoutError:
                raise KafkaTimeoutError("buffer.memory full for max.block.ms") from None

    # -- completion ------------------------------------------------------------------------------------

    def _complete(
        self, batch: Batch, base_offset: int, log_append_time: int, error: BaseException | None
    ) -> None:
        with self._lock:
            if batch.done:
                return
            batch.done = True
            batch.base_offset = base_offset
            batch.log_append_time = log_append_time
            batch.error = error
            self._incomplete.discard(batch)
            if batch.accounted:
                self._buffered -= batch.size
            event = batch.event
            callbacks = batch.callbacks
            batch.callbacks = None
            self._space.notify_all()
        if event is not None:
            event.set()
        if batch.afuture is not None and not batch.afuture.done():
            batch.afuture.set_result(None)
        while self._space_waiters and self._buffered < self._buffer_memory:
            w = self._space_waiters.pop()
            if not w.done():
                w.set_result(None)
        if callbacks:
            for index, cb in callbacks:
                self._run_callback(cb, batch, index)
        batch.buf = None

    def _run_callback(self, cb: DeliveryCallback, batch: Batch, index: int) -> None:
        try:
            if batch.error is not None:
                cb(batch.error, None)
            else:
                cb(None, batch.metadata(index))
        except Exception:
            log.exception("delivery callback raised")

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            pending = list(self._incomplete)
            self._open.clear()
            self._queues.clear()
        for batch in pending:
            self._complete(batch, -1, -1, error)
