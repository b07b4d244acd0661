"""How failed `__consumer_offsets` appends are answered, as Kafka maps them."""

from __future__ import annotations

from protocol.errors import ErrorCode


def group_store_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append failures for group metadata writes."""
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    if code == ErrorCode.KAFKA_STORAGE_ERROR:
        return ErrorCode.NOT_COORDINATOR
    return code


def offset_store_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of append failures for offset commits."""
    if code == ErrorCode.MESSAGE_TOO_LARGE:
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    if code == ErrorCode.KAFKA_STORAGE_ERROR:
        return ErrorCode.NOT_COORDINATOR
    return code
