"""The TransactionManager against a scripted coordinator: retries, fencing and abortable errors.

No broker: a fake cluster answers each request from a script of error codes
(then success), so every error path Kafka's Java client distinguishes is
exercised, including those a healthy broker never produces on demand.
"""

from __future__ import annotations

import collections
from types import SimpleNamespace as NS
from typing import Any

import pytest

from client.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaError,
    KafkaResponseError,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionalIdAuthorizationError,
)
from client.transactions import TransactionManager
from client.txn_requests import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    INIT_PRODUCER_ID,
    TXN_OFFSET_COMMIT,
    TxnState,
)
from client.types import ConsumerGroupMetadata, TopicPartition
from protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(20)

CONFIG = {
    "transactional.id": "tid",
    "transaction.timeout.ms": 45000,
    "retry.backoff.ms": 1,
    "max.block.ms": 5000,
}


def _ok(api_key: int, body: dict[str, Any], code: int = 0) -> Any:
    if api_key == INIT_PRODUCER_ID:
        return NS(error_code=code, producer_id=7 if not code else -1, producer_epoch=3 if not code else -1)
    if api_key == ADD_PARTITIONS_TO_TXN:
        return NS(
            results_by_topic_v3_and_below=[
                NS(
                    name=t["name"],
                    results_by_partition=[
                        NS(partition_index=p, partition_error_code=code) for p in t["partitions"]
                    ],
                )
                for t in body["v3_and_below_topics"]
            ]
        )
    if api_key == TXN_OFFSET_COMMIT:
        return NS(
            topics=[
                NS(
                    name=t["name"],
                    partitions=[
                        NS(partition_index=p["partition_index"], error_code=code) for p in t["partitions"]
                    ],
                )
                for t in body["topics"]
            ]
        )
    return NS(error_code=code)


class FakeCluster:
    """Coordinators on nodes 1 (transactions) and 2 (groups); each API answers its scripted codes, then 0."""

    request_timeout = 1.0

    def __init__(self) -> None:
        self.codes: dict[int, list[int]] = collections.defaultdict(list)
        self.sent: list[tuple[int, int, dict[str, Any]]] = []
        self.lookups: list[tuple[str, int]] = []
        self.dropped: list[tuple[str, int]] = []

    async def find_coordinator(self, key: str, key_type: int = 0) -> int:
        self.lookups.append((key, key_type))
        return 1 if key_type == 1 else 2

    async def connection(self, key: tuple[str, int]) -> Any:
        cluster = self

        class Conn:
            def version(self, api_key: int) -> int:
                return 3

            async def send(self, api_key: int, body: dict[str, Any], **kw: Any) -> Any:
                cluster.sent.append((key[1], api_key, body))
                script = cluster.codes[api_key]
                return _ok(api_key, body, script.pop(0) if script else 0)

        return Conn()

    def drop(self, key: tuple[str, int]) -> None:
        self.dropped.append(key)

    def apis(self) -> list[int]:
        return [api for _, api, _ in self.sent]


class FakeHost:
    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.ids = (-1, -1)
        self.id_changes = 0
        self.numbered_queued = False
        self.dropped: list[BaseException] = []

    def _producer_id_and_epoch(self) -> tuple[int, int]:
        return self.ids

    def _set_producer_id(self, producer_id: int, producer_epoch: int) -> None:
        self.ids = (producer_id, producer_epoch)
        self.id_changes += 1

    def _abort_queued(self, error: BaseException) -> bool:
        self.dropped.append(error)
        return self.numbered_queued

    def _has_incomplete(self) -> bool:
        return False

    def _wakeup(self) -> None:
        pass

    async def flush(self, timeout: float | None = None) -> None:
        pass


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


async def _ready(host: FakeHost) -> TransactionManager:
    txn = TransactionManager(host, CONFIG)
    await txn.init_transactions()
    return txn


async def _add(txn: TransactionManager, *tps: tuple[str, int]) -> None:
    for tp in tps:
        txn.add_partition(tp)
    txn.poll()
    assert txn._add_task is not None
    await txn._add_task


