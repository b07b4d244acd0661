"""The admin client: `AIOAdminClient` (asyncio) and `AdminClient` (synchronous).

Each call maps onto Kafka admin APIs and routes them as Kafka's AdminClient
does: CreateTopics/DeleteTopics to the controller, DescribeConfigs and
(Incremental)AlterConfigs for a broker to that broker (topics: any broker),
group APIs to the group's coordinator, ListGroups and ListTransactions to
every broker, DescribeTransactions to the transaction coordinator,
ListOffsets/DeleteRecords to each partition's leader.

Per-item outcomes (one topic of several, one group of several) come back as a
dict of item -> None or the `KafkaError` for that item; a failure of the whole
call (no broker, a timeout) raises.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from client._loop import LoopThread
from client.admin_acls import AclAdmin
from client.admin_cluster import ClusterAdmin, group_offsets, serves
from client.admin_quotas import QuotaAdmin
from client.admin_transactions import TransactionAdmin
from client.admin_users import UserAdmin
from client.assignors import decode_assignment
from client.cluster import Cluster, list_offsets_body
from client.config import admin_config
from client.errors import (
    COORDINATOR_CODES,
    METADATA_CODES,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_for,
)
from client.types import OffsetAndMetadata, OffsetAndTimestamp, TopicInfo, TopicPartition
from protocol.errors import ErrorCode, ProtocolError

_P = ParamSpec("_P")
_T = TypeVar("_T")

LIST_OFFSETS = 2
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
CONSUMER_GROUP_DESCRIBE = 69
LIST_GROUPS = 16
CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_PARTITIONS = 37
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
DELETE_GROUPS = 42
INCREMENTAL_ALTER_CONFIGS = 44

TOPIC = 2
BROKER = 4
# Metadata's topic errors that no retry will change, for ListOffsets.
_FINAL_TOPIC_ERRORS = frozenset(
    (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
    )
)
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


@dataclass
class NewTopic:
    """A topic to create; -1 leaves partitions/replication to the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str = "UNKNOWN"
    read_only: bool = False
    sensitive: bool = False

    @property
    def is_default(self) -> bool:
        return self.source in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG", "UNKNOWN")


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


