"""Transaction verification (KIP-890 part 1) on the wire, with the broker as a subprocess.

A partition leader checks a producer's first transactional write on a partition with the
transaction coordinator, and answers in the words of the request's version, as Kafka's
ReplicaManager and AddPartitionsToTxnManager do: Produce and TxnOffsetCommit (v0-4: the group's
`__consumer_offsets` partition must have come in through AddOffsetsToTxn), and AddPartitionsToTxn
v4+ with verify_only, which brokers send. AddPartitionsToTxn v0-3 never adds an internal topic,
TxnOffsetCommit refuses an empty group id and AddOffsetsToTxn accepts one.
"""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.records import Record, build_batch
from tests.broker_process import BrokerProcess
from tests.integration.test_wire import create
from tests.wire import RawClient

TOPIC = "verified"
GROUP = "verifying-group"


class Producer:
    """A transactional producer on the wire (AddPartitionsToTxn / AddOffsetsToTxn v3)."""

    def __init__(self, c: RawClient, txn_id: str, topic: str = TOPIC) -> None:
        """``c``: a connection to the transaction coordinator; requests go there unless
        ``via`` names another broker's."""
        c.await_transaction_coordinator(txn_id)
        init = c.request(22, 3, {"transactional_id": txn_id, "transaction_timeout_ms": 60000})
        assert init.error_code == 0
        self.c, self.txn_id, self.topic = c, txn_id, topic
        self.pid, self.epoch = init.producer_id, init.producer_epoch

    def add(self, topic: str, *partitions: int) -> dict[int, int]:
        body = {
            "v3_and_below_transactional_id": self.txn_id,
            "v3_and_below_producer_id": self.pid,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}],
        }
        answer = self.c.request(24, 3, body).results_by_topic_v3_and_below[0]
        return {r.partition_index: r.partition_error_code for r in answer.results_by_partition}

    def add_offsets(self, group: str = GROUP) -> int:
        body = {
            "transactional_id": self.txn_id,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "group_id": group,
        }
        return int(self.c.request(25, 3, body).error_code)

    def send(self, partition: int, sequence: int, version: int, via: RawClient | None = None) -> int:
        records = build_batch(
            [Record(0, 0, None, b"x")],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=sequence,
            is_transactional=True,
        )
        body = {
            "transactional_id": self.txn_id,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": self.topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        }
        answer = (via or self.c).request(0, version, body)
        return int(answer.responses[0].partition_responses[0].error_code)

    def commit_offset(
        self, version: int, offset: int, group: str = GROUP, via: RawClient | None = None
    ) -> int:
        body: dict[str, Any] = {
            "transactional_id": self.txn_id,
            "group_id": group,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": self.topic,
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
        return int((via or self.c).request(28, version, body).topics[0].partitions[0].error_code)


def test_a_partition_not_in_the_transaction_is_answered_by_version(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as c:
        assert create(c, TOPIC, partitions=3).error_code == 0
        p = Producer(c, "verifier")
        # Produce v3-10 know INVALID_TXN_STATE only; v11 gets TRANSACTION_ABORTABLE (KIP-890)
        assert p.send(0, 0, 9) == ErrorCode.INVALID_TXN_STATE
        assert p.send(0, 0, 11) == ErrorCode.TRANSACTION_ABORTABLE
        assert p.add(TOPIC, 0) == {0: 0}
        assert p.send(0, 0, 11) == 0
        assert p.send(1, 0, 11) == ErrorCode.TRANSACTION_ABORTABLE
        # TxnOffsetCommit v0-4 before AddOffsetsToTxn: nothing is committed
        assert p.commit_offset(3, 5) == ErrorCode.INVALID_TXN_STATE
        assert p.commit_offset(4, 5) == ErrorCode.TRANSACTION_ABORTABLE
        assert p.add_offsets() == 0
        assert p.commit_offset(4, 5) == 0
        assert p.commit_offset(3, 6) == 0  # the producer's transaction is open there now
        assert p.commit_offset(3, 6, group="") == ErrorCode.INVALID_GROUP_ID
        assert p.commit_offset(5, 6, group="") == ErrorCode.INVALID_GROUP_ID

        # a broker asking with verify_only (AddPartitionsToTxn v4+, as a partition leader does)
        def verify(pid: int, epoch: int, *partitions: int) -> tuple[int, dict[int, int]]:
            body = {
                "transactions": [
                    {
                        "transactional_id": "verifier",
                        "producer_id": pid,
                        "producer_epoch": epoch,
                        "verify_only": True,
                        "topics": [{"name": TOPIC, "partitions": list(partitions)}],
                    }
                ]
            }
            answer = c.request(24, 5, body)
            assert answer.error_code == 0
            txn = answer.results_by_transaction[0]
            codes = {
                r.partition_index: r.partition_error_code for r in txn.topic_results[0].results_by_partition
            }
            return answer.error_code, codes

        assert verify(p.pid, p.epoch, 0, 1) == (0, {0: 0, 1: ErrorCode.TRANSACTION_ABORTABLE})
        assert verify(p.pid, p.epoch + 1, 0) == (0, {0: ErrorCode.PRODUCER_FENCED})
        assert verify(p.pid + 1, p.epoch, 0) == (0, {0: ErrorCode.INVALID_PRODUCER_ID_MAPPING})
        ended = c.request(
            26,
            3,
            {
                "transactional_id": "verifier",
                "producer_id": p.pid,
                "producer_epoch": p.epoch,
                "committed": True,
            },
        )
        assert ended.error_code == 0


def test_add_partitions_never_adds_an_internal_topic(broker: BrokerProcess) -> None:
    """No authorizer here: Kafka still answers TOPIC_AUTHORIZATION_FAILED for internal topics."""
    with RawClient(broker.port) as c:
        assert create(c, TOPIC, partitions=1).error_code == 0
        p = Producer(c, "internal")
        assert p.add("__consumer_offsets", 0) == {0: ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert p.add(TOPIC, 0) == {0: 0}


def test_add_offsets_to_txn_accepts_an_empty_group_id(broker: BrokerProcess) -> None:
    """Kafka's KafkaApis does not check the group id: the partition of "" (0) joins the transaction."""
    with RawClient(broker.port) as c:
        p = Producer(c, "empty-group")
        assert p.add_offsets(group="") == 0
        state = c.request(65, 0, {"transactional_ids": ["empty-group"]}).transaction_states[0]
        assert state.transaction_state == "Ongoing"
        assert [(t.topic, t.partitions) for t in state.topics] == [("__consumer_offsets", [0])]
