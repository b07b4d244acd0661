"""`ReassignmentAdmin`: AlterPartitionReassignments and ListPartitionReassignments, the admin calls
behind ``minikafka partitions reassign``.

Both go to the controller (retrying on another broker's NOT_CONTROLLER, as
Kafka's AdminClient does).

- `alter_partition_reassignments({tp: replicas or None})` starts (a list of
  broker ids) or cancels (None) reassignments and answers per partition: None
  (started, or cancelled) or the `KafkaError` (INVALID_REPLICA_ASSIGNMENT,
  NO_REASSIGNMENT_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION...). The answer
  comes when the move has started; `list_partition_reassignments` shows it
  until it completes.
- `list_partition_reassignments(partitions)` ({tp: `PartitionReassignment`}):
  those in progress, of ``partitions`` (None: all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, error_for
from client.types import TopicPartition

ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """A reassignment in progress: ``replicas`` (target first, then the original ones), and those
    being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)


class ReassignmentAdmin(AdminMixin):
    async def alter_partition_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
        timeout_ms: int = 30000,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Start (replicas) or cancel (None) the reassignment of each partition in ``targets``."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in targets.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "replicas": None if replicas is None else list(replicas)}
            )
        body = {
            "timeout_ms": timeout_ms,
            "allow_replication_factor_change": allow_replication_factor_change,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

        async def call() -> Any:
            resp = await self.cluster.send(await self._controller(), ALTER_PARTITION_REASSIGNMENTS, body)
            if resp.error_code:
                raise error_for(resp.error_code, resp.error_message)
            return resp

        resp = await self._retrying(call)
        return {
            TopicPartition(t.name, p.partition_index): (
                error_for(p.error_code, p.error_message, f"{t.name}-{p.partition_index}")
                if p.error_code
                else None
            )
            for t in resp.responses
            for p in t.partitions
        }

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None, *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress, of ``partitions`` (None: every partition)."""
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        body = {"timeout_ms": timeout_ms, "topics": topics}

        async def call() -> Any:
            resp = await self.cluster.send(await self._controller(), LIST_PARTITION_REASSIGNMENTS, body)
            if resp.error_code:
                raise error_for(resp.error_code, resp.error_message)
            return resp

        resp = await self._retrying(call)
        return {
            TopicPartition(t.name, p.partition_index): PartitionReassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
            )
            for t in resp.topics
            for p in t.partitions
        }
