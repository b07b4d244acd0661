"""The topic and partition calls of the admin client: topics, partitions, offsets and records.

- `create_topics`, `create_partitions`, `delete_topics`: CreateTopics,
  CreatePartitions, DeleteTopics to the controller; per topic None or the
  topic's `KafkaError` (a NOT_CONTROLLER answer to CreateTopics is retried
  after a metadata refresh).
- `list_topics`, `describe_topics`: Metadata (a missing topic's value is its
  UNKNOWN_TOPIC_OR_PARTITION error).
- `list_offsets`: ListOffsets to each partition's leader, for "earliest",
  "latest" or a ms timestamp; leader changes and lost connections are
  retried within ``default.api.timeout.ms``, while a topic the cluster does not have (or may
  not be described) fails its partitions at once.
- `delete_records`: DeleteRecords to each partition's leader; per partition
  the new low watermark or the error.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client.admin_mixin import AdminMixin
from client.errors import METADATA_CODES, KafkaConnectionError, KafkaError, KafkaTimeoutError, error_for
from client.types import OffsetAndTimestamp, TopicInfo, TopicPartition
from protocol.errors import ErrorCode

CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_PARTITIONS = 37
DELETE_RECORDS = 21

# Metadata's topic errors that no retry will change, for ListOffsets.
_FINAL_TOPIC_ERRORS = frozenset(
    (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
    )
)


@dataclass
class NewTopic:
    """A topic to create; -1 leaves partitions/replication to the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


class TopicAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (see `AdminMixin` for what the client provides)."""

    # -- topics ----------------------------------------------------------------------------------

    async def create_topics(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False, timeout_ms: int = 30000
    ) -> dict[str, KafkaError | None]:
        """Create topics; per topic None or its error (TOPIC_ALREADY_EXISTS, INVALID_CONFIG, ...)."""
        new = list(topics)
        body = {
            "topics": [
                {
                    "name": t.name,
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": str(v)} for k, v in t.configs.items()],
                }
                for t in new
            ],
            "timeout_ms": timeout_ms,
            "validate_only": validate_only,
        }

        async def call() -> Any:
            resp = await self.cluster.send(await self._controller(), CREATE_TOPICS, body)
            if any(t.error_code == ErrorCode.NOT_CONTROLLER for t in resp.topics):
                raise error_for(ErrorCode.NOT_CONTROLLER)
            return resp

        resp = await self._retrying(call)
        out: dict[str, KafkaError | None] = {}
        for t in resp.topics:
            out[t.name] = error_for(t.error_code, t.error_message, t.name) if t.error_code else None
        return out

    async def create_partitions(
        self,
        counts: Mapping[str, int],
        *,
        assignments: Mapping[str, list[list[int]]] | None = None,
        validate_only: bool = False,
        timeout_ms: int = 30000,
    ) -> dict[str, KafkaError | None]:
        """Raise topics' partition counts to ``counts``; per topic None or its error (INVALID_PARTITIONS, ...).

        ``assignments``: per topic, the replicas of each new partition (default: the broker places them).
        """
        body = {
            "topics": [
                {"name": name, "count": count, "assignments": _new_assignments((assignments or {}).get(name))}
                for name, count in counts.items()
            ],
            "timeout_ms": timeout_ms,
            "validate_only": validate_only,
        }

        async def call() -> Any:
            return await self.cluster.send(await self._controller(), CREATE_PARTITIONS, body)

        resp = await self._retrying(call)
        return {
            r.name: error_for(r.error_code, r.error_message, r.name) if r.error_code else None
            for r in resp.results
        }

    async def delete_topics(
        self, names: Iterable[str], *, timeout_ms: int = 30000
    ) -> dict[str, KafkaError | None]:
        body = {"topic_names": list(names), "timeout_ms": timeout_ms}

        async def call() -> Any:
            return await self.cluster.send(await self._controller(), DELETE_TOPICS, body)

        resp = await self._retrying(call)
        return {
            r.name: error_for(r.error_code, context=r.name) if r.error_code else None for r in resp.responses
        }

    async def list_topics(self, *, internal: bool = False) -> dict[str, TopicInfo]:
        """Every topic (internal ones such as __consumer_offsets only with ``internal``)."""
        seen = await self._retrying(lambda: self.cluster.refresh(all_topics=True))
        return {
            name: info
            for name, info in sorted(seen.items())
            if not info.error and (internal or not info.internal)
        }

    async def describe_topics(self, names: Iterable[str]) -> dict[str, TopicInfo | KafkaError]:
        """Partition metadata per topic, or the error (UNKNOWN_TOPIC_OR_PARTITION) for a missing one."""
        wanted = list(names)
        seen = await self._retrying(lambda: self.cluster.refresh(wanted))
        out: dict[str, TopicInfo | KafkaError] = {}
        for name in wanted:
            info = seen.get(name)
            if info is None:
                out[name] = error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=name)
            elif info.error:
                out[name] = error_for(info.error, context=name)
            else:
                out[name] = info
        return out

    # -- offsets -------------------------------------------------------------------------------------

    async def list_offsets(
        self, specs: Mapping[TopicPartition, str | int], *, read_committed: bool = False
    ) -> dict[TopicPartition, OffsetAndTimestamp | KafkaError | None]:
        """Offset per partition for "earliest", "latest" or a ms timestamp (None: no such record).

        A partition's error is its value: UNKNOWN_TOPIC_OR_PARTITION at once for a topic the
        cluster does not have (and for a partition the topic lacks), as Kafka's AdminClient.
        """
        query: dict[TopicPartition, int] = {}
        for tp, spec in specs.items():
            if spec == "earliest":
                query[tp] = -2
            elif spec == "latest":
                query[tp] = -1
            elif isinstance(spec, int) and spec >= 0:
                query[tp] = spec
            else:
                raise ValueError(
                    f"offset spec must be 'earliest', 'latest' or a timestamp >= 0, not {spec!r}"
                )
        out: dict[TopicPartition, OffsetAndTimestamp | KafkaError | None] = {}
        left = dict(query)
        deadline = time.monotonic() + self._timeout
        self.cluster.track(tp.topic for tp in left)
        await self._refresh_for_offsets(left, out)
        while left:
            by_node: dict[int, list[TopicPartition]] = collections.defaultdict(list)
            for tp in list(left):
                info = self.cluster.topics.get(tp.topic)
                if info is not None and tp.partition not in info.partitions:
                    out[tp] = error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=str(tp))
                    del left[tp]
                    continue
                leader = self.cluster.leader(tp)
                if leader is not None:
                    by_node[leader].append(tp)
            answers, failed = await self.cluster.list_offsets(
                by_node, left, read_committed, (KafkaConnectionError, KafkaTimeoutError)
            )
            retry: object = failed
            for tp, p in answers:
                if tp not in left:
                    continue
                if p.error_code == 0:
                    out[tp] = OffsetAndTimestamp(p.offset, p.timestamp) if p.offset >= 0 else None
                    del left[tp]
                elif p.error_code in METADATA_CODES and p.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    retry = p.error_code
                else:
                    out[tp] = error_for(p.error_code, context=str(tp))
                    del left[tp]
            if not left:
                break
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"ListOffsets did not complete: {retry}")
            await asyncio.sleep(self._backoff)
            await self._refresh_for_offsets(left, out)
        return out

    async def _refresh_for_offsets(
        self, left: dict[TopicPartition, int], out: dict[TopicPartition, Any]
    ) -> None:
        """Metadata for the topics of ``left``. A topic the cluster says it does not have (or may not
        be described) answers each of its partitions with that error at once, moving it from ``left``
        to ``out``, as Kafka's AdminClient fails them (PartitionLeaderStrategy): waiting would
        only end in a timeout."""
        seen = await self._retrying(lambda: self.cluster.refresh(sorted({tp.topic for tp in left})))
        for tp in list(left):
            info = seen.get(tp.topic)
            if info is not None and info.error in _FINAL_TOPIC_ERRORS:
                out[tp] = error_for(info.error, context=str(tp))
                del left[tp]

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        """Move each partition's log start offset up to ``offset`` (-1: the high watermark); new low watermarks."""
        self.cluster.track(tp.topic for tp in offsets)
        await self._retrying(lambda: self.cluster.refresh(sorted({tp.topic for tp in offsets})))
        out: dict[TopicPartition, int | KafkaError] = {}
        by_node: dict[int, list[TopicPartition]] = collections.defaultdict(list)
        for tp in offsets:
            leader = self.cluster.leader(tp)
            if leader is None:
                out[tp] = error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, context=str(tp))
            else:
                by_node[leader].append(tp)
        for node, tps in by_node.items():
            topics: dict[str, list[dict[str, int]]] = collections.defaultdict(list)
            for tp in tps:
                topics[tp.topic].append({"partition_index": tp.partition, "offset": offsets[tp]})
            body = {
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "timeout_ms": 30000,
            }

            async def call(node: int = node, body: dict[str, Any] = body) -> Any:
                return await self.cluster.send(node, DELETE_RECORDS, body)

            resp = await self._retrying(call)
            for t in resp.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    out[tp] = error_for(p.error_code, context=str(tp)) if p.error_code else p.low_watermark
        return out


def _new_assignments(replicas: list[list[int]] | None) -> list[dict[str, list[int]]] | None:
    return None if replicas is None else [{"broker_ids": list(r)} for r in replicas]
