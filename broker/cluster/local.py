"""`LocalCluster`: the cluster view and topic admin of a single broker with no ZooKeeper.

This broker is every topic's only replica, the leader of every partition
(leader epoch 0, replicas = ISR = [itself]) and the controller. The view is
derived from the log manager's topic registry and cached until a topic is
created, deleted or reconfigured.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping

from broker.cluster.assignment import FullAssignment, added_partitions
from broker.cluster.view import BrokerNode, PartitionState, TopicState
from broker.cluster.zk import reassignment
from broker.cluster.zk.snapshot import Snapshot
from broker.replica import Partition, ReplicaManager
from protocol.errors import ErrorCode, KafkaError
from storage import topic_ids
from storage.errors import KafkaStorageError

log = logging.getLogger("minikafka.cluster")

LEADER_EPOCH = 0


class LocalCluster:
    def __init__(self, replicas: ReplicaManager, node: BrokerNode) -> None:
        self.replicas = replicas
        self.logs = replicas.logs
        self.node = node  # the server sets the advertised address once it has bound its port
        self.topic_deleted: list[Callable[[str], None]] = []  # run after a topic's logs are gone
        self._topics: dict[str, TopicState] | None = None
        self._names: dict[int, str] | None = None  # by UUID.int: UUID's own hash is Python code
        for name, info in self.logs.topics().items():
            if info.topic_id == topic_ids.ZERO:  # registered by a minikafka older than topic IDs
                self.logs.set_topic_id(name, topic_ids.new_topic_id())
        for part in replicas.partitions():
            self._lead(part)

    def _lead(self, part: Partition) -> None:
        me = [self.node.node_id]
        try:
            part.become_leader(LEADER_EPOCH, me, me, int(time.time() * 1000))
            self.replicas.advance_high_watermark(part)  # ISR of one: above a checkpointed HW is committed
        except KafkaStorageError as exc:  # an offline log: still ours, answering KAFKA_STORAGE_ERROR
            log.warning("%s-%d: %s", part.topic, part.index, exc)
            part.leader_id, part.leader_epoch, part.isr = part.local_id, LEADER_EPOCH, me

    async def start(self) -> None:
        """Nothing to join: one broker is the whole cluster."""

    async def hand_over(self, timeout_s: float) -> None:
        """No other broker to hand leadership to."""

    async def stop(self) -> None:
        pass

    # -- ClusterView ---------------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        return self.logs.cluster_id

    @property
    def controller_id(self) -> int:
        return self.node.node_id

    async def elect_leaders(
        self, election_type: int, partitions: list[tuple[str, int]] | None, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Every partition is led by its only replica, the preferred one: nothing to elect."""
        if partitions is None:
            partitions = [(t.name, p.index) for t in self.topics().values() for p in t.partitions]
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        for topic, index in partitions:
            state = self.topic(topic)
            if state is None or not 0 <= index < len(state.partitions):
                out[(topic, index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            else:
                out[(topic, index)] = (ErrorCode.ELECTION_NOT_NEEDED, None)
        return out

    async def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], list[int] | None], allow_rf_change: bool, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Kafka's answers for a cluster of one broker: moving a partition onto this broker is already
        done, any other broker is not alive, and nothing is ever being reassigned."""
        me = self.node.node_id
        snap = Snapshot(brokers={me: self.node})
        for topic in self.topics().values():
            snap.assignments[topic.name] = {p.index: [me] for p in topic.partitions}
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        for tp, target in targets.items():
            outcome = reassignment.start(snap, tp, target, 0, allow_rf_change=allow_rf_change)
            out[tp] = (ErrorCode.NONE, None) if isinstance(outcome, reassignment.Change) else outcome
        return out

    def list_partition_reassignments(
        self, partitions: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], FullAssignment]:
        return {}

    def brokers(self) -> list[BrokerNode]:
        return [self.node]

    def broker(self, node_id: int) -> BrokerNode | None:
        return self.node if node_id == self.node.node_id else None

    def topics(self) -> Mapping[str, TopicState]:
        if self._topics is None:
            self._topics = {name: self._state(name) for name in self.logs.topics()}
        return self._topics

    def topic(self, name: str) -> TopicState | None:
        return self.topics().get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        if self._names is None:
            self._names = {t.topic_id.int: t.name for t in self.topics().values()}
        return self._names.get(topic_id.int)

    def _state(self, name: str) -> TopicState:
        info = self.logs.topics()[name]
        states = []
        for index in range(info.partitions):
            part = self.replicas.get((name, index))
            epoch = part.leader_epoch if part is not None else LEADER_EPOCH
            me = (self.node.node_id,)
            states.append(PartitionState(index, self.node.node_id, epoch, me, me))
        return TopicState(name, info.topic_id, tuple(states), dict(info.configs))

    # -- TopicAdmin ----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        replication_factor: int | None = None,
        assignment: dict[int, list[int]] | None = None,
    ) -> uuid.UUID:
        """One broker: one replica per partition (callers check the factor against `brokers`)."""
        if assignment is not None:
            partitions = len(assignment)
        self.logs.create_topic(name, partitions, configs or {}, validate_only=validate_only)
        if validate_only:
            return topic_ids.ZERO
        self._topics = self._names = None
        for part in self.replicas.host(name, range(partitions)):
            self._lead(part)
        topic_id = self.logs.topics()[name].topic_id
        log.info("created topic %s (id %s) with %d partitions", name, topic_ids.to_text(topic_id), partitions)
        return topic_id

    def add_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        info = self.logs.topics().get(name)
        if info is None:
            raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        me = [self.node.node_id]
        added_partitions(name, {p: me for p in range(info.partitions)}, count, assignment, me)
        added = self.logs.add_partitions(name, count, validate_only=validate_only)
        if validate_only:
            return
        self._topics = self._names = None
        for part in self.replicas.host(name, added):
            self._lead(part)
        log.info("topic %s now has %d partitions", name, count)

    def deleting(self, name: str) -> bool:
        return False  # delete_topic deletes at once

    def delete_topic(self, name: str) -> None:
        self.logs.delete_topic(name)
        self._topics = self._names = None
        self.replicas.drop_topic(name)
        for callback in self.topic_deleted:
            callback(name)
        log.info("deleted topic %s", name)

    def alter_topic_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        self.logs.alter_topic_configs(name, overrides, validate_only=validate_only)
        if not validate_only:
            self._topics = self._names = None
