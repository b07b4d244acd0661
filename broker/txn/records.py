"""The `__transaction_state` records, in Kafka's formats (TransactionLogKey / TransactionLogValue).

Key, version 0, not flexible: INT16 version (0), STRING transactional id
(INT16 length + UTF-8). Value: INT16 version, then

- version 0 (what Kafka writes while transaction.version is finalized at 0):
  INT64 ProducerId, INT16 ProducerEpoch, INT32 TransactionTimeoutMs, INT8
  TransactionStatus, nullable ARRAY of [STRING Topic, ARRAY INT32
  PartitionIds] TransactionPartitions, INT64 TransactionLastUpdateTimestampMs,
  INT64 TransactionStartTimestampMs;
- version 1 (transaction.version 1 and up; what minikafka, at level 2,
  writes): the same fields in the flexible encoding, with tagged fields 0
  PreviousProducerId, 1 NextProducerId (INT64, default -1), 3
  NextProducerEpoch (INT16, default -1, never set) and 2
  ClientTransactionVersion (INT16, default 0: the transaction version of the
  requests that drove the transaction, 2 for EndTxn v5 / Produce v12+).
  Kafka 4.1 leaves the producer id tags at their defaults; minikafka sets
  them while a producer id is being replaced at epoch exhaustion (a new
  coordinator replaying the log then finishes the switch, and recognises a
  retried EndTxn of the old id).

A null value is a tombstone (an expired transactional id). Status codes are
Kafka's (`TxnState`). Decoding raises `ProtocolError` on anything malformed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from construct import ConstructError

from broker.topic_results import partitions_by_topic
from protocol.errors import ProtocolError
from protocol.schema import Arr, F, message_versions

KEY_VERSION = 0
_I16 = struct.Struct(">h")

_FIELDS = [
    F("producer_id", "int64"),
    F("previous_producer_id", "int64", versions="1+", tag=0, tagged="1+", default=-1),
    F("next_producer_id", "int64", versions="1+", tag=1, tagged="1+", default=-1),
    F("producer_epoch", "int16"),
    F("transaction_timeout_ms", "int32"),
    F("transaction_status", "int8"),
    F(
        "transaction_partitions",
        Arr(F("topic", "string"), F("partition_ids", Arr("int32"))),
        nullable="0+",
    ),
    F("transaction_last_update_timestamp_ms", "int64"),
    F("transaction_start_timestamp_ms", "int64"),
    F("client_transaction_version", "int16", versions="1+", tag=2, tagged="1+", default=0),
    F("next_producer_epoch", "int16", versions="1+", tag=3, tagged="1+", default=-1),
]
_SCHEMAS = message_versions(_FIELDS, 0, 1, "1+")


@dataclass(frozen=True, slots=True)
class TxnValue:
    """One transactional id's state as the log has it."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_tv: int = 0


VALUE_VERSION = 1


def encode_key(transactional_id: str) -> bytes:
    data = transactional_id.encode()
    return _I16.pack(KEY_VERSION) + _I16.pack(len(data)) + data


def decode_key(data: bytes) -> str:
    if len(data) < 4:
        raise ProtocolError("__transaction_state key: truncated")
    version, n = struct.unpack_from(">hh", data)
    if version != KEY_VERSION:
        raise ProtocolError(f"__transaction_state key: unknown version {version}")
    if n < 0 or 4 + n != len(data):
        raise ProtocolError(f"__transaction_state key: bad string length {n}")
    try:
        return data[4:].decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"__transaction_state key: {exc}") from None


def encode_value(v: TxnValue) -> bytes:
    topics = partitions_by_topic(v.partitions)
    body = {
        "producer_id": v.producer_id,
        "producer_epoch": v.producer_epoch,
        "transaction_timeout_ms": v.timeout_ms,
        "transaction_status": v.status,
        "transaction_partitions": [{"topic": t, "partition_ids": ps} for t, ps in topics.items()],
        "transaction_last_update_timestamp_ms": v.last_update_ms,
        "transaction_start_timestamp_ms": v.start_ms,
        "previous_producer_id": v.previous_producer_id,
        "next_producer_id": v.next_producer_id,
        "client_transaction_version": v.client_tv,
    }
    return _I16.pack(VALUE_VERSION) + _SCHEMAS[VALUE_VERSION].build(body)


def decode_value(data: bytes) -> TxnValue:
    if len(data) < 2:
        raise ProtocolError("__transaction_state value: truncated version")
    (version,) = _I16.unpack_from(data)
    schema = _SCHEMAS.get(version)
    if schema is None:
        raise ProtocolError(f"__transaction_state value: unknown version {version}")
    try:
        c = schema.parse(data[2:])
    except (ConstructError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"__transaction_state value: {exc}") from None
    partitions = frozenset((t.topic, p) for t in (c.transaction_partitions or ()) for p in t.partition_ids)
    return TxnValue(
        c.producer_id,
        c.producer_epoch,
        c.transaction_timeout_ms,
        c.transaction_status,
        partitions,
        c.transaction_last_update_timestamp_ms,
        c.transaction_start_timestamp_ms,
        c.get("previous_producer_id", -1),
        c.get("next_producer_id", -1),
        c.get("client_transaction_version", 0),
    )
