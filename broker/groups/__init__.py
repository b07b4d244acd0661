"""Consumer groups: the coordinator state machine, its `__consumer_offsets` persistence, and glue.

Modules: `model` (groups, members, states, results), `coordinator` (the classic
state machine), `offsets` (commits, fetches, expiry), `offsets_log` (the
coordinator's settings and storage interface), `records` (Kafka's key/value
formats), `hashing` (group -> partition), `clock` (real and fake time), `store`
(the topic on the broker's storage), `store_errors` (how failed writes are answered).
KIP-848 groups: `consumer_protocol` (ConsumerGroupHeartbeat and -Describe),
`consumer_model` (members, epochs, assignments), `assignors` (uniform, range),
`reconciliation` (moving a member towards its target), `consumer_records` and
`consumer_replay` (their records, written and replayed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from broker.groups.clock import LoopClock
from broker.groups.consumer_protocol import ConsumerSettings
from broker.groups.coordinator import CoordinatorConfig, GroupCoordinator
from broker.groups.store import BrokerOffsetsLog, ensure_offsets_topic

if TYPE_CHECKING:
    from broker.cluster import TopicAdmin
    from broker.config import BrokerConfig
    from broker.group_commit import GroupCommit
    from broker.replica import ReplicaManager

T = TypeVar("T")
Response = dict[str, Any]


def coordinator_config(config: BrokerConfig) -> CoordinatorConfig:
    return CoordinatorConfig(
        initial_rebalance_delay_ms=int(config["group.initial.rebalance.delay.ms"]),
        min_session_timeout_ms=int(config["group.min.session.timeout.ms"]),
        max_session_timeout_ms=int(config["group.max.session.timeout.ms"]),
        max_group_size=int(config["group.max.size"]),
        offset_metadata_max_bytes=int(config["offset.metadata.max.bytes"]),
        offsets_retention_ms=int(config["offsets.retention.minutes"]) * 60_000,
        offsets_retention_check_interval_ms=int(config["offsets.retention.check.interval.ms"]),
    )


def consumer_settings(config: BrokerConfig) -> ConsumerSettings:
    return ConsumerSettings(
        session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
        heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
        assignors=tuple(str(config["group.consumer.assignors"]).split(",")),
        max_size=int(config["group.consumer.max.size"]),
        migration_policy=str(config["group.consumer.migration.policy"]),
        classic_max_size=int(config["group.max.size"]),
    )


def create_coordinator(
    config: BrokerConfig,
    replicas: ReplicaManager,
    topics: TopicAdmin,
    group_commit: GroupCommit,
    *,
    local: bool,
) -> GroupCoordinator:
    """The running group coordinator.

    ``local`` (one broker): create `__consumer_offsets` if needed and replay all
    of it now, at broker start, before the server accepts connections. In a
    cluster the coordinator starts with no partition and loads each one when
    this broker becomes its leader (`GroupCoordinator.elect`).
    """
    if local:
        partitions = ensure_offsets_topic(config, replicas, topics)
    else:
        partitions = int(config["offsets.topic.num.partitions"])
    coordinator = GroupCoordinator(
        coordinator_config(config),
        BrokerOffsetsLog(
            replicas, group_commit, partitions, timeout_s=int(config["offsets.commit.timeout.ms"]) / 1000
        ),
        LoopClock(),
        consumer_settings(config),
    )
    if local:
        coordinator.load()
    else:
        coordinator.start_unowned()
    return coordinator


def deferred(start: Callable[[Callable[[T], None]], None], respond: Callable[[T], Response]) -> Any:
    """Bridge a coordinator callback to a handler result.

    Calls ``start(callback)``; if the coordinator answered at once, returns
    ``respond(result)`` (a plain response dict), else an awaitable that
    resolves to it when the callback fires. A callback arriving after the
    connection went away (its future cancelled) is dropped.
    """
    fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()

    def callback(result: T) -> None:
        if not fut.done():
            fut.set_result(result)

    start(callback)
    if fut.done():
        return respond(fut.result())
    return _respond_later(fut, respond)


async def _respond_later(fut: Awaitable[T], respond: Callable[[T], Response]) -> Response:
    return respond(await fut)
