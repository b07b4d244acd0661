"""KIP-392 follower fetching: Kafka's preferred-read-replica rules and the Fetch handler on a follower.

Node 7 hosts partition t-0 of replicas [7, 8, 9]; 7 is in rack "a", 8 in
"b", 9 in "c". The Fetch handler runs against the real `ReplicaManager` with a
stand-in for the rest of the broker; requests go through the real decoder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.handlers import fetch
from broker.replica import Partition, ReplicaManager
from broker.replica.selector import LEADER, RACK_AWARE, preferred_read_replica
from protocol.errors import ErrorCode
from protocol.messages import decode_request, encode_request
from protocol.records import Record, build_batch, validate_batches
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set

RACKS = {7: "a", 8: "b", 9: "c"}
NODES = {n: BrokerNode(n, f"broker-{n}.example", 9092, rack) for n, rack in RACKS.items()}


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    logs = LogManager(str(tmp_path / "data"), node_id=7)
    manager = ReplicaManager(logs, 7, producer_expiration_ms=86_400_000)
    LocalCluster(manager, NODES[7]).create_topic("t", 1)
    manager.isr_requests = lambda part, isr: None
    yield manager
    manager.close()


def _lead(manager: ReplicaManager, isr: list[int]) -> Partition:
    part = manager.leader("t", 0)
    part.become_leader(1, [7, 8, 9], isr, now_ms=1_000, partition_epoch=3)
    return part


def _append(manager: ReplicaManager, part: Partition, batches: int, **txn: Any) -> int:
    """``batches`` batches of two records each; returns the new LEO."""
    for _ in range(batches):
        buf, headers = record_set(build_batch([Record(i, 0, None, b"v") for i in range(2)], **txn))
        manager.append(part, buf, headers, now_ms=2_000)
    return part.log.log_end_offset


def _rack_of(node_id: int) -> str | None:
    return RACKS.get(node_id)


# -- Kafka's rules: ReplicaManager.findPreferredReadReplica + RackAwareReplicaSelector --------------


def test_a_caught_up_in_sync_follower_in_the_consumers_rack_is_preferred(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 3)
    replicas.follower_fetched(part, 8, leo, 2_000, log_start_offset=0)
    assert preferred_read_replica(part, "b", 4, 2_000, _rack_of) == 8
    assert preferred_read_replica(part, "b", leo, 2_000, _rack_of) == 8


def test_the_leader_is_answered_as_minus_one(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 3)
    for r in (8, 9):
        replicas.follower_fetched(part, r, leo, 2_000, log_start_offset=0)
    assert preferred_read_replica(part, "a", 0, 2_000, _rack_of) == LEADER  # the leader's own rack
    assert preferred_read_replica(part, "z", 0, 2_000, _rack_of) == LEADER  # no replica in that rack
    assert preferred_read_replica(part, "", 0, 2_000, _rack_of) == LEADER  # no client.rack


def test_followers_that_cannot_serve_the_offset_are_passed_over(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8])
    leo = _append(replicas, part, 3)
    assert preferred_read_replica(part, "b", 0, 2_000, _rack_of) == LEADER  # 8 not heard from yet
    replicas.follower_fetched(part, 8, 2, 2_000, log_start_offset=0)
    assert preferred_read_replica(part, "b", 4, 2_000, _rack_of) == LEADER  # its LEO (2) is below 4
    assert preferred_read_replica(part, "b", 2, 2_000, _rack_of) == 8
    replicas.follower_fetched(part, 8, leo, 2_000, log_start_offset=3)
    assert preferred_read_replica(part, "b", 2, 2_000, _rack_of) == LEADER  # below its log start
    replicas.follower_fetched(part, 9, leo, 2_000, log_start_offset=0)
    assert preferred_read_replica(part, "c", 0, 2_000, _rack_of) == LEADER  # 9 is not in the ISR
    assert preferred_read_replica(part, "b", 4, 2_000, lambda n: None if n == 8 else _rack_of(n)) == LEADER


def test_the_most_caught_up_follower_of_the_rack_wins(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 3)
    same = {7: "a", 8: "b", 9: "b"}.get
    replicas.follower_fetched(part, 8, leo, 2_000)
    replicas.follower_fetched(part, 9, leo - 2, 2_000)
    assert preferred_read_replica(part, "b", 0, 3_000, same) == 8  # higher LEO
    replicas.follower_fetched(part, 9, leo, 2_500)
    assert preferred_read_replica(part, "b", 0, 3_000, same) == 9  # caught up more recently
    replicas.follower_fetched(part, 8, leo, 2_500)
    assert preferred_read_replica(part, "b", 0, 3_000, same) == 9  # then the higher id


# -- the Fetch handler ------------------------------------------------------------------------------


class _Cluster:
    def broker(self, node_id: int) -> BrokerNode | None:
        return NODES.get(node_id)

    def topic(self, name: str) -> None:
        return None


class _Metrics:
    def __init__(self) -> None:
        self.fetches: list[tuple[str, int, str | None]] = []

    def fetched(self, topic: str, size: int, records: int, served_as: str | None = None) -> None:
        self.fetches.append((topic, size, served_as))


def _ctx(replicas: ReplicaManager, version: int, selector: str | None = None) -> Any:
    broker = SimpleNamespace(
        replicas=replicas,
        cluster=_Cluster(),
        metrics=_Metrics(),
        security=SimpleNamespace(authorizer=None, quotas=SimpleNamespace(enabled=False)),
        replica_selector=selector,
        shutting_down=False,
    )
    return SimpleNamespace(version=version, broker=broker, listener="PLAINTEXT")


def _fetch(
    ctx: Any, offset: int, *, replica_id: int = -1, rack: str = "", committed: bool = False, wait_ms: int = 0
) -> Any:
    body = {
        "replica_id": replica_id,
        "max_wait_ms": wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 1 if committed else 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": rack,
    }
    req = decode_request(1, ctx.version, encode_request(1, ctx.version, body))
    return fetch.handle(ctx, req)


def _only(answer: Any) -> dict[str, Any]:
    return answer["responses"][0]["partitions"][0]


def _offsets(records: bytes | memoryview) -> list[int]:
    return [
        o for h in validate_batches(records, check_crc=False) for o in range(h.base_offset, h.last_offset + 1)
    ]


@pytest.fixture
def follower(replicas: ReplicaManager) -> Partition:
    """t-0 led by 8 now; this replica has offsets 0-9 and a high watermark of 4 (8 had fetched to 4)."""
    part = _lead(replicas, [7, 8])
    _append(replicas, part, 5)
    replicas.follower_fetched(part, 8, 4, 2_000)
    assert part.log.high_watermark == 4
    part.become_follower(8, 2, [7, 8, 9], [7, 8], 4)
    part.needs_truncation = False
    return part


def test_a_follower_serves_a_v11_consumer_up_to_its_own_high_watermark(
    replicas: ReplicaManager, follower: Partition
) -> None:
    ctx = _ctx(replicas, 11)
    got = _only(_fetch(ctx, 0))
    assert (got["error_code"], got["high_watermark"], got["preferred_read_replica"]) == (0, 4, -1)
    assert _offsets(got["records"]) == [0, 1, 2, 3]
    assert ctx.broker.metrics.fetches == [("t", len(got["records"]), "follower")]
    between = _only(_fetch(ctx, 7))  # above the HW, within the log: nothing yet, no error
    assert (between["error_code"], bytes(between["records"])) == (0, b"")


def test_out_of_range_on_a_follower_is_its_own_log_bounds(
    replicas: ReplicaManager, follower: Partition
) -> None:
    ctx = _ctx(replicas, 11)
    got = _only(_fetch(ctx, 11))  # past this replica's log end (10), though the leader may have it
    assert (got["error_code"], got["high_watermark"], got["log_start_offset"]) == (
        ErrorCode.OFFSET_OUT_OF_RANGE,
        4,
        0,
    )
    assert ctx.broker.metrics.fetches == []


def test_only_consumers_with_client_metadata_may_read_a_follower(
    replicas: ReplicaManager, follower: Partition
) -> None:
    assert _only(_fetch(_ctx(replicas, 10), 0))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (
        _only(_fetch(_ctx(replicas, 11), 0, replica_id=9))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )


def test_read_committed_on_a_follower_stops_at_its_own_last_stable_offset(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8])
    _append(replicas, part, 2)  # 0-3
    txn = {"producer_id": 5, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True}
    _append(replicas, part, 1, **txn)  # 4-5, undecided
    leo = _append(replicas, part, 1)  # 6-7
    replicas.follower_fetched(part, 8, leo, 2_000)
    part.become_follower(8, 2, [7, 8, 9], [7, 8], 4)
    got = _only(_fetch(_ctx(replicas, 11), 0, committed=True))
    assert (got["error_code"], got["high_watermark"], got["last_stable_offset"]) == (0, 8, 4)
    assert _offsets(got["records"]) == [0, 1, 2, 3]
    uncommitted = _only(_fetch(_ctx(replicas, 11), 0))
    assert _offsets(uncommitted["records"]) == list(range(8))


def test_the_leader_points_a_consumer_at_its_racks_follower_at_once(replicas: ReplicaManager) -> None:
    part = _lead(replicas, [7, 8, 9])
    leo = _append(replicas, part, 3)
    for r in (8, 9):
        replicas.follower_fetched(part, r, leo, 2_000, log_start_offset=0)
    ctx = _ctx(replicas, 11, RACK_AWARE)
    got = _only(_fetch(ctx, 2, rack="b", wait_ms=30_000))  # answered now: not parked
    assert (got["error_code"], got["preferred_read_replica"], bytes(got["records"])) == (0, 8, b"")
    assert (got["high_watermark"], got["last_stable_offset"], got["log_start_offset"]) == (leo, leo, 0)
    assert ctx.broker.metrics.fetches == []
    own_rack = _only(_fetch(ctx, 2, rack="a"))
    assert own_rack["preferred_read_replica"] == -1 and _offsets(own_rack["records"]) == [2, 3, 4, 5]
    assert ctx.broker.metrics.fetches == [("t", len(own_rack["records"]), "leader")]
    unselected = _only(_fetch(_ctx(replicas, 11), 2, rack="b"))  # no replica.selector.class
    assert unselected["preferred_read_replica"] == -1 and _offsets(unselected["records"]) == [2, 3, 4, 5]
    before_v11 = _only(_fetch(_ctx(replicas, 10, RACK_AWARE), 2))
    assert _offsets(before_v11["records"]) == [2, 3, 4, 5]
