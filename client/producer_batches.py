"""The producer's batch records: `Batch`, `PartitionState`, and the checks a record's fields pass.

A `Batch` holds the records of one partition that are sent and acknowledged
together: ``records`` is a list of (key, value, timestamp_ms, headers) tuples,
key and value bytes or None, headers a list of (str, bytes | None) pairs or
None. ``size`` is the estimated encoded size of those records, ``buf`` the
encoded record batch from when it is first taken for sending until it is done
(retries send it unchanged; a renumbering rewrites only its producer id, epoch
and base sequence with `client.records.restamp`), and ``serial`` its creation
order among the producer's batches. The producer fills in ``base_offset``, ``log_append_time`` or
``error`` when it sets ``done``.

`PartitionState` is the idempotence bookkeeping of one partition: the next
sequence number, the requests in flight, and whether it is recovering from a
failed batch. `to_bytes` and `header_list` turn the keys, values and headers
`send` accepts into bytes, raising `TypeError` for anything else. `CODECS`
maps compression.type to its `protocol.codecs` id.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client.types import RecordMetadata, TopicPartition
from protocol import codecs

CODECS = {
    "none": codecs.NONE,
    "gzip": codecs.GZIP,
    "snappy": codecs.SNAPPY,
    "lz4": codecs.LZ4,
    "zstd": codecs.ZSTD,
}

DeliveryCallback = Callable[[BaseException | None, RecordMetadata | None], Any]
HeadersArg = Iterable[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None


class Batch:
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


class PartitionState:
    """Idempotence bookkeeping for one partition."""

    __slots__ = ("next_sequence", "inflight", "recovering")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.inflight = 0
        self.recovering = False


def to_bytes(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(
        f"{what} must be bytes, str or None (or set a {what}.serializer), not {type(value).__name__}"
    )


def header_list(headers: HeadersArg) -> list[tuple[str, bytes | None]] | None:
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for k, v in items:
        if not isinstance(k, str):
            raise TypeError(f"header keys must be str, not {type(k).__name__}")
        out.append((k, to_bytes(v, "header value")))
    return out
