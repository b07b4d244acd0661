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

This module holds the clients themselves (construction, connection, the
retrying and controller plumbing, `AdminClient.run`, close) and the public
names; the calls live in mixins, one module per API family:

- `client.admin_topics`: topics, partitions, ListOffsets, DeleteRecords (`NewTopic`);
- `client.admin_configs`: DescribeConfigs, (Incremental)AlterConfigs (`ConfigEntry`, `TOPIC`, `BROKER`,
  `BROKER_LOGGER`);
- `client.admin_groups`: consumer groups, their offsets and lag (`GroupDescription`, `PartitionLag`);
- `client.admin_cluster`: DescribeCluster, DescribeLogDirs, many groups' offsets;
- `client.admin_leaders`: ElectLeaders;
- `client.admin_reassignments`: Alter/ListPartitionReassignments;
- `client.admin_transactions`, `client.admin_users`, `client.admin_acls`,
  `client.admin_quotas`: transactions, SCRAM users, ACLs, client quotas.

`client.admin_mixin.AdminMixin` declares, for type checkers, what this client
provides to the mixins of topics, configs and groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from client._loop import LoopThread
from client.admin_acls import AclAdmin
from client.admin_cluster import ClusterAdmin
from client.admin_configs import (
    BROKER,
    BROKER_LOGGER,
    CONFIG_SOURCES,
    TOPIC,
    ConfigAdmin,
    ConfigEntry,
    ConfigSynonym,
)
from client.admin_groups import GroupAdmin, GroupDescription, MemberDescription, PartitionLag
from client.admin_leaders import LeaderAdmin
from client.admin_quotas import QuotaAdmin
from client.admin_reassignments import PartitionReassignment, ReassignmentAdmin
from client.admin_topics import NewTopic, TopicAdmin
from client.admin_transactions import TransactionAdmin
from client.admin_users import UserAdmin
from client.cluster import Cluster
from client.config import admin_config
from client.errors import KafkaConnectionError, KafkaError, KafkaResponseError, KafkaTimeoutError
from protocol.errors import ErrorCode

__all__ = [
    "BROKER",
    "BROKER_LOGGER",
    "CONFIG_SOURCES",
    "TOPIC",
    "AIOAdminClient",
    "AdminClient",
    "ConfigEntry",
    "ConfigSynonym",
    "GroupDescription",
    "MemberDescription",
    "NewTopic",
    "PartitionLag",
    "PartitionReassignment",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class AIOAdminClient(
    TopicAdmin,
    ConfigAdmin,
    GroupAdmin,
    ClusterAdmin,
    TransactionAdmin,
    UserAdmin,
    AclAdmin,
    QuotaAdmin,
    LeaderAdmin,
    ReassignmentAdmin,
):
    """Asyncio admin client; ``await start()`` (or ``async with``) first.

    Topics, partitions, offsets, records: `create_topics`, `create_partitions`, `delete_topics`,
    `list_topics`, `describe_topics`, `list_offsets`, `delete_records` (`client.admin_topics`).
    Configs: `describe_configs`, `alter_configs` (`client.admin_configs`).
    Groups: `list_groups`, `describe_groups`, `delete_groups`, `list_consumer_group_offsets`,
    `alter_consumer_group_offsets`, `consumer_group_lag` (`client.admin_groups`).
    Transactions: `list_transactions`, `describe_transactions` (`client.admin_transactions`).
    SCRAM users: `describe_user_scram_credentials`, `alter_user_scram_credentials` (`client.admin_users`).
    Client quotas: `describe_client_quotas`, `alter_client_quotas` (`client.admin_quotas`).
    ACLs: `create_acls`, `describe_acls`, `delete_acls` (`client.admin_acls`).
    Cluster: `describe_cluster`, `describe_log_dirs`, `describe_log_dirs_by_broker`,
    `list_consumer_groups_offsets` (many groups' offsets in few requests) (`client.admin_cluster`).
    Leaders: `elect_leaders` (`client.admin_leaders`).
    Reassignments: `alter_partition_reassignments`, `list_partition_reassignments`
    (`client.admin_reassignments`).
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
