"""One consistent-enough read of the cluster metadata in ZooKeeper, arming a watch on everything read.

`read_snapshot` runs in a worker thread (blocking kazoo calls). Every znode it
reads gets a one-shot watch, so any later change triggers another snapshot:
the cluster applies snapshots level-triggered, newest wins, and a partition
state is applied only if it is newer than what the broker holds (leader epoch,
then znode version).
"""

from __future__ import annotations

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
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    states: dict[TopicPartition, StateRecord] = field(default_factory=dict)
    deleting: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # malformed znodes, skipped


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


def read_snapshot(client: KazooClient, watch: Callable[[Any], None]) -> Snapshot:
    snap = Snapshot()
    for child in _children(client, znodes.BROKER_IDS, watch):
        if not child.isdigit():
            continue
        got = _get(client, znodes.broker_path(int(child)), watch)
        if got is None:
            continue
        try:
            snap.brokers[int(child)] = znodes.decode_broker(int(child), got[0])
            snap.broker_czxid[int(child)] = got[1].czxid
        except ValueError as exc:
            snap.problems.append(str(exc))
    got = _get(client, znodes.CONTROLLER, watch)
    if got is not None:
        try:
            snap.controller = znodes.decode_controller(got[0])
        except (ValueError, KeyError, TypeError) as exc:
            snap.problems.append(f"controller: {exc}")
    got = _get(client, znodes.CONTROLLER_EPOCH, watch)
    if got is not None:
        try:
            snap.controller_epoch, snap.controller_epoch_version = int(got[0] or b"0"), got[1].version
        except ValueError as exc:
            snap.problems.append(f"controller epoch: {exc}")
    for topic in _children(client, znodes.TOPICS, watch):
        got = _get(client, znodes.topic_path(topic), watch)
        if got is None:
            continue
        try:
            assignment = znodes.decode_assignment(topic, got[0])
        except ValueError as exc:
            snap.problems.append(str(exc))
            continue
        snap.assignments[topic] = assignment
        config = _get(client, znodes.topic_config_path(topic), watch)
        try:
            snap.configs[topic] = znodes.decode_topic_config(topic, config[0]) if config else {}
        except ValueError as exc:
            snap.problems.append(str(exc))
            snap.configs[topic] = {}
        for partition in assignment:
            got = _get(client, znodes.state_path(topic, partition), watch)
            if got is None:
                continue
            try:
                state = znodes.decode_state(f"{topic}-{partition} state", got[0])
            except ValueError as exc:
                snap.problems.append(str(exc))
                continue
            snap.states[(topic, partition)] = StateRecord(state, got[1].version, got[1].mzxid)
    snap.deleting = _children(client, znodes.DELETE_TOPICS, watch)
    return snap
