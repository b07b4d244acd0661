"""`__transaction_state` on the broker's storage, as the transaction coordinator uses it.

- The topic is created at broker start if missing (single broker; in a cluster
  the controller side creates it like `__consumer_offsets`):
  `transaction.state.log.num.partitions` partitions (default 50),
  cleanup.policy=compact, segment.bytes = `transaction.state.log.segment.bytes`,
  min.insync.replicas = `transaction.state.log.min.isr` capped at the
  replication factor (one broker has one replica).
- `write` appends one record and returns once it is durable: fsynced by the
  group commit and, in a cluster, below the high watermark (acks=all), as
  Kafka writes transaction state, waiting the way group writes do
  (`broker.groups.store`: through new leader epochs while this broker keeps
  leading, up to ``WRITE_TIMEOUT_S``). It answers an error code as Kafka's
  TransactionStateManager maps append failures (`store_errors.txn_store_error`):
  NONE; NOT_COORDINATOR (leadership moved, storage error);
  COORDINATOR_NOT_AVAILABLE (fewer in-sync replicas than min.insync.replicas,
  not replicated in time); UNKNOWN_SERVER_ERROR (too large).
- `record` appends one record without waiting for it: it becomes durable with
  the next fsync of its log (the coordinator's next `write` there). For
  records whose loss a replay repairs (CompleteCommit / CompleteAbort: a
  replayed Prepare* writes the markers again).
- `read` replays a partition (key, value) in offset order; `coordinator_epoch`
  is the leader epoch of the partition (Kafka's coordinator epoch).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.groups.store import BrokerOffsetsLog
from broker.groups.store_errors import txn_store_error
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.cluster import TopicAdmin
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.replica import ReplicaManager

log = logging.getLogger("minikafka.txn.log")

TXN_TOPIC = "__transaction_state"
WRITE_TIMEOUT_S = 30.0


def txn_topic_configs(config: BrokerConfig, replication_factor: int) -> dict[str, str]:
    """The topic configs `__transaction_state` is created with."""
    return {
        "cleanup.policy": "compact",
        "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
        "compression.type": "producer",
        "min.insync.replicas": str(min(int(config["transaction.state.log.min.isr"]), replication_factor)),
    }


def ensure_txn_topic(config: BrokerConfig, replicas: ReplicaManager, topics: TopicAdmin) -> int:
    """Create `__transaction_state` on a single broker if it does not exist; returns its partition count."""
    info = replicas.logs.topics().get(TXN_TOPIC)
    if info is None:
        partitions = int(config["transaction.state.log.num.partitions"])
        topics.create_topic(TXN_TOPIC, partitions, txn_topic_configs(config, 1))
        return partitions
    if "cleanup.policy" not in info.configs:
        required = txn_topic_configs(config, 1)
        log.warning("%s had no topic configs (rebuilt registry?): restoring %s", TXN_TOPIC, required)
        topics.alter_topic_configs(TXN_TOPIC, {**required, **info.configs})
    return info.partitions


class TxnLog:
    """The coordinator's view of `__transaction_state` (see the module docstring)."""

    def __init__(self, replicas: ReplicaManager, group_commit: GroupCommit, num_partitions: int) -> None:
        self._replicas = replicas
        self._log = BrokerOffsetsLog(
            replicas, group_commit, num_partitions, TXN_TOPIC, timeout_s=WRITE_TIMEOUT_S
        )

    @property
    def num_partitions(self) -> int:
        return self._log.num_partitions

    def coordinator_epoch(self, partition: int) -> int:
        return self._replicas.partition(TXN_TOPIC, partition).leader_epoch

    def read(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        return self._log.read(partition)

    def record(self, partition: int, key: bytes, value: bytes | None) -> None:
        self._log.append(partition, [(key, value)], None)

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode:
        loop = asyncio.get_running_loop()
        stored: asyncio.Future[ErrorCode] = loop.create_future()

        def done(code: ErrorCode) -> None:
            if not stored.done():
                stored.set_result(code)

        self._log.append(partition, [(key, value)], done)
        return txn_store_error(await stored)
