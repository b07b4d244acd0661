"""The BROKER_LOGGER config resource (type 8, KIP-412): the broker's log levels, read and changed live.

As Kafka's Log4jController and RuntimeLoggerManager, with Python's logging
in place of log4j:

- DescribeConfigs lists ``root`` and every logger that exists in the broker
  process (ours are ``minikafka.*``; libraries' such as ``kazoo.client`` too),
  each with its effective level in log4j's names (FATAL, ERROR, WARN, INFO,
  DEBUG, TRACE), source DYNAMIC_BROKER_LOGGER_CONFIG (6), not read-only, no
  synonyms. A logger without a level of its own shows the level it inherits.
- IncrementalAlterConfigs SET gives a logger a level; DELETE removes its own
  level, so it inherits its parent's again (the root's, unless a nearer
  ancestor has one); the root's level cannot be removed. APPEND and SUBTRACT
  are refused. Every operation of the resource is checked before any is
  applied: an unknown logger or level answers INVALID_CONFIG with Kafka's
  message, a bad operation INVALID_REQUEST. Levels are case-sensitive, as
  Kafka's LogLevelConfig.VALID_LOG_LEVELS.
- Not persisted: a restarted broker starts from its ``--log-level``, as Kafka
  starts from its log4j.properties.

Levels map onto Python's: FATAL = CRITICAL, WARN = WARNING, TRACE = 5 (below
DEBUG; registered with the logging module under the name TRACE).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from protocol.errors import ErrorCode, KafkaError

ROOT = "root"
TRACE = 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LEVELS = {
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": TRACE,
}
VALID_LEVELS = ", ".join(sorted(LEVELS))
_OPERATIONS = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

log = logging.getLogger("minikafka.config")
logging.addLevelName(TRACE, "TRACE")


def level_name(level: int) -> str:
    """A Python level in log4j's names (a level between two names takes the lower one's)."""
    for name, value in sorted(LEVELS.items(), key=lambda item: -item[1]):
        if level >= value:
            return name
    return "TRACE"


def _existing(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def loggers() -> dict[str, str]:
    """``{logger name: effective level}``: root and every logger that exists."""
    out = {ROOT: level_name(logging.getLogger().getEffectiveLevel())}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            out[name] = level_name(logger.getEffectiveLevel())
    return out


def check_node(resource_name: str, node_id: int) -> None:
    """The resource must name this broker (RuntimeLoggerManager.validateResourceNameIsNodeId)."""
    try:
        requested = int(resource_name)
    except ValueError:
        raise KafkaError(
            f"Node id must be an integer, but it is: {resource_name}", ErrorCode.INVALID_REQUEST
        ) from None
    if requested != node_id:
        raise KafkaError(
            f"Unexpected node id. Expected {node_id}, but received {resource_name}", ErrorCode.INVALID_REQUEST
        )


def check(ops: Iterable[Any]) -> None:
    """Kafka's validateLogLevelConfigs of a resource's operations (``name``, ``value``,
    ``config_operation``); KafkaError for the first that fails."""
    for op in ops:
        name, operation = op.name, op.config_operation
        if operation in (SET, DELETE) and _existing(name) is None:
            raise KafkaError(f"Logger {name} does not exist!", ErrorCode.INVALID_CONFIG)
        if operation == SET:
            if op.value not in LEVELS:
                raise KafkaError(
                    f"Cannot set the log level of {name} to {op.value} as it is not a supported log level."
                    f" Valid log levels are {VALID_LEVELS}",
                    ErrorCode.INVALID_CONFIG,
                )
        elif operation == DELETE:
            if name == ROOT:
                raise KafkaError(
                    f"Removing the log level of the {ROOT} logger is not allowed", ErrorCode.INVALID_REQUEST
                )
        elif operation in _OPERATIONS:
            raise KafkaError(
                f"{_OPERATIONS[operation]} operation is not allowed for the BROKER_LOGGER resource",
                ErrorCode.INVALID_REQUEST,
            )
        else:
            raise KafkaError(
                f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER resource",
                ErrorCode.INVALID_REQUEST,
            )


def apply(ops: Iterable[Any]) -> None:
    """Apply checked operations (Kafka logs each change at WARN)."""
    for op in ops:
        logger = _existing(op.name)
        assert logger is not None
        if op.config_operation == SET:
            logger.setLevel(LEVELS[op.value])
            log.warning("Updated the log level of %s to %s", op.name, op.value)
        else:
            logger.setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", op.name)
