"""The cluster as handlers see it: brokers, controller, topics and their partition states.

`ClusterView` is read-only and answers from what this broker currently knows;
`TopicAdmin` changes topics. Both are protocols so handlers do not depend on
whether the cluster is one embedded broker or several coordinated through
ZooKeeper.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from broker.cluster.assignment import FullAssignment

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A live broker and the addresses clients reach it at.

    ``host``/``port`` is the address of its first listener; ``endpoints`` has
    one ``(listener name, host, port)`` per listener (empty: ``host``/``port``
    answer for every listener, as for a broker with one). ``protocols``: each
    listener's security protocol (PLAINTEXT when not named).
    """

    node_id: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[tuple[str, str, int], ...] = ()
    protocols: tuple[tuple[str, str], ...] = ()

    def address(self, listener: str) -> tuple[str, int] | None:
        """Where to reach this broker through ``listener``; None if it has no such listener."""
        if not self.endpoints:
            return self.host, self.port
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return None


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's leadership: leader -1 when it has none (all ISR members down)."""

    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionState, ...]
    configs: dict[str, str] = field(default_factory=dict)  # topic-level overrides

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class ClusterView(Protocol):
    @property
    def cluster_id(self) -> str: ...

    @property
    def controller_id(self) -> int: ...

    def brokers(self) -> list[BrokerNode]:
        """Live brokers, by node id."""
        ...

    def broker(self, node_id: int) -> BrokerNode | None: ...

    def topics(self) -> Mapping[str, TopicState]: ...

    def topic(self, name: str) -> TopicState | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this ID; None if no topic has it (deleted, or never was)."""
        ...

    async def elect_leaders(
        self, election_type: int, partitions: list[tuple[str, int]] | None, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders: {(topic, partition): (error code, message)} for ``partitions`` (None: all),
        ``election_type`` 0 = PREFERRED, 1 = UNCLEAN (broker/cluster/zk/elections.py has the rules)."""
        ...

    async def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], list[int] | None], allow_rf_change: bool, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """AlterPartitionReassignments: {(topic, partition): (error code, message)}; a target of None
        cancels (broker/cluster/zk/reassignment.py has the rules); None if this broker is not the
        controller."""
        ...

    def list_partition_reassignments(
        self, partitions: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], FullAssignment] | None:
        """The reassignments in progress, of ``partitions`` (None: all); None if this broker is not
        the controller."""
        ...


class TopicAdmin(Protocol):
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
        """Create a topic and return its new ID (the zero UUID with ``validate_only``).

        ``assignment`` ({partition: replicas}) wins over ``partitions`` and the factor
        (None: ``default.replication.factor``). Raises `KafkaError` (INVALID_TOPIC_EXCEPTION,
        TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG)."""
        ...

    def delete_topic(self, name: str) -> None:
        """Raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION."""
        ...

    def deleting(self, name: str) -> bool:
        """Whether a deletion of ``name`` is still under way, so the name cannot be created again
        yet (a cluster's controller deletes after the request marks the topic)."""
        ...

    def add_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        """Raise ``name``'s partition count to ``count``; ``assignment``: the replicas of each new
        partition, else Kafka's placement (`assignment.added_partitions`, checked against the topic as
        it is now). Raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
        INVALID_REPLICA_ASSIGNMENT or INVALID_REPLICATION_FACTOR."""
        ...

    def alter_topic_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        """Replace a topic's overrides; raises `KafkaError` UNKNOWN_TOPIC_OR_PARTITION or INVALID_CONFIG."""
        ...
