"""Adding partitions to a transaction for its producer: transactions v2 (KIP-890 part 2).

A producer of transaction version 2 sends neither AddPartitionsToTxn nor
AddOffsetsToTxn. The partition leader that receives its first transactional
batch on a partition (Produce v12+), and the group coordinator that receives
its TxnOffsetCommit v5, add the partition to the transaction themselves
before writing, as Kafka's AddPartitionsToTxnManager does:

- the transactional id's coordinator is on this broker: the coordinator's
  ``add_partitions`` directly (``client_tv=2``);
- elsewhere: AddPartitionsToTxn v5 (``verify_only`` false) to the leader of
  the id's `__transaction_state` partition (`broker.txn.broker_links`).

`ImplicitAdder.add` answers a code per partition, in the words of Kafka's
AddPartitionsToTxnManager (a fenced producer INVALID_PRODUCER_EPOCH, this
broker refused by the coordinator INVALID_TXN_STATE): NONE,
INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE,
CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED (a partition the
coordinator does not know); COORDINATOR_NOT_AVAILABLE when no broker leads the
id's partition; NETWORK_EXCEPTION when the coordinator could not be asked or
answered nonsense. Each caller then maps the coordinator trouble to its API's
words (`produce_error`, `offset_commit_error`: Kafka's ReplicaManager and
group coordinator mappings).

Adds to one broker travel on up to ``MAX_LINKS`` connections at once, so a
producer whose coordinator is still writing its previous transaction's
markers does not hold up the others.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.groups.hashing import partition_for
from broker.topic_results import partitions_by_topic
from broker.txn.broker_links import LINK_ERRORS, BrokerLinks
from broker.txn.log import TXN_TOPIC
from broker.txn.state import TRANSACTIONS_V2
from protocol.errors import ErrorCode, error_code

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView
    from broker.txn.coordinator import TransactionCoordinator

log = logging.getLogger("minikafka.txn.add")

TopicPartition = tuple[str, int]
ADD_PARTITIONS_TO_TXN = 24
BROKER_VERSION = 5
TIMEOUT_S = 35.0  # above the coordinator's own wait for its log write (30 s)
MAX_LINKS = 4


class ImplicitAdder:
    def __init__(
        self, coordinator: TransactionCoordinator, cluster: ClusterView, node_id: int, listener: str | None
    ) -> None:
        self._coordinator = coordinator
        self._cluster = cluster
        self._node_id = node_id
        self.links = BrokerLinks(cluster, listener, f"txn-partition-leader-{node_id}", MAX_LINKS)
        # transactional id -> done once the newest Produce of it waiting for an add has appended
        # (`broker.handlers.produce` orders a producer's pipelined requests by it)
        self.pending: dict[str, asyncio.Future[None]] = {}

    async def add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Add ``partitions`` to the producer's transaction; a code per partition (module docstring)."""
        codes = await self._add(transactional_id, producer_id, producer_epoch, partitions)
        return {tp: _MANAGER_WORDS.get(code, code) for tp, code in codes.items()}

    async def _add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """The coordinator's own codes, from this broker or another one."""
        coordinator = self._coordinator
        if coordinator.ownership_error(transactional_id) != ErrorCode.NOT_COORDINATOR:
            code = await coordinator.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, TRANSACTIONS_V2
            )
            return dict.fromkeys(partitions, code)
        topic = self._cluster.topic(TXN_TOPIC)
        leader = -1
        if topic is not None:
            leader = topic.partitions[partition_for(transactional_id, len(topic.partitions))].leader
        if leader < 0:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader == self._node_id:  # this broker is taking the partition over
            return dict.fromkeys(partitions, ErrorCode.NOT_COORDINATOR)
        return await self._remote(leader, transactional_id, producer_id, producer_epoch, partitions)

    async def _remote(
        self,
        leader: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        topics = partitions_by_topic(partitions)
        body = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": False,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                }
            ]
        }
        try:
            answer = await self.links.call(leader, ADD_PARTITIONS_TO_TXN, BROKER_VERSION, body, TIMEOUT_S)
        except LINK_ERRORS as exc:
            log.info("AddPartitionsToTxn to broker %d failed: %s", leader, exc)
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        if answer.error_code:
            return dict.fromkeys(partitions, error_code(answer.error_code))
        codes = {
            (topic.name, p.partition_index): error_code(p.partition_error_code)
            for txn in answer.results_by_transaction
            for topic in txn.topic_results
            for p in topic.results_by_partition
        }
        # a partition the answer left out was not added
        return {tp: codes.get(tp, ErrorCode.NETWORK_EXCEPTION) for tp in partitions}

    def close(self) -> None:
        self.links.close()


# Kafka's AddPartitionsToTxnManager hands its callers these coordinator codes in other words
_MANAGER_WORDS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: ErrorCode.INVALID_TXN_STATE,
}

_PRODUCE_RETRIABLE = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


def produce_error(code: ErrorCode) -> ErrorCode:
    """What a Produce answers for an `ImplicitAdder.add` code (Kafka's ReplicaManager): coordinator
    trouble is the retriable NOT_ENOUGH_REPLICAS."""
    return ErrorCode.NOT_ENOUGH_REPLICAS if code in _PRODUCE_RETRIABLE else code


def offset_commit_error(code: ErrorCode) -> ErrorCode:
    """What a TxnOffsetCommit v5 answers for an `ImplicitAdder.add` code (Kafka's group
    coordinator): a coordinator that could not be asked is COORDINATOR_LOAD_IN_PROGRESS."""
    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if code == ErrorCode.NETWORK_EXCEPTION else code
