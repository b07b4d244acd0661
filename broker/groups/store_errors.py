"""How failed `__consumer_offsets` and `__transaction_state` appends are answered, as Kafka maps them.

A write that could not be replicated in time (or not to enough replicas) is
COORDINATOR_NOT_AVAILABLE, one on a broker that no longer leads the partition
NOT_COORDINATOR: clients look the coordinator up again and retry.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

_UNAVAILABLE = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
)
_NOT_COORDINATOR = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR)


def _common(code: ErrorCode) -> ErrorCode:
    if code in _UNAVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in _NOT_COORDINATOR:
        return ErrorCode.NOT_COORDINATOR
    return code


def group_store_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append failures for group metadata writes."""
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return _common(code)


def txn_store_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append failures for `__transaction_state` writes
    (TransactionStateManager.appendTransactionToLog)."""
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return _common(code)


def offset_store_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append failures for offset commits."""
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return _common(code)