async def test_init_retries_until_the_coordinator_answers(host: FakeHost) -> None:
    cluster = host.cluster
    cluster.codes[INIT_PRODUCER_ID] = [
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
    ]
    txn = await _ready(host)
    assert txn.state is TxnState.READY and host.ids == (7, 3)
    assert cluster.lookups == [("tid", 1), ("tid", 1)]  # found again after NOT_COORDINATOR
    assert cluster.dropped == [("coordinator", 1)]
    assert cluster.apis() == [INIT_PRODUCER_ID] * 4
    body = cluster.sent[0][2]
    assert body == {
        "transactional_id": "tid",
        "transaction_timeout_ms": 45000,
        "producer_id": -1,
        "producer_epoch": -1,
    }


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (ErrorCode.PRODUCER_FENCED, ProducerFencedError),
        (ErrorCode.INVALID_PRODUCER_EPOCH, ProducerFencedError),
        (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TransactionalIdAuthorizationError),
        (ErrorCode.INVALID_TRANSACTION_TIMEOUT, KafkaResponseError),
    ],
)
async def test_fatal_answers_to_init_end_the_producer(host: FakeHost, code: int, error: type) -> None:
    host.cluster.codes[INIT_PRODUCER_ID] = [code]
    txn = TransactionManager(host, CONFIG)
    with pytest.raises(error) as info:
        await txn.init_transactions()
    assert info.value.code == code  # type: ignore[attr-defined]
    assert txn.state is TxnState.FATAL_ERROR
    for call in (txn.begin_transaction, txn.check_send):
        with pytest.raises(error) as again:
            call()
        assert again.value is info.value
    with pytest.raises(error):
        await txn.init_transactions()


async def test_partitions_are_added_before_their_batches_and_committed(host: FakeHost) -> None:
    cluster = host.cluster
    txn = await _ready(host)
    txn.begin_transaction()
    cluster.codes[ADD_PARTITIONS_TO_TXN] = [
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ]
    txn.add_partition(("a", 1))
    assert not txn.sendable(("a", 1))
    await _add(txn, ("a", 0), ("b", 2))
    assert all(txn.sendable(tp) for tp in (("a", 0), ("a", 1), ("b", 2)))
    adds = [body for _, api, body in cluster.sent if api == ADD_PARTITIONS_TO_TXN]
    assert len(adds) == 3
    assert adds[0] == {
        "v3_and_below_transactional_id": "tid",
        "v3_and_below_producer_id": 7,
        "v3_and_below_producer_epoch": 3,
        "v3_and_below_topics": [{"name": "a", "partitions": [0, 1]}, {"name": "b", "partitions": [2]}],
    }
    await _add(txn, ("a", 0))  # already in: no request
    assert len([api for api in cluster.apis() if api == ADD_PARTITIONS_TO_TXN]) == 3
    cluster.codes[END_TXN] = [ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_NOT_AVAILABLE]
    await txn.commit_transaction()
    ends = [body for node, api, body in cluster.sent if api == END_TXN]
    assert len(ends) == 3 and ends[-1] == {
        "transactional_id": "tid",
        "producer_id": 7,
        "producer_epoch": 3,
        "committed": True,
    }
    assert txn.state is TxnState.READY and not txn.sendable(("a", 0))


async def test_an_empty_transaction_ends_without_end_txn(host: FakeHost) -> None:
    txn = await _ready(host)
    for end in (txn.commit_transaction, txn.abort_transaction):
        txn.begin_transaction()
        await end()
        assert txn.state is TxnState.READY
    assert host.cluster.apis() == [INIT_PRODUCER_ID]


