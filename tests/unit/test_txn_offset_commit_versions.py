"""TxnOffsetCommit's answers in the words of old versions (broker/handlers/txn_offset_commit.py).

The handler runs against a group coordinator that has not loaded `__consumer_offsets` yet: the
broker replays it before it accepts connections, so no wire test can catch it loading.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest

from broker.context import RequestContext
from broker.groups.clock import FakeClock
from broker.groups.coordinator import CoordinatorConfig, GroupCoordinator
from broker.handlers import txn_offset_commit
from protocol.errors import ErrorCode
from protocol.headers import RequestHeader
from protocol.messages import decode_request, encode_request
from tests.unit.group_support import MemoryOffsetsLog


def _context(version: int) -> RequestContext:
    clock = FakeClock()
    broker: Any = SimpleNamespace(
        security=SimpleNamespace(authorizer=None, authorize=lambda *_: True),
        cluster=SimpleNamespace(topics=lambda: {"t": SimpleNamespace(partitions=[0])}),
        groups=GroupCoordinator(CoordinatorConfig(), MemoryOffsetsLog(clock), clock),  # not loaded
    )
    header = RequestHeader(txn_offset_commit.API_KEY, version, 1, "test", 0)
    session: Any = None  # no authorizer: never read
    return RequestContext(broker, header, "127.0.0.1", "PLAINTEXT", session)


def _request(version: int) -> Any:
    partition = {
        "partition_index": 0,
        "committed_offset": 5,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    body = {
        "transactional_id": "tx",
        "group_id": "g",
        "producer_id": 1,
        "producer_epoch": 0,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [partition]}],
    }
    return decode_request(
        txn_offset_commit.API_KEY, version, encode_request(txn_offset_commit.API_KEY, version, body)
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (1, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (2, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        (4, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    ],
)
async def test_a_loading_coordinator_is_not_available_to_v0_1(version: int, expected: ErrorCode) -> None:
    """KafkaApis: clients before Kafka 2.0 (v0-1) could crash on COORDINATOR_LOAD_IN_PROGRESS."""
    answer = txn_offset_commit.handle(_context(version), _request(version))
    if inspect.isawaitable(answer):
        answer = await answer
    assert answer["topics"][0]["partitions"][0]["error_code"] == expected
