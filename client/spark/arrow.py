"""Fetched records to Arrow, column by column: the executor side of the Spark data source.

`to_arrow` turns one `client.records.RecordColumns` (a record set decoded by
numpy) into a ``pyarrow.RecordBatch`` in the schema of Spark's Kafka source,
with no per-record Python work except for records that carry headers:

- keys and values: the decoded records section is viewed as one Arrow binary
  array whose elements alternate between a key (or value) and the bytes up to
  the next one; ``take`` of the even elements copies the keys out in C, and a
  validity bitmap marks null keys;
- offset, partition, timestampType: numpy arrays handed to Arrow;
- timestamp: milliseconds to Spark's microsecond UTC timestamps;
- topic: one string repeated, built from buffers;
- headers (``includeHeaders``): null for records without headers, else a list
  of (key string, value binary) structs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from client.records import RecordColumns

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema matching `client.spark.schema.kafka_schema`."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADER_TYPE))
    return pa.schema(fields)


def binary_slices(data: bytes, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """``data[start[i] : start[i] + length[i]]`` for each i as an Arrow binary array (length -1: null).

    The slices must lie in ``data`` in increasing, non-overlapping order (as
    the fields of consecutive records do).
    """
    n = int(start.shape[0])
    if n == 0:
        return pa.array([], pa.binary())
    null = length < 0
    if null.all():
        return pa.nulls(n, pa.binary())
    ends = start + np.maximum(length, 0)
    bounds = np.empty(2 * n + 1, dtype=np.int64)
    bounds[0:-1:2] = start
    bounds[1:-1:2] = ends
    bounds[-1] = ends[-1]
    base = int(bounds[0])
    stop = int(bounds[-1])
    if stop - base >= 2**31:
        raise ValueError("record set too large for one Arrow batch (2 GiB)")
    offsets = (bounds - base).astype(np.int32)
    window = pa.py_buffer(memoryview(data)[base:stop])
    both = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(offsets), window])
    picked = pc.take(both, pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))
    if not null.any():
        return picked
    validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
    _, picked_offsets, picked_data = picked.buffers()
    return pa.Array.from_buffers(
        pa.binary(), n, [validity, picked_offsets, picked_data], null_count=int(null.sum())
    )


def repeated_string(value: str, n: int) -> pa.Array:
    """An Arrow string array of ``n`` times ``value``."""
    raw = value.encode("utf-8")
    offsets = (np.arange(n + 1, dtype=np.int64) * len(raw)).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def headers_array(headers: list[Any]) -> pa.Array:
    """Spark's headers column: null where a record has no headers."""
    return pa.array(
        [[{"key": k, "value": v} for k, v in h] if h else None for h in headers],
        HEADER_TYPE,
    )


def to_arrow(cols: RecordColumns, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """One Arrow record batch in the Kafka source's schema holding every record of ``cols``."""
    n = len(cols)
    ts_type = (
        np.zeros(n, dtype=np.int32) if cols.timestamp_types is None else cols.timestamp_types.astype(np.int32)
    )
    arrays = [
        binary_slices(cols.data, cols.key_start, cols.key_len),
        binary_slices(cols.data, cols.value_start, cols.value_len),
        repeated_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(cols.offsets),
        pa.array(cols.timestamps * 1000, TIMESTAMP_TYPE),
        pa.array(ts_type),
    ]
    if include_headers:
        arrays.append(headers_array(cols.headers()))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))
