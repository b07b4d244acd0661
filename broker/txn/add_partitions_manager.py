"""A partition leader's requests to the transaction coordinator (Kafka's AddPartitionsToTxnManager).

Before a transactional write, the partition leader that receives a producer's
first transactional batch on a partition (Produce), and the group coordinator
that receives its TxnOffsetCommit, ask the transactional id's coordinator
about that partition:

- an add (transactions v2, KIP-890 part 2: Produce v12+, TxnOffsetCommit v5):
  the producer sent neither AddPartitionsToTxn nor AddOffsetsToTxn, so the
  partition is added to its transaction before the write;
- a verification (KIP-890 part 1: Produce v3-11, TxnOffsetCommit v0-4, for a
  coordinator on another broker; one here is asked synchronously by
  `broker.txn.verification`): is the partition already in the open
  transaction? Nothing is added.

Either goes to the coordinator's ``add_partitions`` / ``verify_partitions``
directly when it is on this broker (``client_tv=2`` for an add), else as
AddPartitionsToTxn v5 (``verify_only`` false or true) to the leader of the
id's `__transaction_state` partition (`broker.txn.broker_links`).

`AddPartitionsManager.ask` answers an add a code per partition, in the words
of Kafka's AddPartitionsToTxnManager (a fenced producer INVALID_PRODUCER_EPOCH,
this broker refused by the coordinator INVALID_TXN_STATE): NONE,
INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE,
CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED (a partition the
coordinator does not know); COORDINATOR_NOT_AVAILABLE when no broker leads the
id's partition; NETWORK_EXCEPTION when the coordinator could not be asked or
answered nonsense. A verification answers in the same words, a partition not
in the transaction TRANSACTION_ABORTABLE. Each caller then maps them to its
API's words (`produce_error`, `offset_commit_error`,
`broker.txn.verification.verification_error`: Kafka's ReplicaManager and group
coordinator mappings).

Requests to one broker travel on up to ``MAX_LINKS`` connections at once, so a
producer whose coordinator is still writing its previous transaction's
markers does not hold up the others.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

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


class AddPartitionsManager:
    def __init__(
        self, coordinator: TransactionCoordinator, cluster: ClusterView, node_id: int, listener: str | None
    ) -> None:
        self._coordinator = coordinator
        self._cluster = cluster
        self._node_id = node_id
        self.links = BrokerLinks(cluster, listener, f"txn-partition-leader-{node_id}", MAX_LINKS)
        # transactional id -> done once the newest Produce of it waiting for the coordinator has appended
        # (`broker.handlers.produce` orders a producer's pipelined requests by it)
        self.pending: dict[str, asyncio.Future[None]] = {}

    async def ask(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        *,
        verify_only: bool,
    ) -> dict[TopicPartition, ErrorCode]:
        """A code per partition (module docstring): adding ``partitions`` to the producer's
        transaction; or, ``verify_only`` (KIP-890 part 1, `broker.txn.verification`), whether each
        is in its open transaction (NONE, TRANSACTION_ABORTABLE, INVALID_PRODUCER_ID_MAPPING,
        INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, or the trouble asking, as for an add)."""
        coordinator = self._coordinator
        if coordinator.ownership_error(transactional_id) != ErrorCode.NOT_COORDINATOR:
            if verify_only:
                code, codes = coordinator.verify_partitions(
                    transactional_id, producer_id, producer_epoch, partitions
                )
                return {tp: _manager_words(codes.get(tp, code)) for tp in partitions}
            code = await coordinator.add_partitions(
                transactional_id, producer_id, producer_epoch, partitions, TRANSACTIONS_V2
            )
            return dict.fromkeys(partitions, _manager_words(code))
        topic = self._cluster.topic(TXN_TOPIC)
        leader = -1
        if topic is not None:
            leader = topic.partitions[partition_for(transactional_id, len(topic.partitions))].leader
        if leader < 0:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader == self._node_id:  # this broker is taking the partition over
            return dict.fromkeys(partitions, ErrorCode.NOT_COORDINATOR)
        body = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": verify_only,
                    "topics": [
                        {"name": t, "partitions": ps} for t, ps in partitions_by_topic(partitions).items()
                    ],
                }
            ]
        }
        codes = await self._remote(leader, body, partitions)
        return {tp: _manager_words(code) for tp, code in codes.items()}

    async def _remote(
        self, leader: int, body: dict[str, Any], partitions: frozenset[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """The coordinator's codes from broker ``leader`` for the AddPartitionsToTxn ``body``."""
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


def _manager_words(code: ErrorCode) -> ErrorCode:
    return _MANAGER_WORDS.get(code, code)


_PRODUCE_RETRIABLE = frozenset(
    {
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


def produce_error(code: ErrorCode) -> ErrorCode:
    """What a Produce answers for an `AddPartitionsManager.ask` code (Kafka's ReplicaManager):
    coordinator trouble is the retriable NOT_ENOUGH_REPLICAS."""
    return ErrorCode.NOT_ENOUGH_REPLICAS if code in _PRODUCE_RETRIABLE else code


def offset_commit_error(code: ErrorCode) -> ErrorCode:
    """What a TxnOffsetCommit answers for an `AddPartitionsManager.ask` code (Kafka's group
    coordinator): a coordinator that could not be asked is COORDINATOR_LOAD_IN_PROGRESS."""
    return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if code == ErrorCode.NETWORK_EXCEPTION else code
