"""The consumer group calls of the admin client: list, describe and delete groups, their offsets and lag.

Group calls go to the group's coordinator (found with FindCoordinator;
coordinator moves and loads are retried within ``default.api.timeout.ms``);
ListGroups goes to every broker and the answers are merged.

- `describe_groups`: ConsumerGroupDescribe where the coordinator serves it
  (groups of Kafka 4's consumer protocol, KIP-848), else DescribeGroups
  (classic groups, older brokers); groups are described concurrently.
- `list_consumer_group_offsets`, `alter_consumer_group_offsets`: OffsetFetch
  and OffsetCommit of one group (an alteration as an inactive group's commit).
- `consumer_group_lag`: committed offsets against the partitions' end offsets,
  with the member that owns each partition.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from client.admin_cluster import group_offsets, serves
from client.admin_mixin import AdminMixin
from client.errors import COORDINATOR_CODES, KafkaError, error_for
from client.types import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition
from protocol.errors import ErrorCode, ProtocolError
from protocol.member_data import decode_assignment

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
CONSUMER_GROUP_DESCRIBE = 69
LIST_GROUPS = 16
DELETE_GROUPS = 42


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    client_id: str
    host: str
    assignment: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...] = ()
    error: KafkaError | None = None


@dataclass(frozen=True)
class PartitionLag:
    """One partition of a group's lag report; ``committed`` is None when nothing is committed."""

    partition: TopicPartition
    committed: int | None
    end_offset: int
    lag: int | None
    member_id: str = ""
    client_id: str = ""
    host: str = ""


class GroupAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (see `AdminMixin` for what the client provides;
    ``list_offsets`` comes from `client.admin_topics.TopicAdmin`)."""

    if TYPE_CHECKING:

        async def list_offsets(
            self, specs: Mapping[TopicPartition, str | int], *, read_committed: bool = False
        ) -> dict[TopicPartition, OffsetAndTimestamp | KafkaError | None]: ...

    # -- groups ------------------------------------------------------------------------------------

    async def _coordinator_send(self, group_id: str, api_key: int, body: dict[str, Any]) -> Any:
        async def call() -> Any:
            node = await self.cluster.find_coordinator(group_id)
            conn = await self.cluster.connection(("coordinator", node))
            resp = await conn.send(api_key, body, timeout=self.cluster.request_timeout)
            code = resp.get("error_code", 0)
            if code in COORDINATOR_CODES:
                raise error_for(code, context=f"group {group_id!r}")
            return resp

        return await self._retrying(call)

    async def list_groups(self) -> dict[str, str]:
        """{group id: protocol type} across every broker."""
        await self._retrying(lambda: self.cluster.refresh([]))
        out: dict[str, str] = {}
        for node in sorted(self.cluster.brokers):

            async def call(node: int = node) -> Any:
                resp = await self.cluster.send(node, LIST_GROUPS, {})
                if resp.error_code in COORDINATOR_CODES:
                    raise error_for(resp.error_code)
                return resp

            resp = await self._retrying(call)
            if resp.error_code:
                raise error_for(resp.error_code, context="ListGroups")
            for g in resp.groups:
                out[g.group_id] = g.protocol_type
        return dict(sorted(out.items()))

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """State, protocol and members of each group.

        As Kafka's AdminClient: ConsumerGroupDescribe first where the coordinator serves it (groups
        of Kafka 4's consumer protocol, KIP-848: protocol is the server-side assignor, members'
        current assignments), DescribeGroups for classic groups (and older brokers). The
        groups are described concurrently.
        """
        ids = list(dict.fromkeys(group_ids))
        found = await asyncio.gather(*(self._describe_group(gid) for gid in ids))  # concurrently
        return dict(zip(ids, found, strict=True))

    async def _describe_group(self, gid: str) -> GroupDescription:
        modern = await self._describe_consumer_protocol_group(gid)
        if modern is not None:
            return modern
        version_body = {"groups": [gid], "include_authorized_operations": False}
        resp = await self._coordinator_send(gid, DESCRIBE_GROUPS, version_body)
        g = resp.groups[0]
        members = []
        for m in g.members:
            assignment: frozenset[TopicPartition] = frozenset()
            if g.protocol_type == "consumer" and m.member_assignment:
                with contextlib.suppress(ProtocolError):
                    assignment = frozenset(decode_assignment(m.member_assignment).partitions)
            members.append(MemberDescription(m.member_id, m.client_id, m.client_host, assignment))
        return GroupDescription(
            g.group_id,
            g.group_state,
            g.protocol_type,
            g.protocol_data,
            tuple(members),
            error_for(g.error_code, context=g.group_id) if g.error_code else None,
        )

    async def _describe_consumer_protocol_group(self, group_id: str) -> GroupDescription | None:
        """ConsumerGroupDescribe of one group; None when it is not a consumer-protocol group or
        the coordinator does not serve the API."""

        async def call() -> Any:
            node = await self.cluster.find_coordinator(group_id)
            conn = await self.cluster.connection(("coordinator", node))
            if not serves(conn, CONSUMER_GROUP_DESCRIBE, 0):
                return None
            body = {"group_ids": [group_id], "include_authorized_operations": False}
            resp = await conn.send(
                CONSUMER_GROUP_DESCRIBE, body, version=0, timeout=self.cluster.request_timeout
            )
            group = resp.groups[0]
            if group.error_code in COORDINATOR_CODES:
                raise error_for(group.error_code, context=f"group {group_id!r}")
            return group

        g = await self._retrying(call)
        if g is None or g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        members = tuple(
            MemberDescription(
                m.member_id,
                m.client_id,
                m.client_host,
                frozenset(
                    TopicPartition(t.topic_name, p)
                    for t in m.assignment.topic_partitions
                    for p in t.partitions
                ),
            )
            for m in g.members
        )
        error = error_for(g.error_code, g.error_message, group_id) if g.error_code else None
        return GroupDescription(group_id, g.group_state, "consumer", g.assignor_name, members, error)

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, KafkaError | None]:
        out: dict[str, KafkaError | None] = {}
        for gid in group_ids:
            resp = await self._coordinator_send(gid, DELETE_GROUPS, {"groups_names": [gid]})
            for r in resp.results:
                out[r.group_id] = error_for(r.error_code, context=r.group_id) if r.error_code else None
        return out

    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of a group (every partition it committed when ``partitions`` is None)."""
        topics: list[dict[str, Any]] | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = collections.defaultdict(list)
            for tp in partitions:
                by_topic[tp.topic].append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        resp = await self._coordinator_send(group_id, OFFSET_FETCH, {"group_id": group_id, "topics": topics})
        found = group_offsets(group_id, resp.get("error_code", 0), resp.topics)
        if isinstance(found, KafkaError):
            raise found
        return found

    async def alter_consumer_group_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
    ) -> dict[TopicPartition, KafkaError | None]:
        """Commit offsets for an inactive group (as kafka-consumer-groups --reset-offsets --execute)."""
        by_topic: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for tp, om in sorted(offsets.items()):
            om = om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(om, "")
            by_topic[tp.topic].append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": om.offset,
                    "committed_metadata": om.metadata,
                }
            )
        body = {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        resp = await self._coordinator_send(group_id, OFFSET_COMMIT, body)
        out: dict[TopicPartition, KafkaError | None] = {}
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                out[tp] = error_for(p.error_code, context=str(tp)) if p.error_code else None
        return out

    async def consumer_group_lag(self, group_id: str) -> list[PartitionLag]:
        """Committed offset, end offset and lag of every partition the group commits or is assigned."""
        committed = await self.list_consumer_group_offsets(group_id)
        description = (await self.describe_groups([group_id])).get(group_id)
        owners: dict[TopicPartition, Any] = {}
        if description is not None:
            for m in description.members:
                for tp in m.assignment:
                    owners[tp] = m
        tps = sorted(set(committed) | set(owners))
        ends = await self.list_offsets(dict.fromkeys(tps, "latest")) if tps else {}
        out = []
        for tp in tps:
            end = ends.get(tp)
            end_offset = end.offset if isinstance(end, OffsetAndTimestamp) else -1
            c = committed.get(tp)
            lag = max(end_offset - c.offset, 0) if c is not None and end_offset >= 0 else None
            m = owners.get(tp)
            out.append(
                PartitionLag(
                    tp,
                    c.offset if c is not None else None,
                    end_offset,
                    lag,
                    m.member_id if m else "",
                    m.client_id if m else "",
                    m.host if m else "",
                )
            )
        return out
