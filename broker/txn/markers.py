"""Writing a transaction's COMMIT/ABORT markers on its partitions, wherever their leaders are.

- `write_local` appends a marker on each given partition this broker leads
  (`ReplicaManager.write_marker`) and returns once they are durable: fsynced
  by one group-commit round and below the high watermark (acks=all). A marker on a
  `__consumer_offsets` partition then settles the transaction's offset
  commits in the group coordinator. Errors come back as codes:
  NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH,
  TRANSACTION_COORDINATOR_FENCED, KAFKA_STORAGE_ERROR, ...
  The WriteTxnMarkers handler uses it for markers other brokers send.
- `MarkerWriter.write` (the coordinator's): every partition of the
  transaction gets its marker from its current leader: locally, or with a
  WriteTxnMarkers v1 request to that broker (`broker.txn.broker_links`).
  Partitions answering a retriable error (leader moved, not available,
  a leader that does not host the partition (yet), storage error, timeout)
  are retried after a short backoff, their leaders looked up afresh, until
  they succeed or the coordinator loses its partition. Partitions whose
  topic is gone from the cluster, and markers the partition refuses as
  stale (an older producer or coordinator epoch), are given up, as Kafka's
  marker channel does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from broker.groups.store import OFFSETS_TOPIC
from broker.topic_results import partitions_by_topic
from broker.txn.broker_links import LINK_ERRORS, BrokerLinks
from protocol.errors import ErrorCode, KafkaError, error_code

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView
    from broker.group_commit import GroupCommit
    from broker.groups.coordinator import GroupCoordinator
    from broker.replica import Partition, ReplicaManager

log = logging.getLogger("minikafka.txn.markers")

TopicPartition = tuple[str, int]
WRITE_TXN_MARKERS = 27
MARKERS_VERSION = 1
REPLICATION_TIMEOUT_S = 30.0
RETRY_BACKOFF_S = 0.2
GIVE_UP = frozenset(
    {
        ErrorCode.NONE,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


async def write_local(
    replicas: ReplicaManager,
    group_commit: GroupCommit,
    groups: GroupCoordinator,
    tps: Iterable[TopicPartition],
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
) -> dict[TopicPartition, ErrorCode]:
    """One marker on each of ``tps`` (partitions led here), durable before answering (module
    docstring); all of them are fsynced in one group-commit round."""
    codes: dict[TopicPartition, ErrorCode] = {}
    appended: list[tuple[TopicPartition, Partition, int]] = []
    now_ms = time.time_ns() // 1_000_000
    for tp in tps:
        try:
            part = replicas.leader(*tp)
            outcome = replicas.write_marker(
                part, producer_id, producer_epoch, commit, coordinator_epoch, now_ms
            )
        except KafkaError as exc:
            codes[tp] = ErrorCode(exc.code)
            continue
        except OSError as exc:
            log.error("%s-%d: marker not written: %s", tp[0], tp[1], exc)
            codes[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            continue
        appended.append((tp, part, outcome.last_offset))
    if not appended:
        return codes
    try:
        await group_commit.sync_many([part.log for _, part, _ in appended])
    except (OSError, KafkaError):
        codes.update((tp, ErrorCode.KAFKA_STORAGE_ERROR) for tp, _, _ in appended)
        return codes
    replicated = await asyncio.gather(
        *(replicas.wait_for_replication(part, last + 1, REPLICATION_TIMEOUT_S) for _, part, last in appended)
    )
    for (tp, _, _), code in zip(appended, replicated, strict=True):
        codes[tp] = ErrorCode(code)
        if code == ErrorCode.NONE and tp[0] == OFFSETS_TOPIC:
            groups.complete_transaction(tp[1], producer_id, commit)
    return codes


class MarkerWriter:
    """The coordinator's marker channel (module docstring)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        group_commit: GroupCommit,
        groups: GroupCoordinator,
        cluster: ClusterView,
        listener: str | None,
    ) -> None:
        self._replicas = replicas
        self._group_commit = group_commit
        self._groups = groups
        self._cluster = cluster
        self.links = BrokerLinks(cluster, listener, f"txn-coordinator-{replicas.node_id}")

    async def write(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: frozenset[TopicPartition],
        still_coordinator: Callable[[], bool],
    ) -> None:
        pending = set(partitions)
        while pending and still_coordinator():
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in pending:
                topic = self._cluster.topic(tp[0])
                if topic is None or tp[1] >= len(topic.partitions):
                    by_leader.setdefault(-2, []).append(tp)  # gone: nothing to mark
                else:
                    by_leader.setdefault(topic.partitions[tp[1]].leader, []).append(tp)
            pending.difference_update(by_leader.pop(-2, []))
            local = by_leader.pop(self._replicas.node_id, [])
            marker = (producer_id, producer_epoch, commit, coordinator_epoch)
            jobs: list[Coroutine[Any, Any, dict[TopicPartition, ErrorCode]]] = [
                self._remote(leader, tps, *marker) for leader, tps in by_leader.items() if leader >= 0
            ]
            if local:
                jobs.append(write_local(self._replicas, self._group_commit, self._groups, local, *marker))
            results: dict[TopicPartition, ErrorCode] = {}
            for answer in await asyncio.gather(*jobs):
                results.update(answer)
            for tp, code in results.items():
                if code in GIVE_UP:
                    if code != ErrorCode.NONE:
                        log.warning("marker for %s-%d given up: %s", tp[0], tp[1], code.name)
                    pending.discard(tp)
            if pending:
                await asyncio.sleep(RETRY_BACKOFF_S)

    async def _remote(
        self,
        leader: int,
        tps: list[TopicPartition],
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> dict[TopicPartition, ErrorCode]:
        """The leader's answer per partition; none for them if it could not be asked (retried later)."""
        topics = partitions_by_topic(tps)
        body = {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "transaction_result": commit,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        }
        try:
            response = await self.links.call(
                leader, WRITE_TXN_MARKERS, MARKERS_VERSION, body, REPLICATION_TIMEOUT_S + 5
            )
        except LINK_ERRORS as exc:
            log.info("WriteTxnMarkers to broker %d failed: %s", leader, exc)
            return {}
        return {
            (topic.name, p.partition_index): error_code(p.error_code)
            for marker in response.markers
            for topic in marker.topics
            for p in topic.partitions
        }

    def close(self) -> None:
        self.links.close()
