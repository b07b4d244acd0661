"""One consistent-enough read of the cluster metadata in ZooKeeper, arming a watch on everything read.

`read_snapshot` runs in a worker thread (blocking kazoo calls), in three
rounds of pipelined requests (a few milliseconds however many partitions
there are: failover waits for two snapshots, the controller's and then the
new leader's). Every znode it reads gets a one-shot watch, so any later
change triggers another snapshot: the cluster applies snapshots
level-triggered, newest wins, and a partition
state is applied only if it is newer than what the broker holds (leader epoch,
then znode version).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from broker.cluster.view import BrokerNode
from broker.cluster.zk import znodes
from broker.cluster.zk.znodes import LeaderAndIsr

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class StateRecord:
    """A partition state as read: the state, its znode version (partition epoch) and last-modified zxid."""

    state: LeaderAndIsr
    version: int
    mzxid: int


@dataclass
class Snapshot:
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    broker_czxid: dict[int, int] = field(default_factory=dict)  # registration zxid = broker epoch
    controller: int = -1
    controller_epoch: int = 0
    controller_epoch_version: int = -1  # -1: /controller_epoch does not exist yet
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # topics without one are left out
    topic_versions: dict[str, int] = field(default_factory=dict)  # znode version of /brokers/topics/<t>
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    states: dict[TopicPartition, StateRecord] = field(default_factory=dict)
    deleting: list[str] = field(default_factory=list)
    # partitions being reassigned (the topic znodes' adding_replicas / removing_replicas)
    adding: dict[TopicPartition, list[int]] = field(default_factory=dict)
    removing: dict[TopicPartition, list[int]] = field(default_factory=dict)
    # /admin/reassign_partitions: {partition: target replicas} and its znode version (-1: absent)
    reassign_requests: dict[TopicPartition, list[int]] = field(default_factory=dict)
    reassign_version: int = -1
    problems: list[str] = field(default_factory=list)  # malformed znodes, skipped
    # topics whose /brokers/topics znode, or /config/topics znode, did not decode: never a reason to
    # delete or reconfigure anything (`carry_over` keeps what an earlier snapshot had)
    unreadable: set[str] = field(default_factory=set)
    unreadable_configs: set[str] = field(default_factory=set)


def _get(client: KazooClient, path: str, watch: Callable[[Any], None]) -> tuple[bytes, Any] | None:
    """Data and stat of ``path`` with a watch; None (and a watch on its creation) if it does not exist."""
    try:
        return client.get(path, watch=watch)
    except NoNodeError:
        if client.exists(path, watch=watch) is None:
            return None
        return client.get(path, watch=watch)


def _children(client: KazooClient, path: str, watch: Callable[[Any], None]) -> list[str]:
    try:
        return sorted(client.get_children(path, watch=watch))
    except NoNodeError:
        client.exists(path, watch=watch)
        return []


def _get_all(
    client: KazooClient, paths: list[str], watch: Callable[[Any], None]
) -> list[tuple[bytes, Any] | None]:
    """`_get` of every path, the requests pipelined: one round trip for all of them, not one each."""
    pending = [client.get_async(path, watch=watch) for path in paths]
    out: list[tuple[bytes, Any] | None] = []
    for path, result in zip(paths, pending, strict=True):
        try:
            out.append(result.get())
        except NoNodeError:
            out.append(_get(client, path, watch))
    return out


def carry_over(old: Snapshot, new: Snapshot) -> None:
    """Give ``new``'s unreadable topics what ``old`` knew of them (their assignment, ID, configs,
    partition states), and its unreadable topic configs ``old``'s, so a malformed znode (a tool's
    bad write) neither deletes the topic's replicas nor resets its configs; as in Kafka, brokers
    act on what they last understood until the znode is fixed."""
    for topic in new.unreadable:
        if topic not in old.assignments:
            continue
        new.assignments[topic] = old.assignments[topic]
        if topic in old.topic_ids:
            new.topic_ids[topic] = old.topic_ids[topic]
        new.topic_versions[topic] = old.topic_versions.get(topic, -1)
        new.configs.setdefault(topic, old.configs.get(topic, {}))
        for tp in [tp for tp in (*old.adding, *old.removing, *old.states) if tp[0] == topic]:
            for name in ("adding", "removing", "states"):
                value = getattr(old, name).get(tp)
                if value is not None:
                    getattr(new, name)[tp] = value
    for topic in new.unreadable_configs:
        if topic in old.configs:
            new.configs[topic] = old.configs[topic]


def read_snapshot(client: KazooClient, watch: Callable[[Any], None]) -> Snapshot:
    """Read everything in three pipelined rounds: the lists; brokers and topics; partition states."""
    snap = Snapshot()
    children = {
        path: client.get_children_async(path, watch=watch)
        for path in (znodes.BROKER_IDS, znodes.TOPICS, znodes.DELETE_TOPICS)
    }
    controller, controller_epoch, reassign = _get_all(
        client, [znodes.CONTROLLER, znodes.CONTROLLER_EPOCH, znodes.REASSIGN_PARTITIONS], watch
    )
    lists: dict[str, list[str]] = {}
    for path, result in children.items():
        try:
            lists[path] = sorted(result.get())
        except NoNodeError:
            lists[path] = _children(client, path, watch)
    if controller is not None:
        try:
            snap.controller = znodes.decode_controller(controller[0])
        except (ValueError, KeyError, TypeError) as exc:
            snap.problems.append(f"controller: {exc}")
    if controller_epoch is not None:
        try:
            snap.controller_epoch = int(controller_epoch[0] or b"0")
            snap.controller_epoch_version = controller_epoch[1].version
        except ValueError as exc:
            snap.problems.append(f"controller epoch: {exc}")

    if reassign is not None:
        snap.reassign_version = reassign[1].version
        try:
            snap.reassign_requests = znodes.decode_reassignments(reassign[0])
        except ValueError as exc:
            snap.problems.append(str(exc))

    broker_ids = [int(c) for c in lists[znodes.BROKER_IDS] if c.isdigit()]
    topics = lists[znodes.TOPICS]
    got = _get_all(
        client,
        [znodes.broker_path(b) for b in broker_ids]
        + [znodes.topic_path(t) for t in topics]
        + [znodes.topic_config_path(t) for t in topics],
        watch,
    )
    for broker_id, broker in zip(broker_ids, got[: len(broker_ids)], strict=True):
        if broker is None:
            continue
        try:
            snap.brokers[broker_id] = znodes.decode_broker(broker_id, broker[0])
            snap.broker_czxid[broker_id] = broker[1].czxid
        except ValueError as exc:
            snap.problems.append(str(exc))
    assignments = got[len(broker_ids) : len(broker_ids) + len(topics)]
    configs = got[len(broker_ids) + len(topics) :]
    for topic, assigned, config in zip(topics, assignments, configs, strict=True):
        if assigned is None:
            continue
        try:
            decoded = znodes.decode_assignment(topic, assigned[0])
        except ValueError as exc:
            snap.problems.append(str(exc))
            snap.unreadable.add(topic)
            continue
        snap.assignments[topic] = decoded.replicas
        for index, replicas in decoded.adding.items():
            snap.adding[(topic, index)] = replicas
        for index, replicas in decoded.removing.items():
            snap.removing[(topic, index)] = replicas
        snap.topic_versions[topic] = assigned[1].version
        if decoded.topic_id is not None:
            snap.topic_ids[topic] = decoded.topic_id
        try:
            snap.configs[topic] = znodes.decode_topic_config(topic, config[0]) if config else {}
        except ValueError as exc:
            snap.problems.append(str(exc))
            snap.unreadable_configs.add(topic)
            snap.configs[topic] = {}

    partitions = [(t, p) for t, assignment in snap.assignments.items() for p in assignment]
    states = _get_all(client, [znodes.state_path(t, p) for t, p in partitions], watch)
    for (topic, partition), got_state in zip(partitions, states, strict=True):
        if got_state is None:
            continue
        try:
            state = znodes.decode_state(f"{topic}-{partition} state", got_state[0])
        except ValueError as exc:
            snap.problems.append(str(exc))
            continue
        snap.states[(topic, partition)] = StateRecord(state, got_state[1].version, got_state[1].mzxid)
    snap.deleting = lists[znodes.DELETE_TOPICS]
    return snap
