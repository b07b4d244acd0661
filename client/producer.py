"""The producer: `AIOProducer` (asyncio) and `Producer` (synchronous, on a background loop).

Data flow: `send` picks the partition (explicit; else murmur2 of the key; else
the topic's sticky partition), then appends (key, value, timestamp, headers)
to that partition's open batch under one lock, so any thread can send without
a hop to the event loop. The sender task on the loop drains batches that are
full (batch.size), have lingered (linger.ms), or are being flushed, encodes
each once (`client.records.build_batch`, compressed with compression.type),
groups them per leader into Produce requests of at most max.request.size, and
pipelines up to max.in.flight.requests.per.connection requests per broker.

Idempotence (default with acks=all): the producer gets a producer id from
InitProducerId and numbers each partition's batches with consecutive
sequences when a batch is first sent. A batch that fails with a retriable
error (connection drop, timeout, NOT_LEADER_OR_FOLLOWER, ...) is re-queued in
sequence order with its bytes unchanged, and while a partition has re-queued
batches only one of its batches is in flight at a time, so the broker sees the
sequences in order: a batch it already wrote is answered as a duplicate with
its original offset, never written twice, and batches sent behind a failed one
come back OUT_OF_ORDER_SEQUENCE_NUMBER and are re-queued behind it. A batch
that fails for good (MESSAGE_TOO_LARGE, retries or delivery.timeout.ms
exhausted) after it was numbered makes the producer fetch a new producer id
and renumber what is still queued, as Kafka's epoch bump does.

Transactions (transactional.id): `client.transactions.TransactionManager`
owns the transaction state and the coordinator requests; the producer asks it
before accepting a record (`check_send`), tells it which partitions records
go to, sends a partition's batches only once it is in the transaction, marks
them transactional, and reports batches that fail for good to it.

Delivery: `send` returns a `DeliveryFuture` (``.get()`` blocks, ``await``
works on the producer's loop) and calls ``on_delivery(error, metadata)`` once
the batch completes; callbacks run on the producer's event loop thread, so
they should be quick and must not call blocking producer methods.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client._loop import LoopThread
from client.cluster import Cluster
from client.config import producer_config
from client.errors import (
    RETRIABLE_CODES,
    ClientClosedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RecordTooLargeError,
    TransactionAbortedError,
    error_for,
)
from client.partitioner import StickyPartitioner, partition_for_key
from client.records import build_batch, restamp
from client.transactions import OffsetsArg, TransactionManager
from client.types import ConsumerGroupMetadata, RecordMetadata, TopicPartition
from protocol import codecs
from protocol.errors import ErrorCode

log = logging.getLogger("client.producer")
_time_ns = time.time_ns
_tuple_new = tuple.__new__

PRODUCE = 0
INIT_PRODUCER_ID = 22
INT32_MAX = 2**31 - 1
_CODECS = {
    "none": codecs.NONE,
    "gzip": codecs.GZIP,
    "snappy": codecs.SNAPPY,
    "lz4": codecs.LZ4,
    "zstd": codecs.ZSTD,
}
# Record overhead bound used for batch sizing: length, attributes, deltas, key/value lengths, header count.
_RECORD_OVERHEAD = 21

DeliveryCallback = Callable[[BaseException | None, RecordMetadata | None], Any]
HeadersArg = Iterable[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None


class _Batch:
    """Records for one partition, sent and acknowledged together."""

    __slots__ = (
        "tp",
        "records",
        "size",
        "created",
        "callbacks",
        "closed",
        "buf",
        "base_sequence",
        "producer_id",
        "attempts",
        "retry_at",
        "done",
        "base_offset",
        "log_append_time",
        "error",
        "event",
        "afuture",
        "serial",
        "sent",
        "accounted",
    )

    def __init__(self, tp: TopicPartition, serial: int) -> None:
        self.tp = tp
        self.records: list[tuple[Any, Any, int, Any]] = []
        self.size = 0
        self.created = time.monotonic()
        self.callbacks: list[tuple[int, DeliveryCallback]] | None = None
        self.closed = False
        self.buf: bytearray | None = None
        self.base_sequence: int | None = None
        self.producer_id = -1
        self.attempts = 0
        self.retry_at = 0.0
        self.done = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.event: threading.Event | None = None
        self.afuture: asyncio.Future[None] | None = None
        self.serial = serial
        self.sent = False  # ever written to a socket: its outcome may be unknown after a failure
        self.accounted = False  # its size counted in the producer's buffered bytes (done once it is closed)

    def metadata(self, index: int) -> RecordMetadata:
        offset = -1 if self.base_offset < 0 else self.base_offset + index
        ts = self.log_append_time if self.log_append_time >= 0 else self.records[index][2]
        return RecordMetadata(self.tp.topic, self.tp.partition, offset, ts)


class DeliveryFuture(tuple):  # type: ignore[type-arg]
    """The outcome of one `send`: `get()` blocks for the `RecordMetadata`; awaitable on the producer's loop.

    A tuple (producer, batch, index) underneath: one is made per record, and a
    tuple subclass is the cheapest object Python can build.
    """

    __slots__ = ()

    @property
    def _producer(self) -> AIOProducer:
        return self[0]  # type: ignore[no-any-return]

    @property
    def _batch(self) -> _Batch:
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


class _PartitionState:
    """Idempotence bookkeeping for one partition."""

    __slots__ = ("next_sequence", "inflight", "recovering")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.inflight = 0
        self.recovering = False


def _to_bytes(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(
        f"{what} must be bytes, str or None (or set a {what}.serializer), not {type(value).__name__}"
    )


def _headers(headers: HeadersArg) -> list[tuple[str, bytes | None]] | None:
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for k, v in items:
        if not isinstance(k, str):
            raise TypeError(f"header keys must be str, not {type(k).__name__}")
        out.append((k, _to_bytes(v, "header value")))
    return out


class AIOProducer:
    """Asyncio producer. ``await start()`` (or ``async with``) before sending; ``await close()`` at the end."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = producer_config(config, **kwargs)
        c = self.config
        self._acks: int = c["acks"]
        self._linger = c["linger.ms"] / 1000
        self._batch_size: int = max(c["batch.size"], 1)
        self._max_request: int = c["max.request.size"]
        self._max_record = self._max_request - 61  # a record must fit a batch that fits a request
        self._buffer_memory: int = c["buffer.memory"]
        self._codec = _CODECS[c["compression.type"]]
        self._idempotent: bool = c["enable.idempotence"]
        self._max_inflight: int = c["max.in.flight.requests.per.connection"]
        self._retries: int = c["retries"]
        self._retry_backoff = c["retry.backoff.ms"] / 1000
        self._request_timeout = c["request.timeout.ms"] / 1000
        self._delivery_timeout = c["delivery.timeout.ms"] / 1000
        self._ignore_keys: bool = c["partitioner.ignore.keys"]
        self._key_serializer = c["key.serializer"]
        self._value_serializer = c["value.serializer"]
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)
        self._queues: dict[tuple[str, int], collections.deque[_Batch]] = {}
        self._open: dict[tuple[str, int], _Batch] = {}
        self._incomplete: set[_Batch] = set()
        self._buffered = 0
        self._serial = 0
        self._sticky = StickyPartitioner()
        self._pstate: dict[tuple[str, int], _PartitionState] = {}
        self._node_inflight: dict[int, int] = collections.defaultdict(int)
        self._node_locks: dict[int, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._producer_id = -1
        self._producer_epoch = -1
        self._need_new_pid = False
        self._flushing = 0
        self._closing = False
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._cluster: Cluster | None = None
        self._sender: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._woken = False
        self._space_waiters: list[asyncio.Future[None]] = []
        self._metadata_task: asyncio.Task[Any] | None = None
        self._fatal: BaseException | None = None
        self._counts: dict[str, int] = {}  # partition counts, replaced after every metadata refresh
        self._txn = TransactionManager(self, c) if c["transactional.id"] is not None else None
        # True while sending needs none of: serializers, the closed check, a fatal error, a transaction.
        self._plain = self._key_serializer is None and self._value_serializer is None and self._txn is None

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the sender task (connections are made on first use)."""
        if self._sender is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._cluster = Cluster(self.config, allow_auto_topic_creation=True)
        self._cluster.add_listener(self._update_counts)
        self._sender = asyncio.ensure_future(self._run())

    def _update_counts(self) -> None:
        assert self._cluster is not None
        self._counts = {
            name: len(info.partitions)
            for name, info in self._cluster.topics.items()
            if not info.error and info.partitions
        }

    async def __aenter__(self) -> AIOProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            raise KafkaError("producer not started: await start() first")
        return self._cluster

    async def close(self, timeout: float | None = None) -> None:
        """Send everything buffered (waiting up to ``timeout`` s, default forever), then close.

        Records still undelivered at the timeout fail with `ClientClosedError`.
        """
        if self._closed:
            return
        self._closing = True
        self._plain = False
        self._wakeup()
        if self._sender is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._sender), timeout)
            except TimeoutError:
                self._sender.cancel()
                with contextlib.suppress(BaseException):
                    await self._sender
        self._fail_all(ClientClosedError("producer closed before the record was delivered"))
        self._closed = True
        if self._txn is not None:
            await self._txn.close()
        if self._metadata_task is not None:
            self._metadata_task.cancel()
        if self._cluster is not None:
            await self._cluster.close()

    async def flush(self, timeout: float | None = None) -> None:
        """Send every record buffered so far and wait until each is acknowledged (or failed)."""
        with self._lock:
            pending = list(self._incomplete)
            self._flushing += 1
        self._wakeup()
        try:
            waits = [self._afuture_for(b) for b in pending if not b.done]
            if waits:
                await asyncio.wait_for(asyncio.gather(*waits), timeout)
        except TimeoutError:
            raise KafkaTimeoutError(f"flush did not complete within {timeout} s") from None
        finally:
            self._flushing -= 1

    # -- sending -------------------------------------------------------------------------------------

    async def partitions_for(self, topic: str, *, fail_unknown: bool = False) -> list[int]:
        """The partitions of ``topic``, waiting up to max.block.ms for its metadata.

        With ``fail_unknown``, a broker answer of UNKNOWN_TOPIC_OR_PARTITION (the
        topic does not exist and the broker does not create topics on use)
        raises at once instead of waiting for someone else to create it.
        """
        n = self.cluster.partition_count(topic)
        if n is None:
            n = await self.cluster.wait_for_topic(
                topic, self.config["max.block.ms"] / 1000, fail_unknown=fail_unknown
            )
        return list(range(n))

    async def _partition_count(self, topic: str) -> int:
        n = self.cluster.partition_count(topic)
        if n is None:
            n = await self.cluster.wait_for_topic(topic, self.config["max.block.ms"] / 1000)
        return n

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersArg = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> DeliveryFuture:
        """Queue one record; returns its `DeliveryFuture` (await it for the `RecordMetadata`).

        Waits for topic metadata on first use of a topic and for buffer space
        when buffer.memory is full (up to max.block.ms).
        """
        if self._txn is not None:
            self._txn.check_send()  # before waiting for metadata
        n = self._counts.get(topic)
        if n is None:
            n = await self._partition_count(topic)
        if self._buffered >= self._buffer_memory:
            await self._wait_space_async()
        return self._append(topic, value, key, partition, timestamp_ms, headers, on_delivery, n)

    async def send_and_wait(
        self, topic: str, value: Any = None, key: Any = None, **kw: Any
    ) -> RecordMetadata:
        """`send` and wait for the record to be acknowledged."""
        future = await self.send(topic, value, key, **kw)
        return await future

    # -- transactions --------------------------------------------------------------------------------

    @property
    def transactional_id(self) -> str | None:
        return self._txn.transactional_id if self._txn is not None else None

    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise IllegalStateError("transactional method called on a producer without a transactional.id")
        return self._txn

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional.id with its coordinator, fencing older producers of it.

        Call once, before the first transaction; an open transaction of a
        previous producer with this id is aborted first. Waits up to
        ``timeout`` s (default max.block.ms); after a timeout call it again.
        """
        await self._transactions().init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now on belong to it until commit or abort."""
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_metadata: ConsumerGroupMetadata | str,
        timeout: float | None = None,
    ) -> None:
        """Commit ``offsets`` ({tp: next offset to read}) for a consumer group as part of the transaction.

        ``group_metadata`` is the consumer's `group_metadata()` (the group
        coordinator then rejects offsets of a member fenced out of the group)
        or just the group id. The group sees the offsets only once the
        transaction commits.
        """
        await self._transactions().send_offsets_to_transaction(offsets, group_metadata, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Send every buffered record, wait for them all, then commit the transaction.

        Raises `TransactionAbortableError` when a record or the offsets of the
        transaction failed (then call `abort_transaction`), and the fatal error
        (`ProducerFencedError`, ...) once the producer cannot go on.
        """
        await self._transactions().commit_transaction(timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail with `TransactionAbortedError`."""
        await self._transactions().abort_transaction(timeout)

    # The TransactionManager's view of the producer (`client.transactions.TxnHost`), loop thread only.

    def _producer_id_and_epoch(self) -> tuple[int, int]:
        return self._producer_id, self._producer_epoch

    def _set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        with self._lock:
            self._producer_id = producer_id
            self._producer_epoch = producer_epoch
            self._need_new_pid = False
            for state in self._pstate.values():
                state.next_sequence = 0
                state.recovering = False

    def _abort_queued(self, error: BaseException) -> bool:
        """Fail every batch that is not in flight with ``error``; True if one of them had sequence numbers."""
        with self._lock:
            dropped = [b for q in self._queues.values() for b in q]
            for q in self._queues.values():
                q.clear()
            self._open.clear()
        for batch in dropped:
            self._complete(batch, -1, -1, error)
        return any(b.base_sequence is not None for b in dropped)

    def _has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

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
            key = _to_bytes(key, "key")
        if value is not None and value.__class__ is not bytes:
            value = _to_bytes(value, "value")
        hdrs = _headers(headers) if headers else None
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
        self, batch: _Batch | None, qkey: tuple[str, int], size: int, sticky: bool, num_partitions: int
    ) -> tuple[_Batch, tuple[str, int]]:
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
        batch = _Batch(TopicPartition(topic, qkey[1]), self._serial)
        self._open[qkey] = batch
        q = self._queues.get(qkey)
        if q is None:
            q = self._queues[qkey] = collections.deque()
        q.append(batch)
        self._incomplete.add(batch)
        return batch, qkey

    def _close_open(self, batch: _Batch, qkey: tuple[str, int]) -> None:
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

    def _event_for(self, batch: _Batch) -> threading.Event | None:
        with self._lock:
            if batch.done:
                return None
            if batch.event is None:
                batch.event = threading.Event()
            return batch.event

    def _afuture_for(self, batch: _Batch) -> asyncio.Future[None]:
        assert self._loop is not None
        if batch.afuture is None:
            batch.afuture = self._loop.create_future()
            if batch.done:
                batch.afuture.set_result(None)
        return batch.afuture

    def _add_callback(self, batch: _Batch, index: int, callback: DeliveryCallback) -> None:
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
                await asyncio.wait_for(fut, max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise KafkaTimeoutError("buffer.memory full for max.block.ms") from None

    # -- completion ------------------------------------------------------------------------------------

    def _complete(
        self, batch: _Batch, base_offset: int, log_append_time: int, error: BaseException | None
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

    def _run_callback(self, cb: DeliveryCallback, batch: _Batch, index: int) -> None:
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

    # -- the sender ----------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                self._woken = False
                timeout: float | None = None
                if self._need_new_pid and any(self._node_inflight.values()):
                    # Let every request under the old producer id come back (batches sent behind a
                    # failed one return OUT_OF_ORDER and are re-queued) before renumbering.
                    timeout = self._retry_backoff
                else:
                    txn = self._txn
                    if txn is None:
                        needs_pid = self._idempotent and (self._producer_id < 0 or self._need_new_pid)
                        if needs_pid and self._incomplete and not await self._init_producer_id():
                            continue
                    else:
                        txn.poll()  # AddPartitionsToTxn for partitions new to the transaction
                    timeout = self._drain(time.monotonic())
                with self._lock:
                    idle = not self._incomplete
                if self._closing and idle:
                    return
                if self._woken:
                    continue
                assert self._loop is not None
                self._waiter = self._loop.create_future()
                handle = None
                if timeout is not None:
                    handle = self._loop.call_later(max(timeout, 0.0005), self._wake_on_loop)
                try:
                    await self._waiter
                finally:
                    self._waiter = None
                    if handle is not None:
                        handle.cancel()
        except Exception as exc:  # a bug: fail every pending record rather than hang them
            log.exception("producer sender crashed")
            self._fatal = KafkaError(f"producer sender failed: {exc!r}")
            self._plain = False
            self._fail_all(self._fatal)

    async def _init_producer_id(self) -> bool:
        try:
            resp = await self.cluster.send_any(
                INIT_PRODUCER_ID,
                {"transactional_id": None, "transaction_timeout_ms": self.config["transaction.timeout.ms"]},
            )
            if resp.error_code:
                raise error_for(resp.error_code, context="InitProducerId")
        except KafkaError as exc:
            if self._closing and not self._incomplete:
                return True
            log.debug("InitProducerId failed, retrying: %s", exc)
            self._expire(time.monotonic())
            await asyncio.sleep(self._retry_backoff)
            return False
        self._producer_id = resp.producer_id
        self._producer_epoch = resp.producer_epoch
        if self._need_new_pid:
            self._need_new_pid = False
            with self._lock:
                for state in self._pstate.values():
                    state.next_sequence = 0
                    state.recovering = False
                for q in self._queues.values():
                    for batch in q:
                        batch.base_sequence = None  # renumbered under the new producer id when sent
        return True

    def _expire(self, now: float) -> None:
        """Fail queued batches older than delivery.timeout.ms."""
        expired = []
        with self._lock:
            for qkey, q in self._queues.items():
                while q and now - q[0].created >= self._delivery_timeout:
                    batch = q.popleft()
                    self._close_open(batch, qkey)
                    expired.append(batch)
        for batch in expired:
            self._fail_batch(
                batch,
                KafkaTimeoutError(
                    f"expiring {len(batch.records)} record(s) for {batch.tp}: "
                    f"{self._delivery_timeout * 1000:.0f} ms has passed since batch creation"
                ),
            )

    def _drain(self, now: float) -> float | None:
        """Send every ready batch the in-flight limits allow; seconds until the next deadline (or None)."""
        self._expire(now)
        cluster = self.cluster
        next_deadline: float | None = None
        need_metadata = False
        ready: dict[int, list[tuple[str, int]]] = collections.defaultdict(list)
        linger = self._linger
        flushing = self._flushing > 0 or self._closing
        txn = self._txn
        with self._lock:
            for qkey, q in self._queues.items():
                if not q or (txn is not None and not txn.sendable(qkey)):
                    continue
                head = q[0]
                if head.retry_at > now:
                    d = head.retry_at - now
                    next_deadline = d if next_deadline is None else min(next_deadline, d)
                    continue
                if not (head.closed or flushing or len(q) > 1):
                    d = head.created + linger - now
                    if d > 0:
                        next_deadline = d if next_deadline is None else min(next_deadline, d)
                        continue
                leader = cluster.leader(head.tp)
                if leader is None:
                    need_metadata = True
                    continue
                state = self._pstate.get(qkey)
                if state is not None:
                    if state.recovering and state.inflight:
                        continue
                    if state.inflight >= self._max_inflight:
                        continue
                ready[leader].append(qkey)
        if need_metadata or (cluster.stale and cluster.tracked):
            self._refresh_metadata()  # also every metadata.max.age.ms: new partitions show up
        for node, keys in ready.items():
            while self._node_inflight[node] < self._max_inflight and keys:
                batches = self._take(keys, now)
                if not batches:
                    break
                self._node_inflight[node] += 1
                asyncio.ensure_future(self._send_request(node, batches))
                # A partition may have more ready batches: offer it again for the next request.
                keys = [k for k in keys if self._sendable(k, now)]
        return next_deadline

    def _sendable(self, qkey: tuple[str, int], now: float) -> bool:
        with self._lock:
            q = self._queues.get(qkey)
            if not q or (self._txn is not None and not self._txn.sendable(qkey)):
                return False
            head = q[0]
            if head.retry_at > now or not (head.closed or self._flushing or self._closing or len(q) > 1):
                return False
            state = self._pstate.get(qkey)
            if state is not None and (
                (state.recovering and state.inflight) or state.inflight >= self._max_inflight
            ):
                return False
            # Without idempotence, max.in.flight=1 is what keeps a partition's batches in order.
            return self._idempotent or self._max_inflight > 1 or state is None or not state.inflight

    def _take(self, keys: list[tuple[str, int]], now: float) -> list[_Batch]:
        """Pop the head batch of each partition in ``keys`` (up to max.request.size) and encode it."""
        out: list[_Batch] = []
        total = 0
        for qkey in keys:
            with self._lock:
                q = self._queues.get(qkey)
                if not q:
                    continue
                head = q[0]
                est = len(head.buf) if head.buf is not None else head.size + 61
                if out and total + est > self._max_request:
                    break
                q.popleft()
                self._close_open(head, qkey)
                state = self._pstate.get(qkey)
                if state is None:
                    state = self._pstate[qkey] = _PartitionState()
                state.inflight += 1
                if self._idempotent and (head.base_sequence is None or head.producer_id != self._producer_id):
                    head.base_sequence = state.next_sequence
                    state.next_sequence = (state.next_sequence + len(head.records)) & INT32_MAX
                    if head.buf is not None:
                        restamp(head.buf, self._producer_id, self._producer_epoch, head.base_sequence)
                    head.producer_id = self._producer_id
            if head.buf is None:
                if self._idempotent:
                    head.buf = build_batch(
                        head.records,
                        codec=self._codec,
                        producer_id=self._producer_id,
                        producer_epoch=self._producer_epoch,
                        base_sequence=head.base_sequence if head.base_sequence is not None else -1,
                        transactional=self._txn is not None,
                    )
                else:
                    head.buf = build_batch(head.records, codec=self._codec)
            head.attempts += 1
            out.append(head)
            total += len(head.buf)
        return out

    def _refresh_metadata(self) -> None:
        if self._metadata_task is None or self._metadata_task.done():
            self._metadata_task = asyncio.ensure_future(self._do_refresh())

    async def _do_refresh(self) -> None:
        try:
            with self._lock:
                topics = {k[0] for k, q in self._queues.items() if q}
            self.cluster.track(topics)
            await self.cluster.refresh()
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)
            await asyncio.sleep(self._retry_backoff)
        finally:
            self._wakeup()

    async def _send_request(self, node: int, batches: list[_Batch]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for b in batches:
            by_topic[b.tp.topic].append({"index": b.tp.partition, "records": b.buf})
        body = {
            "transactional_id": self._txn.transactional_id if self._txn is not None else None,
            "acks": self._acks,
            "timeout_ms": int(self._request_timeout * 1000),
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in by_topic.items()],
        }
        try:
            try:
                # Requests reach the socket in the order they were built (sequence order): a request
                # that waits for a connection or a drained socket must not be overtaken.
                async with self._node_locks[node]:
                    conn = await self.cluster.node(node)
                    await conn.drained()
                    for b in batches:
                        b.sent = True
                    pending = conn.request(
                        PRODUCE, body, timeout=self._request_timeout, expect_response=self._acks != 0
                    )
                if self._acks == 0:
                    for b in batches:
                        self._done_ok(b, -1, -1)
                    return
                resp = await pending
            except KafkaError as exc:
                for b in batches:
                    self._retry_or_fail(b, exc, refresh=isinstance(exc, KafkaConnectionError))
                return
            answered: dict[tuple[str, int], Any] = {}
            for t in resp.responses:
                for p in t.partition_responses:
                    answered[(t.name, p.index)] = p
            for b in batches:
                p = answered.get((b.tp.topic, b.tp.partition))
                if p is None:
                    self._retry_or_fail(b, KafkaError(f"no answer for {b.tp} in the Produce response"))
                    continue
                code = p.error_code
                if code == ErrorCode.NONE:
                    self._done_ok(b, p.base_offset, p.log_append_time_ms)
                elif code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                    self._done_ok(b, -1, -1)
                else:
                    self._handle_error(b, code)
        finally:
            self._node_inflight[node] -= 1
            self._wakeup()

    def _state(self, batch: _Batch) -> _PartitionState:
        return self._pstate[(batch.tp.topic, batch.tp.partition)]

    def _done_ok(self, batch: _Batch, base_offset: int, log_append_time: int) -> None:
        qkey = (batch.tp.topic, batch.tp.partition)
        state = self._pstate[qkey]
        state.inflight -= 1
        if state.recovering:
            with self._lock:
                q = self._queues.get(qkey)
                if not q or q[0].base_sequence is None:
                    state.recovering = False
        self._complete(batch, base_offset, log_append_time, None)

    def _handle_error(self, batch: _Batch, code: int) -> None:
        state = self._state(batch)
        if (
            code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            and self._idempotent
            and (state.recovering or batch.producer_id != self._producer_id)
        ):
            # Sent behind a batch that failed (or before a producer id change): not written, so resend in order.
            self._retry_or_fail(batch, error_for(code, context=str(batch.tp)), force=True)
            return
        if code in RETRIABLE_CODES:
            self._retry_or_fail(batch, error_for(code, context=str(batch.tp)), refresh=True)
            return
        state.inflight -= 1
        if self._txn is not None:
            self._fail_batch(batch, self._txn.produce_error(code, batch.tp))
        else:
            self._fail_batch(batch, error_for(code, context=f"produce to {batch.tp}"))

    def _retry_or_fail(
        self, batch: _Batch, exc: BaseException, *, refresh: bool = False, force: bool = False
    ) -> None:
        state = self._state(batch)
        state.inflight -= 1
        now = time.monotonic()
        if self._txn is not None and self._txn.dropping:
            self._fail_batch(
                batch, TransactionAbortedError(f"record not sent: its transaction failed ({exc})")
            )
            return
        if not force and (batch.attempts > self._retries or now - batch.created >= self._delivery_timeout):
            self._fail_batch(batch, exc)
            return
        if not force and self._closing and now - batch.created >= self._delivery_timeout:
            self._fail_batch(batch, exc)
            return
        log.debug("retrying %s after %s", batch.tp, exc)
        batch.retry_at = now + self._retry_backoff
        qkey = (batch.tp.topic, batch.tp.partition)
        with self._lock:
            q = self._queues.get(qkey)
            if q is None:
                q = self._queues[qkey] = collections.deque()
            # Back in sequence order (creation order when not idempotent), ahead of unsent batches.
            i = 0
            while i < len(q) and q[i].serial < batch.serial:
                i += 1
            q.insert(i, batch)
            if self._idempotent:
                state.recovering = True
        if refresh:
            self._refresh_metadata()

    def _fail_batch(self, batch: _Batch, exc: BaseException) -> None:
        if self._txn is not None:
            # Inside a transaction the transaction fails (the epoch is bumped at its abort if needed).
            self._txn.batch_failed(exc, numbered=batch.base_sequence is not None)
        elif self._idempotent and batch.base_sequence is not None and batch.sent:
            # Its sequence numbers are burnt: renumber what follows under a new producer id. The
            # partition's batches already in flight will come back OUT_OF_ORDER: re-queue them.
            self._need_new_pid = True
            state = self._pstate.get((batch.tp.topic, batch.tp.partition))
            if state is not None:
                state.recovering = True
        self._complete(batch, -1, -1, exc)


class Producer:
    """Synchronous producer; the I/O runs on a background event loop thread.

    ``Producer({"bootstrap.servers": "localhost:9092"})`` or
    ``Producer(bootstrap_servers="localhost:9092", linger_ms=10)``; see
    `client.config` for the keys. Use as a context manager or call `close()`.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOProducer(config, **kwargs)
        self.config = self._core.config
        self._max_block = self.config["max.block.ms"] / 1000
        self._lt = LoopThread("minikafka-producer")
        self._lt.run(self._core.start())
        self._closed = False

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        *,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersArg = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> DeliveryFuture:
        """Queue one record; returns its `DeliveryFuture` (``.get(timeout)`` for the `RecordMetadata`).

        Blocks only for topic metadata on a topic's first use and when
        buffer.memory is full, each up to max.block.ms.
        """
        core = self._core
        if core._txn is not None:
            core._txn.check_send()  # before waiting for metadata
        n = core._counts.get(topic)
        if n is None:
            n = self._lt.run(core._partition_count(topic), self._max_block + 1)
        if core._buffered >= core._buffer_memory:
            core._wait_space_sync(self._max_block)
        return core._append(topic, value, key, partition, timestamp_ms, headers, on_delivery, n)

    produce = send

    def partitions_for(self, topic: str, *, fail_unknown: bool = False) -> list[int]:
        return self._lt.run(self._core.partitions_for(topic, fail_unknown=fail_unknown))

    @property
    def transactional_id(self) -> str | None:
        return self._core.transactional_id

    def init_transactions(self, timeout: float | None = None) -> None:
        """See `AIOProducer.init_transactions`."""
        self._lt.run(self._core.init_transactions(timeout))

    def begin_transaction(self) -> None:
        """See `AIOProducer.begin_transaction`."""
        self._core.begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_metadata: ConsumerGroupMetadata | str,
        timeout: float | None = None,
    ) -> None:
        """See `AIOProducer.send_offsets_to_transaction`."""
        self._lt.run(self._core.send_offsets_to_transaction(offsets, group_metadata, timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """See `AIOProducer.commit_transaction`."""
        self._lt.run(self._core.commit_transaction(timeout))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """See `AIOProducer.abort_transaction`."""
        self._lt.run(self._core.abort_transaction(timeout))

    def flush(self, timeout: float | None = None) -> None:
        """Send everything buffered and wait for every acknowledgement."""
        self._lt.run(self._core.flush(timeout))

    def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout`` s, default forever) and release the connections and the I/O thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._core.close(timeout))
        finally:
            self._lt.stop()
