"""`LeaderAdmin`: ElectLeaders, the admin call behind ``minikafka partitions elect-leaders``.

`elect_leaders(election_type, partitions)` sends ElectLeaders to the
controller (retrying on another broker's NOT_CONTROLLER, as Kafka's
AdminClient does) and answers per partition: None (a leader was elected) or
the `KafkaError` (ELECTION_NOT_NEEDED when the wanted leader already leads,
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
UNKNOWN_TOPIC_OR_PARTITION...). ``partitions`` None: every partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, error_for
from client.types import TopicPartition
from protocol.errors import ErrorCode

ELECT_LEADERS = 43
PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPES = {"preferred": PREFERRED, "unclean": UNCLEAN}


class LeaderAdmin(AdminMixin):
    async def elect_leaders(
        self,
        election_type: int,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int = 30000,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders (``election_type`` PREFERRED or UNCLEAN) of ``partitions`` (None: all)."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "election_type": election_type,
            "topic_partitions": None
            if partitions is None
            else [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            "timeout_ms": timeout_ms,
        }

        async def call() -> Any:
            resp = await self.cluster.send(await self._controller(), ELECT_LEADERS, body)
            if resp.error_code:
                raise error_for(resp.error_code)
            codes = [p.error_code for t in resp.replica_election_results for p in t.partition_result]
            if ErrorCode.NOT_CONTROLLER in codes:
                raise error_for(ErrorCode.NOT_CONTROLLER)
            return resp

        resp = await self._retrying(call)
        return {
            TopicPartition(t.topic, p.partition_id): (
                error_for(p.error_code, p.error_message, f"{t.topic}-{p.partition_id}")
                if p.error_code
                else None
            )
            for t in resp.replica_election_results
            for p in t.partition_result
        }
