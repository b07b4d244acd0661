"""The producer's sender: the task that drains ready batches into Produce requests, and their outcomes.

`ProducerSender` is a mixin of `client.producer.AIOProducer` (which sets the
state declared below in its ``__init__`` and provides ``cluster``); it builds
on `client.producer_accumulator.RecordAccumulator`, whose queues it drains.
Everything here runs on the producer's event loop thread.

- `_run`, the sender task: gets a producer id (InitProducerId) when an
  idempotent, non-transactional producer needs one, then repeatedly drains
  and sleeps until woken or until the next linger or retry backoff ends.
- `_drain` / `_take`: a partition's head batch is ready when it is closed,
  has lingered linger.ms, is flushed, or has batches behind it (and, in a
  transaction, only once its partition is in it); ready batches
  are grouped per leader into Produce requests of at most max.request.size,
  with at most max.in.flight.requests.per.connection requests per broker (and
  one per partition while it recovers). A batch is encoded once, when first
  taken, and numbered then when idempotent (again after a producer id change).
- `_send_request` and the outcomes: `_done_ok` for a written (or duplicate)
  batch; `_retry_or_fail` re-queues a batch in sequence order after a
  retriable error, until retries or delivery.timeout.ms run out;
  `_fail_batch` fails it for good (asking for a new producer id if its
  sequence numbers are burnt). `_expire` fails queued batches older than
  delivery.timeout.ms; a missing leader, stale metadata or a retriable error
  refreshes the metadata in the background.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING, Any

from client.errors import (
    RETRIABLE_CODES,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TransactionAbortedError,
    error_for,
)
from client.producer_accumulator import RecordAccumulator
from client.producer_batches import Batch, PartitionState
from client.records import build_batch, restamp
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from client.cluster import Cluster

log = logging.getLogger("client.producer")

PRODUCE = 0
INIT_PRODUCER_ID = 22
INT32_MAX = 2**31 - 1


class ProducerSender(RecordAccumulator):
    """Mixin of `client.producer.AIOProducer`: the sender task, Produce requests and their outcomes."""

    if TYPE_CHECKING:
        _acks: int
        _linger: float
        _codec: int
        _idempotent: bool
        _max_inflight: int
        _retries: int
        _retry_backoff: float
        _request_timeout: float
        _delivery_timeout: float
        _pstate: dict[tuple[str, int], PartitionState]
        _node_inflight: dict[int, int]
        _node_locks: dict[int, asyncio.Lock]
        _producer_id: int
        _producer_epoch: int
        _need_new_pid: bool
        _flushing: int
        _metadata_task: asyncio.Task[Any] | None

        @property
        def cluster(self) -> Cluster: ...

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

    def _take(self, keys: list[tuple[str, int]], now: float) -> list[Batch]:
        """Pop the head batch of each partition in ``keys`` (up to max.request.size) and encode it."""
        out: list[Batch] = []
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
                    state = self._pstate[qkey] = PartitionState()
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

    async def _send_request(self, node: int, batches: list[Batch]) -> None:
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

    def _state(self, batch: Batch) -> PartitionState:
        return self._pstate[(batch.tp.topic, batch.tp.partition)]

    def _done_ok(self, batch: Batch, base_offset: int, log_append_time: int) -> None:
        qkey = (batch.tp.topic, batch.tp.partition)
        state = self._pstate[qkey]
        state.inflight -= 1
        if state.recovering:
            with self._lock:
                q = self._queues.get(qkey)
                if not q or q[0].base_sequence is None:
                    state.recovering = False
        self._complete(batch, base_offset, log_append_time, None)

    def _handle_error(self, batch: Batch, code: int) -> None:
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
        self, batch: Batch, exc: BaseException, *, refresh: bool = False, force: bool = False
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

    def _fail_batch(self, batch: Batch, exc: BaseException) -> None:
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
