"""Transactions v2 (KIP-890 part 2) on the wire, with the broker as a subprocess.

A producer of transaction version 2 (what ApiVersions finalizes here, as on
Kafka 4.1) sends no AddPartitionsToTxn or AddOffsetsToTxn: Produce v12+ and
TxnOffsetCommit v5 add their partitions themselves, and EndTxn v5 bumps the
producer epoch at every commit or abort and answers the new one. No client
installable here speaks it (librdkafka, kafka-python, aiokafka, kafkajs and
@platformatic/kafka stop at EndTxn v4 or below; the Java client needs Maven
Central), so the requests are our own encoder's, built from Kafka's JSON
definitions; what they write is read back by confluent-kafka's consumer.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.compat.test_transactions import read_all
from tests.integration.test_wire import create
from tests.wire import RawClient

TOPIC = "tv2"


def init(c: RawClient, txn_id: str) -> tuple[int, int]:
    c.await_transaction_coordinator(txn_id)
    answer = c.request(22, 5, {"transactional_id": txn_id, "transaction_timeout_ms": 60000})
    assert answer.error_code == 0
    return answer.producer_id, answer.producer_epoch


def produce_body(
    txn_id: str, pid: int, epoch: int, batches: dict[int, tuple[int, bytes]], topic: str = TOPIC
) -> dict[str, Any]:
    """A transactional Produce of one batch per partition: ``{partition: (sequence, value)}``."""
    partitions = [
        {
            "index": p,
            "records": build_batch(
                [Record(0, 0, None, value)],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                is_transactional=True,
            ),
        }
        for p, (seq, value) in batches.items()
    ]
    return {
        "transactional_id": txn_id,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": partitions}],
    }


def codes(answer: Any) -> dict[int, int]:
    return {r.index: r.error_code for r in answer.responses[0].partition_responses}


def produce(
    c: RawClient, txn_id: str, pid: int, epoch: int, seq: int, values: dict[int, bytes], topic: str = TOPIC
) -> dict[int, int]:
    """Transactional batches (one per partition, at ``seq``) with Produce v12: code per partition."""
    batches = {p: (seq, v) for p, v in values.items()}
    return codes(c.request(0, 12, produce_body(txn_id, pid, epoch, batches, topic)))


def end(c: RawClient, txn_id: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    body = {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "committed": commit}
    answer = c.request(26, 5, body)
    return answer.error_code, answer.producer_id, answer.producer_epoch


def describe(c: RawClient, txn_id: str) -> Any:
    state = c.request(65, 0, {"transactional_ids": [txn_id]}).transaction_states[0]
    assert state.error_code == 0
    return state


def test_produce_adds_partitions_and_end_txn_bumps_the_epoch(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        assert create(c, TOPIC, partitions=2).error_code == 0
        pid, epoch = init(c, "t2")
        assert epoch == 0

        # no AddPartitionsToTxn: the produce puts both partitions in the transaction
        assert produce(c, "t2", pid, 0, 0, {0: b"c0", 1: b"c1"}) == {0: 0, 1: 0}
        state = describe(c, "t2")
        assert state.transaction_state == "Ongoing"
        assert {(t.topic, p) for t in state.topics for p in t.partitions} == {(TOPIC, 0), (TOPIC, 1)}
        assert end(c, "t2", pid, 0, True) == (0, pid, 1)

        # the next transaction goes on with epoch 1 from sequence 0; epoch 0 is a zombie now
        assert produce(c, "t2", pid, 1, 0, {0: b"a0"}) == {0: 0}
        assert produce(c, "t2", pid, 0, 1, {0: b"z0", 1: b"z1"}) == {
            0: ErrorCode.INVALID_PRODUCER_EPOCH,
            1: ErrorCode.INVALID_PRODUCER_EPOCH,
        }
        assert produce(c, "t2", pid, 1, 1, {0: b"a1"}) == {0: 0}
        assert end(c, "t2", pid, 1, False) == (0, pid, 2)

        # Kafka's EndTxn v5 table: a retry of the result answers it again, another result does not
        assert end(c, "t2", pid, 1, False) == (0, pid, 2)
        assert end(c, "t2", pid, 1, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        # an abort with nothing added (the producer never got a partition in) still bumps
        assert end(c, "t2", pid, 2, False) == (0, pid, 3)
        assert end(c, "t2", pid, 3, True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
        assert end(c, "t2", pid, 0, False) == (ErrorCode.PRODUCER_FENCED, -1, -1)
        assert end(c, "t2", pid + 1, 3, False) == (ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1)

        state = describe(c, "t2")
        assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", 3)

    # the epochs and states survive a restart (the log holds TransactionLogValue v1)
    broker.stop()
    broker.start()
    with RawClient(broker.port) as c:
        c.await_transaction_coordinator("t2")
        assert end(c, "t2", pid, 2, False) == (0, pid, 3)  # still recognised as a retry
        assert produce(c, "t2", pid, 3, 0, {1: b"after"}) == {1: 0}
        assert end(c, "t2", pid, 3, True) == (0, pid, 4)

    committed_values = [b"after", b"c0", b"c1"]
    assert sorted(read_all(broker.bootstrap, "read_committed", 3, (TOPIC,))) == committed_values
    every = sorted([b"a0", b"a1", *committed_values])
    assert sorted(read_all(broker.bootstrap, "read_uncommitted", 5, (TOPIC,))) == every


def test_pipelined_produce_keeps_its_order(broker: BrokerProcess) -> None:
    """A Produce waiting for its partition to be added is not overtaken by the producer's next
    request on the connection (max.in.flight > 1): a later batch landing first would break its
    partition's sequence (OUT_OF_ORDER_SEQUENCE_NUMBER, then an abortable error in the client)."""
    with RawClient(broker.port) as c:
        assert create(c, TOPIC, partitions=2).error_code == 0
        pid, epoch = init(c, "t2p")
        assert produce(c, "t2p", pid, epoch, 0, {1: b"b0"}) == {1: 0}  # partition 1 is in already
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # both on the wire at once
        first = c.send(0, 12, produce_body("t2p", pid, epoch, {0: (0, b"a0"), 1: (1, b"b1")}))
        second = c.send(0, 12, produce_body("t2p", pid, epoch, {1: (2, b"b2")}))  # needs no add
        assert codes(c.recv(0, 12, first)) == {0: 0, 1: 0}
        assert codes(c.recv(0, 12, second)) == {1: 0}
        assert end(c, "t2p", pid, epoch, True) == (0, pid, epoch + 1)
    got = read_all(broker.bootstrap, "read_committed", 4, (TOPIC,))
    assert [v for v in got if v.startswith(b"b")] == [b"b0", b"b1", b"b2"] and b"a0" in got


