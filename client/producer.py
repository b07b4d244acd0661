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

The producer is split by responsibility: `client.producer_batches` holds the
batch records, `client.producer_accumulator` the append path, the waits and
batch completion (and `DeliveryFuture`), `client.producer_sender` the sender
task and Produce requests; `AIOProducer` here combines them with the public
API and the transaction calls, and `Producer` wraps it for synchronous use.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from client._loop import LoopThread
from client.cluster import Cluster
from client.config import producer_config
from client.errors import ClientClosedError, IllegalStateError, KafkaError, KafkaTimeoutError
from client.partitioner import StickyPartitioner
from client.producer_accumulator import DeliveryFuture
from client.producer_batches import CODECS, Batch, DeliveryCallback, HeadersArg, PartitionState
from client.producer_sender import ProducerSender
from client.transactions import OffsetsArg, TransactionManager
from client.types import ConsumerGroupMetadata, RecordMetadata

__all__ = ["AIOProducer", "DeliveryCallback", "DeliveryFuture", "HeadersArg", "Producer"]


class AIOProducer(ProducerSender):
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
        self._codec = CODECS[c["compression.type"]]
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
        self._queues: dict[tuple[str, int], collections.deque[Batch]] = {}
        self._open: dict[tuple[str, int], Batch] = {}
        self._incomplete: set[Batch] = set()
        self._buffered = 0
        self._serial = 0
        self._sticky = StickyPartitioner()
        self._pstate: dict[tuple[str, int], PartitionState] = {}
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
                async with asyncio.timeout(timeout):
                    await asyncio.shield(self._sender)
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
                async with asyncio.timeout(timeout):
                    await asyncio.gather(*waits)
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
