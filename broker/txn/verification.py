"""Verifying a producer's first transactional write on a partition (KIP-890 part 1).

A partition leader on this broker (Produce v3-11) or a group coordinator
(TxnOffsetCommit v0-4, on the group's `__consumer_offsets` partition) checks a
producer's first transactional batch there with the transaction coordinator,
as Kafka's ``transaction.partition.verification.enable``: a batch for a
partition not in the open transaction (a late one of a transaction that
ended) would open a transaction no marker ever closes. Later batches of the
same producer there were checked by the first (it has a transaction open on
the partition: `opened_here`).

`unverified_write` asks a coordinator on this broker and answers the error in
the request's words (Kafka's AddPartitionsToTxnManager and ReplicaManager), or
None to write. A coordinator elsewhere (or one still loading its partition)
is asked by the handler with `AddPartitionsManager.ask` (AddPartitionsToTxn v5
verify_only), whose codes `verification_error` words the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.replica import Partition
    from broker.txn.coordinator import TransactionCoordinator


def unverified_write(
    coordinator: TransactionCoordinator,
    part: Partition,
    transactional_id: str | None,
    producer_id: int,
    producer_epoch: int,
    *,
    abortable: bool,
    concurrent: bool,
) -> ErrorCode | None:
    """None if the producer's batch may be written on ``part``; else its error: no transactional
    id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, or `verification_error` of the coordinator's code."""
    if opened_here(part, producer_id):
        return None
    if transactional_id is None:
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    code = coordinator.verify_write(transactional_id, producer_id, producer_epoch, part.tp)
    return None if code is None else verification_error(code, abortable=abortable, concurrent=concurrent)


def opened_here(part: Partition, producer_id: int) -> bool:
    """Whether the producer has a transaction open on ``part`` (its first write there was checked)."""
    producers = part.producers
    return producers is not None and producer_id in producers.ongoing


def verification_error(code: ErrorCode, *, abortable: bool, concurrent: bool) -> ErrorCode:
    """What a Produce v3-11 or TxnOffsetCommit v0-4 answers for a code of
    `TransactionCoordinator.verify_write`: a fenced producer INVALID_PRODUCER_EPOCH; a partition
    not in the transaction TRANSACTION_ABORTABLE where the version knows it (``abortable``:
    Produce v11, TxnOffsetCommit v4), else INVALID_TXN_STATE; CONCURRENT_TRANSACTIONS where
    ``concurrent`` (TxnOffsetCommit), else the retriable NOT_ENOUGH_REPLICAS (Produce)."""
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and not abortable:
        return ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.CONCURRENT_TRANSACTIONS and not concurrent:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code