async def test_partitions_that_cannot_be_added_make_the_transaction_abortable(host: FakeHost) -> None:
    txn = await _ready(host)
    txn.begin_transaction()
    host.cluster.codes[ADD_PARTITIONS_TO_TXN] = [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    await _add(txn, ("secret", 0))
    assert txn.state is TxnState.ABORTABLE_ERROR
    assert isinstance(host.dropped[-1], TransactionAbortedError)  # the waiting batches failed at once
    with pytest.raises(TransactionAbortableError) as info:
        txn.check_send()
    assert isinstance(info.value.__cause__, KafkaError) and "secret-0" in str(info.value.__cause__)
    with pytest.raises(TransactionAbortableError):
        await txn.commit_transaction()
    with pytest.raises(TransactionAbortableError):
        txn.begin_transaction()
    await txn.abort_transaction()
    assert txn.state is TxnState.READY
    assert END_TXN not in host.cluster.apis()  # nothing was added: nothing to end


async def test_lost_sequence_numbers_bump_the_epoch_at_abort(host: FakeHost) -> None:
    txn = await _ready(host)
    txn.begin_transaction()
    await _add(txn, ("a", 0))
    txn.batch_failed(KafkaResponseError(ErrorCode.MESSAGE_TOO_LARGE), numbered=True)
    assert txn.state is TxnState.ABORTABLE_ERROR and txn.dropping
    await txn.abort_transaction()
    apis = host.cluster.apis()
    assert apis[-2:] == [END_TXN, INIT_PRODUCER_ID]
    assert host.cluster.sent[-2][2]["committed"] is False
    assert host.cluster.sent[-1][2] == {
        "transactional_id": "tid",
        "transaction_timeout_ms": 45000,
        "producer_id": 7,
        "producer_epoch": 3,
    }
    assert host.id_changes == 2 and txn.state is TxnState.READY
    txn.begin_transaction()  # and the producer goes on


async def test_fenced_at_end_txn_or_produce_is_fatal(host: FakeHost) -> None:
    txn = await _ready(host)
    txn.begin_transaction()
    await _add(txn, ("a", 0))
    host.cluster.codes[END_TXN] = [ErrorCode.PRODUCER_FENCED]
    with pytest.raises(ProducerFencedError) as info:
        await txn.commit_transaction()
    with pytest.raises(ProducerFencedError) as again:
        await txn.abort_transaction()
    assert again.value is info.value and txn.state is TxnState.FATAL_ERROR

    other = FakeHost()
    txn = await _ready(other)
    txn.begin_transaction()
    error = txn.produce_error(ErrorCode.INVALID_PRODUCER_EPOCH, TopicPartition("a", 0))
    assert isinstance(error, ProducerFencedError)
    txn.batch_failed(error, numbered=True)
    assert txn.fatal is error and other.dropped == [error]
    with pytest.raises(ProducerFencedError):
        txn.check_send()


async def test_offsets_go_to_the_group_coordinator_in_the_transaction(host: FakeHost) -> None:
    cluster = host.cluster
    txn = await _ready(host)
    txn.begin_transaction()
    cluster.codes[ADD_OFFSETS_TO_TXN] = [ErrorCode.CONCURRENT_TRANSACTIONS]
    cluster.codes[TXN_OFFSET_COMMIT] = [ErrorCode.NOT_COORDINATOR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    meta = ConsumerGroupMetadata("g", 4, "member-1", None)
    await txn.send_offsets_to_transaction({TopicPartition("in", 0): 10, ("in", 1): 20}, meta)
    assert [(node, api) for node, api, _ in cluster.sent[1:]] == [
        (1, ADD_OFFSETS_TO_TXN),
        (1, ADD_OFFSETS_TO_TXN),
        (2, TXN_OFFSET_COMMIT),
        (2, TXN_OFFSET_COMMIT),
        (2, TXN_OFFSET_COMMIT),
    ]
    assert cluster.sent[1][2] == {
        "transactional_id": "tid",
        "producer_id": 7,
        "producer_epoch": 3,
        "group_id": "g",
    }
    commit = cluster.sent[-1][2]
    assert (commit["group_id"], commit["generation_id"], commit["member_id"]) == ("g", 4, "member-1")
    assert commit["topics"] == [
        {
            "name": "in",
            "partitions": [
                {"partition_index": 0, "committed_offset": 10, "committed_metadata": ""},
                {"partition_index": 1, "committed_offset": 20, "committed_metadata": ""},
            ],
        }
    ]
    assert ("g", 0) in cluster.lookups and ("coordinator", 2) in cluster.dropped
    await txn.commit_transaction()
    assert cluster.apis()[-1] == END_TXN  # offsets alone start the transaction


async def test_a_stale_member_makes_the_offsets_abortable(host: FakeHost) -> None:
    txn = await _ready(host)
    txn.begin_transaction()
    host.cluster.codes[TXN_OFFSET_COMMIT] = [ErrorCode.ILLEGAL_GENERATION]
    with pytest.raises(TransactionAbortableError) as info:
        await txn.send_offsets_to_transaction({("in", 0): 1}, ConsumerGroupMetadata("g", 1, "gone"))
    assert isinstance(info.value.__cause__, CommitFailedError)
    await txn.abort_transaction()
    assert host.cluster.apis()[-1] == END_TXN  # AddOffsetsToTxn had started the transaction


async def test_wrong_state_errors_name_the_way_out(host: FakeHost) -> None:
    txn = TransactionManager(host, CONFIG)
    with pytest.raises(IllegalStateError, match=r"init_transactions\(\) first"):
        txn.begin_transaction()
    with pytest.raises(IllegalStateError, match=r"init_transactions\(\) first"):
        await txn.commit_transaction()
    await txn.init_transactions()
    with pytest.raises(IllegalStateError, match="already called"):
        await txn.init_transactions()
    with pytest.raises(IllegalStateError, match=r"call begin_transaction\(\) first"):
        txn.check_send()
    with pytest.raises(IllegalStateError, match=r"call begin_transaction\(\) first"):
        await txn.abort_transaction()
    txn.begin_transaction()
    with pytest.raises(IllegalStateError, match="already in progress"):
        txn.begin_transaction()
