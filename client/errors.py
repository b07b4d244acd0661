"""Exceptions raised by the client.

Every exception derives from `KafkaError`. Errors the broker answered with carry
the Kafka error code as ``.code`` (an `ErrorCode`); ``.retriable`` says whether
Kafka's clients retry it (the producer and consumer already do, within their
timeouts, before the error reaches the caller).
"""

from __future__ import annotations

from protocol.errors import ErrorCode

# The codes Kafka's Java client maps to RetriableException subclasses.
RETRIABLE_CODES = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    }
)

# Errors that mean "the metadata we routed by is stale": refresh it before retrying.
METADATA_CODES = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
    }
)

# Errors that mean "ask FindCoordinator again".
COORDINATOR_CODES = frozenset(
    {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)


class KafkaError(Exception):
    """Base class of every client error."""

    retriable = False


class ConfigError(KafkaError, ValueError):
    """A configuration key that does not exist for this client, or a value it cannot take."""


class KafkaConnectionError(KafkaError):
    """No connection to a broker (refused, reset, closed mid-request, or unresolvable)."""

    retriable = True


class KafkaTimeoutError(KafkaError):
    """An operation did not complete within its timeout."""

    retriable = True


class ClientClosedError(KafkaError):
    """The client was closed while (or before) the operation ran."""


class AuthenticationError(KafkaError):
    """The broker refused this client's credentials (SASL), or the TLS handshake failed. Not retriable."""


class UnsupportedVersionError(KafkaError):
    """The broker does not support any version of an API this operation needs."""


class IllegalStateError(KafkaError):
    """The call is not valid in the client's current state (e.g. position of an unassigned partition)."""


class NoOffsetForPartitionError(KafkaError):
    """auto.offset.reset=none and a partition has no committed offset (or its offset is out of range)."""


class CommitFailedError(KafkaError):
    """A group commit was rejected because the group rebalanced: the partitions may now belong to another member."""


class RecordTooLargeError(KafkaError):
    """A record is larger than max.request.size allows."""


class TransactionAbortedError(KafkaError):
    """A record was not sent because its transaction was aborted (`abort_transaction` or a failure)."""


class TransactionAbortableError(KafkaError):
    """The open transaction hit an error that only aborting it can clear.

    Raised by ``send``, ``send_offsets_to_transaction`` and ``commit_transaction``
    once a record of the transaction (or an offset commit in it) failed; the
    failure is ``__cause__``. ``abort_transaction()`` clears it.
    """


class KafkaResponseError(KafkaError):
    """The broker answered with a Kafka error code."""

    def __init__(self, code: int, message: str | None = None, context: str = "") -> None:
        try:
            self.code: ErrorCode | int = ErrorCode(code)
            name = self.code.name
        except ValueError:
            self.code = code
            name = f"error {code}"
        self.retriable = self.code in RETRIABLE_CODES
        text = name
        if context:
            text = f"{context}: {name}"
        if message:
            text = f"{text} ({message})"
        super().__init__(text)


class ProducerFencedError(KafkaResponseError):
    """Fatal: another producer with the same transactional.id (a newer epoch) took over.

    ``.code`` is PRODUCER_FENCED or INVALID_PRODUCER_EPOCH (what older
    coordinators answer). The producer can only be closed: every later call
    raises this again.
    """


class TransactionalIdAuthorizationError(KafkaResponseError):
    """Fatal: the principal may not use this transactional.id."""


class InvalidTxnStateError(KafkaResponseError):
    """Fatal: the coordinator's transaction state does not allow the request (a client bug or a lost race)."""


_ERROR_CLASSES: dict[int, type[KafkaResponseError]] = {
    ErrorCode.PRODUCER_FENCED: ProducerFencedError,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: TransactionalIdAuthorizationError,
    ErrorCode.INVALID_TXN_STATE: InvalidTxnStateError,
}


def error_for(code: int, message: str | None = None, context: str = "") -> KafkaResponseError:
    """The exception for a non-zero Kafka error code (a subclass for the fatal transactional codes)."""
    return _ERROR_CLASSES.get(code, KafkaResponseError)(code, message, context)