class AIOAdminClient(ClusterAdmin, TransactionAdmin, UserAdmin, AclAdmin, QuotaAdmin):
    """Asyncio admin client; ``await start()`` (or ``async with``) first.

    Transactions: `list_transactions`, `describe_transactions` (`client.admin_transactions`).
    SCRAM users: `describe_user_scram_credentials`, `alter_user_scram_credentials` (`client.admin_users`).
    Client quotas: `describe_client_quotas`, `alter_client_quotas` (`client.admin_quotas`).
    ACLs: `create_acls`, `describe_acls`, `delete_acls` (`client.admin_acls`).
    Cluster: `describe_cluster`, `describe_log_dirs`, `describe_log_dirs_by_broker`,
    `list_consumer_groups_offsets` (many groups' offsets in few requests) (`client.admin_cluster`).
    Offset resets (planning, executing): `client.offset_reset`, on either client.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self.config = admin_config(config, **kwargs)
        self._timeout = self.config["default.api.timeout.ms"] / 1000
        self._backoff = self.config["retry.backoff.ms"] / 1000
        self._cluster: Cluster | None = None

    async def start(self) -> None:
        if self._cluster is None:
            self._cluster = Cluster(self.config, allow_auto_topic_creation=False)

    async def __aenter__(self) -> AIOAdminClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._cluster is not None:
            await self._cluster.close()

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            raise KafkaError("admin client not started: await start() first")
        return self._cluster

    async def check_connection(self) -> None:
        """Reach a bootstrap server once; `KafkaConnectionError` naming why if none answers."""
        await self.cluster.check_bootstrap()

    async def _retrying(self, fn: Any, timeout: float | None = None) -> Any:
        """Run ``fn()`` until it stops raising retriable errors or the API timeout passes."""
        deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        while True:
            try:
                return await fn()
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last: KafkaError = exc
            except KafkaResponseError as exc:
                if not exc.retriable and exc.code != ErrorCode.NOT_CONTROLLER:
                    raise
                last = exc
            if time.monotonic() + self._backoff >= deadline:
                raise last
            await asyncio.sleep(self._backoff)
            with contextlib.suppress(KafkaError):
                await self.cluster.refresh([])

    async def _controller(self) -> int:
        if self.cluster.controller_id < 0:
            await self.cluster.refresh([])
        if self.cluster.controller_id < 0:
            raise KafkaError("the cluster names no controller")
        return self.cluster.controller_id

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

    # -- configs ---------------------------------------------------------------------------------

    async def describe_configs(
        self, resources: Iterable[tuple[int, str]], keys: Iterable[str] | None = None
    ) -> dict[tuple[int, str], dict[str, ConfigEntry] | KafkaError]:
        """Config entries per (resource type, name): TOPIC=2 or BROKER=4.

        Every topic goes in one DescribeConfigs request to any broker; a broker's
        configs are asked of that broker.
        """
        wanted = list(dict.fromkeys(resources))
        key_list = list(keys) if keys is not None else None
        batches: dict[int | None, list[tuple[int, str]]] = collections.defaultdict(list)
        for rtype, name in wanted:
            batches[int(name) if rtype == BROKER else None].append((rtype, name))
        out: dict[tuple[int, str], dict[str, ConfigEntry] | KafkaError] = {}
        for node, batch in batches.items():
            body = {
                "resources": [
                    {"resource_type": rtype, "resource_name": name, "configuration_keys": key_list}
                    for rtype, name in batch
                ],
                "include_synonyms": False,
            }

            async def call(node: int | None = node, body: dict[str, Any] = body) -> Any:
                if node is not None:
                    return await self.cluster.send(node, DESCRIBE_CONFIGS, body)
                return await self.cluster.send_any(DESCRIBE_CONFIGS, body)

            resp = await self._retrying(call)
            for r in resp.results:
                if r.error_code:
                    out[(r.resource_type, r.resource_name)] = error_for(
                        r.error_code, r.error_message, r.resource_name
                    )
                    continue
                out[(r.resource_type, r.resource_name)] = {
                    c.name: ConfigEntry(
                        c.name,
                        c.value,
                        CONFIG_SOURCES.get(c.config_source, "UNKNOWN"),
                        c.read_only,
                        c.is_sensitive,
                    )
                    for c in r.configs
                }
        return out

    async def alter_configs(
        self,
        resource: tuple[int, str],
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Set and/or delete (back to default) configs of one resource, leaving the others as they are.

        Uses IncrementalAlterConfigs; against a broker without it, falls back
        to AlterConfigs over the current non-default values.
        """
        rtype, name = resource
        set_configs = dict(set_configs or {})
        deletes = list(delete_configs)
        node = int(name) if rtype == BROKER else None

        async def send(api_key: int, body: dict[str, Any]) -> Any:
            if node is not None:
                return await self.cluster.send(node, api_key, body)
            return await self.cluster.send_any(api_key, body)

        async def call() -> Any:
            conn = await (self.cluster.node(node) if node is not None else self.cluster.any_connection())
            if INCREMENTAL_ALTER_CONFIGS in conn.versions:
                configs = [
                    {"name": k, "config_operation": 0, "value": str(v)} for k, v in set_configs.items()
                ]
                configs += [{"name": k, "config_operation": 1, "value": None} for k in deletes]
                body = {
                    "resources": [{"resource_type": rtype, "resource_name": name, "configs": configs}],
                    "validate_only": validate_only,
                }
                return await send(INCREMENTAL_ALTER_CONFIGS, body)
            if ALTER_CONFIGS not in conn.versions:
                raise UnsupportedVersionError(
                    "the broker supports neither IncrementalAlterConfigs nor AlterConfigs"
                )
            current = (await self.describe_configs([resource]))[resource]
            if isinstance(current, KafkaError):
                raise current
            merged = {k: e.value for k, e in current.items() if not e.is_default and not e.read_only}
            merged.update(set_configs)
            for k in deletes:
                merged.pop(k, None)
            body = {
                "resources": [
                    {
                        "resource_type": rtype,
                        "resource_name": name,
                        "configs": [{"name": k, "value": v} for k, v in merged.items()],
                    }
                ],
                "validate_only": validate_only,
            }
            return await send(ALTER_CONFIGS, body)

        resp = await self._retrying(call)
        for r in resp.responses:
            if r.error_code:
                raise error_for(r.error_code, r.error_message, r.resource_name)

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
            retry: object = None
            for node, tps in by_node.items():
                body = list_offsets_body(tps, left, read_committed)
                try:
                    resp = await self.cluster.send(node, LIST_OFFSETS, body)
                except (KafkaConnectionError, KafkaTimeoutError) as exc:
                    retry = exc
                    continue
                for t in resp.topics:
                    for p in t.partitions:
                        tp = TopicPartition(t.name, p.partition_index)
                        if tp not in left:
                            continue
                        if p.error_code == 0:
                            out[tp] = OffsetAndTimestamp(p.offset, p.timestamp) if p.offset >= 0 else None
                            del left[tp]
                        elif (
                            p.error_code in METADATA_CODES
                            and p.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ):
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


class AdminClient:
    """Synchronous admin client (same methods as `AIOAdminClient`, blocking)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._core = AIOAdminClient(config, **kwargs)
        self.config = self._core.config
        self._lt = LoopThread("minikafka-admin")
        self._lt.run(self._core.start())
        self._closed = False

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._core, name)
        if not asyncio.iscoroutinefunction(method):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._lt.run(method(*args, **kwargs))

        call.__name__ = name
        call.__doc__ = method.__doc__
        return call

    def run(
        self,
        fn: Callable[Concatenate[AIOAdminClient, _P], Awaitable[_T]],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """``await fn(core, *args, **kwargs)`` on this client's I/O thread, ``core`` being its
        `AIOAdminClient`; blocks for the result (or raises what ``fn`` raised).

        How the async helpers that take an admin client run here, e.g.
        ``admin.run(plan_offset_reset, group, None, ResetStrategy.earliest())``.
        """

        async def call() -> _T:
            return await fn(self._core, *args, **kwargs)

        return self._lt.run(call())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._lt.run(self._core.close())
        finally:
            self._lt.stop()


def _new_assignments(replicas: list[list[int]] | None) -> list[dict[str, list[int]]] | None:
    return None if replicas is None else [{"broker_ids": list(r)} for r in replicas]
