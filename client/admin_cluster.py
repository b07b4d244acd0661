"""The cluster-wide read calls of the admin client: `describe_cluster`, `describe_log_dirs` and
`list_consumer_groups_offsets` (committed offsets of many groups at once).

- `describe_cluster`: DescribeCluster (API 60) to any broker; against a broker
  that does not serve it (Kafka before 2.8) the same facts come from Metadata
  (brokers, controller id from v1, cluster id from v2).
- `describe_log_dirs`: DescribeLogDirs (API 35) to every broker (or the
  given ones) concurrently; the size of each partition is the one its leader
  reports, else the largest any replica reports. A broker that fails (no
  connection, CLUSTER_AUTHORIZATION_FAILED, an old broker without the API) is
  left out; only when no broker answers does the call raise.
  `describe_log_dirs_by_broker` gives each broker's own answer, or its error.
- `list_consumer_groups_offsets`: the groups' coordinators in one
  FindCoordinator v4+ request (one per group against older brokers), then per
  coordinator one OffsetFetch v8+ request for all of its groups (one per
  group against brokers before v8). Coordinator moves and loads are retried
  within ``default.api.timeout.ms``; every other group-level error
  (GROUP_AUTHORIZATION_FAILED, ...) is that group's value.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from client.admin_mixin import AdminMixin
from client.errors import (
    COORDINATOR_CODES,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    error_for,
)
from client.types import BrokerInfo, OffsetAndMetadata, TopicPartition
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from client.connection import BrokerConnection

OFFSET_FETCH = 9
FIND_COORDINATOR = 10
DESCRIBE_LOG_DIRS = 35
DESCRIBE_CLUSTER = 60

BATCHED_FIND_COORDINATOR = 4  # FindCoordinator v4+: coordinator_keys, one answer per key
BATCHED_OFFSET_FETCH = 8  # OffsetFetch v8+: several groups per request
GROUP_KEY = 0

GroupOffsets = dict[TopicPartition, OffsetAndMetadata]


@dataclass(frozen=True)
class ClusterDescription:
    """The cluster as a broker sees it: ``controller_id`` -1 when unknown, ``brokers`` by node id."""

    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


class ClusterAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (it provides ``cluster``, ``_retrying``, ``_timeout``
    and ``_backoff``)."""

    # -- cluster -----------------------------------------------------------------------------------

    async def describe_cluster(self) -> ClusterDescription:
        """Cluster id, controller and live brokers (sorted by node id).

        DescribeCluster when the broker serves it, else (or when it answers
        UNSUPPORTED_VERSION) Metadata, which names the controller from v1 and
        the cluster id from v2. Other errors raise.
        """

        async def call() -> ClusterDescription | None:
            conn = await self.cluster.any_connection()
            if DESCRIBE_CLUSTER not in conn.versions:
                return None
            body = {"include_cluster_authorized_operations": False, "endpoint_type": 1}
            resp = await conn.send(DESCRIBE_CLUSTER, body, timeout=self.cluster.request_timeout)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                return None
            if resp.error_code:
                raise error_for(resp.error_code, resp.error_message, "DescribeCluster")
            brokers = (BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in resp.brokers)
            return ClusterDescription(
                resp.cluster_id, resp.controller_id, tuple(sorted(brokers, key=lambda b: b.node_id))
            )

        described = await self._retrying(call)
        if described is not None:
            return described
        await self._retrying(lambda: self.cluster.refresh([]))
        brokers = tuple(self.cluster.brokers[n] for n in sorted(self.cluster.brokers))
        return ClusterDescription(self.cluster.cluster_id, self.cluster.controller_id, brokers)

    # -- log dirs ----------------------------------------------------------------------------------

    async def describe_log_dirs_by_broker(
        self, brokers: Iterable[int] | None = None
    ) -> dict[int, dict[TopicPartition, int] | KafkaError]:
        """Per broker (every live one when ``brokers`` is None), the bytes of each partition replica
        it holds, or the error that broker answered with.

        Each broker is asked once, concurrently, without retries (a broker that
        is down costs at most the request timeout). Log dirs the broker reports
        an error for (KAFKA_STORAGE_ERROR) and future replicas (moves between
        dirs) are not counted.
        """
        if brokers is None:
            await self._retrying(lambda: self.cluster.refresh([]))
            nodes = sorted(self.cluster.brokers)
        else:
            nodes = sorted(set(brokers))
            if any(n not in self.cluster.brokers for n in nodes):
                with contextlib.suppress(KafkaError):  # an unknown node answers its connection error
                    await self._retrying(lambda: self.cluster.refresh([]))
        answers = await asyncio.gather(*(self._log_dirs_of(node) for node in nodes))
        return dict(zip(nodes, answers, strict=True))

    async def _log_dirs_of(self, node: int) -> dict[TopicPartition, int] | KafkaError:
        try:
            resp = await self.cluster.send(node, DESCRIBE_LOG_DIRS, {"topics": None})
        except KafkaError as exc:
            return exc
        if resp.get("error_code", 0):
            return error_for(resp.error_code, context=f"DescribeLogDirs from broker {node}")
        sizes: dict[TopicPartition, int] = {}
        for result in resp.results:
            if result.error_code:
                continue
            for t in result.topics:
                for p in t.partitions:
                    if not p.is_future_key:
                        sizes[TopicPartition(t.name, p.partition_index)] = p.partition_size
        return sizes

    async def describe_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[TopicPartition, int]:
        """Bytes on disk of each partition (one replica's size, not the sum over replicas).

        Asks every live broker (or those in ``brokers``) concurrently; a
        partition's size is the one its leader reports, else (the leader did
        not answer, or metadata names none) the largest any replica reports.
        Brokers that fail are skipped, so partitions only they hold are
        missing; raises (the first broker's error) only when no broker answered.
        """
        by_broker = await self.describe_log_dirs_by_broker(brokers)
        answered = {node: sizes for node, sizes in by_broker.items() if not isinstance(sizes, KafkaError)}
        if not answered:
            errors = [e for e in by_broker.values() if isinstance(e, KafkaError)]
            raise errors[0] if errors else KafkaError("no broker to ask for log dirs")
        reported: dict[TopicPartition, dict[int, int]] = collections.defaultdict(dict)  # tp -> {node: size}
        for node, sizes in answered.items():
            for tp, size in sizes.items():
                reported[tp][node] = size
        topics = sorted({tp.topic for tp in reported if tp.topic not in self.cluster.topics})
        if topics:
            with contextlib.suppress(KafkaError):  # no leaders known: the largest replica it is
                await self.cluster.refresh(topics)
        out: dict[TopicPartition, int] = {}
        for tp in sorted(reported):
            sizes = reported[tp]
            leader = self.cluster.leader(tp)
            out[tp] = sizes[leader] if leader in sizes else max(sizes.values())
        return out

    # -- offsets of many groups ----------------------------------------------------------------------

    async def list_consumer_groups_offsets(
        self, group_ids: Iterable[str]
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata] | KafkaError]:
        """Committed offsets of every partition each group committed, or the group's error.

        A group without commits (or unknown to the cluster) maps to an empty
        dict. Requests: one FindCoordinator (v4+; else one per group) and one
        OffsetFetch per coordinator (v8+; else one per group, pipelined).
        Coordinator errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...)
        and lost connections to a coordinator are retried until
        ``default.api.timeout.ms`` passes, after which the group's value is the
        last such error; other errors (GROUP_AUTHORIZATION_FAILED) are the
        group's value at once. Raises only when no broker answers FindCoordinator.
        """
        wanted = list(dict.fromkeys(group_ids))
        out: dict[str, GroupOffsets | KafkaError] = {}
        deadline = time.monotonic() + self._timeout
        left = wanted
        while left:
            found = await self._retrying(
                lambda left=left: self._find_group_coordinators(left),
                timeout=max(deadline - time.monotonic(), self._backoff),
            )
            by_node: dict[int, list[str]] = collections.defaultdict(list)
            retry: dict[str, KafkaError] = {}
            for gid in left:
                where = found[gid]
                if isinstance(where, KafkaError):
                    if where.retriable:
                        retry[gid] = where
                    else:
                        out[gid] = where
                else:
                    by_node[where].append(gid)
            fetched = await asyncio.gather(
                *(self._fetch_groups_offsets(node, gids) for node, gids in by_node.items())
            )
            for answers in fetched:
                for gid, value in answers.items():
                    if isinstance(value, KafkaError) and value.retriable:
                        retry[gid] = value
                    else:
                        out[gid] = value
            if retry and time.monotonic() + self._backoff >= deadline:
                out.update(retry)
                break
            left = [gid for gid in wanted if gid in retry]
            if left:
                await asyncio.sleep(self._backoff)
        return {gid: out[gid] for gid in wanted}

    async def _find_group_coordinators(self, group_ids: list[str]) -> dict[str, int | KafkaError]:
        """Coordinator node per group, or the group's error; connection failures raise (to retry)."""
        conn = await self.cluster.any_connection()
        if serves(conn, FIND_COORDINATOR, BATCHED_FIND_COORDINATOR):
            body = {"key_type": GROUP_KEY, "coordinator_keys": group_ids}
            resp = await conn.send(
                FIND_COORDINATOR, body, version=BATCHED_FIND_COORDINATOR, timeout=self.cluster.request_timeout
            )
            out: dict[str, int | KafkaError] = {}
            for c in resp.coordinators:
                if c.error_code:
                    out[c.key] = error_for(c.error_code, c.error_message, f"FindCoordinator {c.key!r}")
                else:
                    known = self.cluster.brokers.get(c.node_id)
                    if known is None or (known.host, known.port) != (c.host, c.port):
                        self.cluster.brokers[c.node_id] = BrokerInfo(c.node_id, c.host, c.port)
                    out[c.key] = c.node_id
            for gid in group_ids:
                out.setdefault(gid, KafkaError(f"FindCoordinator named no coordinator for group {gid!r}"))
            return out

        async def one(gid: str) -> int | KafkaError:
            try:
                return await self.cluster.find_coordinator(gid)
            except KafkaResponseError as exc:
                return exc

        return dict(zip(group_ids, await asyncio.gather(*(one(g) for g in group_ids)), strict=True))

    async def _fetch_groups_offsets(
        self, node: int, group_ids: list[str]
    ) -> dict[str, GroupOffsets | KafkaError]:
        """OffsetFetch of ``group_ids`` from their coordinator ``node``: one request when it serves
        v8+, else one per group. A lost connection is every group's (retriable) error."""
        timeout = self.cluster.request_timeout
        try:
            conn = await self.cluster.connection(("coordinator", node))
            if serves(conn, OFFSET_FETCH, BATCHED_OFFSET_FETCH):
                body = {
                    "groups": [{"group_id": gid, "topics": None} for gid in group_ids],
                    "require_stable": False,
                }
                resp = await conn.send(OFFSET_FETCH, body, version=BATCHED_OFFSET_FETCH, timeout=timeout)
                out: dict[str, GroupOffsets | KafkaError] = {
                    g.group_id: group_offsets(g.group_id, g.error_code, g.topics) for g in resp.groups
                }
                for gid in group_ids:
                    out.setdefault(gid, KafkaError(f"OffsetFetch returned nothing for group {gid!r}"))
                return {gid: out[gid] for gid in group_ids}
            requests = [
                conn.send(OFFSET_FETCH, {"group_id": gid, "topics": None}, timeout=timeout)
                for gid in group_ids
            ]
            answers = await asyncio.gather(*requests)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            return dict.fromkeys(group_ids, exc)
        return {
            gid: group_offsets(gid, resp.get("error_code", 0), resp.topics)
            for gid, resp in zip(group_ids, answers, strict=True)
        }


def serves(conn: BrokerConnection, api_key: int, version: int) -> bool:
    """Whether the broker behind ``conn`` serves ``version`` of ``api_key``."""
    theirs = conn.broker_versions.get(api_key)
    return theirs is not None and theirs[0] <= version <= theirs[1]


def group_offsets(group_id: str, error_code: int, topics: Iterable[Any]) -> GroupOffsets | KafkaError:
    """One group's OffsetFetch answer: its committed offsets (sorted), or its error.

    A coordinator error on a partition (OffsetFetch v1 carries them there) is the group's error.
    """
    context = f"group {group_id!r}"
    if error_code:
        return error_for(error_code, context=context)
    out: GroupOffsets = {}
    for t in topics:
        for p in t.partitions:
            if p.error_code in COORDINATOR_CODES:
                return error_for(p.error_code, context=context)
            if p.error_code == 0 and p.committed_offset >= 0:
                out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata or ""
                )
    return dict(sorted(out.items()))