def committed(c: RawClient, group: str, topic: str = TOPIC) -> int:
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
    return c.request(9, 1, body).topics[0].partitions[0].committed_offset


def txn_offset_commit(
    c: RawClient,
    pid: int,
    epoch: int,
    offset: int,
    txn_id: str = "t2o",
    group: str = "g2",
    topic: str = TOPIC,
) -> int:
    """TxnOffsetCommit v5 of ``offset`` for partition 0 of ``topic``, from a producer outside the
    group (no AddOffsetsToTxn before it); the partition's error code."""
    body = {
        "transactional_id": txn_id,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    return c.request(28, 5, body).topics[0].partitions[0].error_code


def test_txn_offset_commit_v5_adds_the_offsets_partition(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        assert create(c, TOPIC).error_code == 0
        c.request(10, 1, {"key": "g2", "key_type": 0})  # creates __consumer_offsets
        pid, epoch = init(c, "t2o")
        assert produce(c, "t2o", pid, epoch, 0, {0: b"x"}) == {0: 0}
        # no AddOffsetsToTxn
        assert txn_offset_commit(c, pid, epoch, 7) == 0
        assert committed(c, "g2") == -1  # not before the commit
        assert txn_offset_commit(c, pid, epoch - 1, 8) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert end(c, "t2o", pid, epoch, True) == (0, pid, epoch + 1)
        deadline = time.monotonic() + 10
        while committed(c, "g2") != 7 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert committed(c, "g2") == 7

        # aborted offsets never show
        assert txn_offset_commit(c, pid, epoch + 1, 9) == 0
        assert end(c, "t2o", pid, epoch + 1, False) == (0, pid, epoch + 2)
        time.sleep(0.3)
        assert committed(c, "g2") == 7
