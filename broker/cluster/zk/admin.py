"""`ZkAdmin`: topic creation, deletion and config changes, and cluster-wide producer id blocks, in ZooKeeper.

The `TopicAdmin` of a cluster member. Every call validates against the
metadata snapshot the member holds (``snapshot()``), then writes ZooKeeper
directly (bounded by ``OP_TIMEOUT_S``); the controller and every broker pick
the change up through their watches:

- create: ``/config/topics/<t>`` and ``/brokers/topics/<t>`` (a new topic
  ID; Kafka's placement over the live brokers and their racks,
  `assignment.py`, unless an assignment is given) in one transaction; the
  controller then writes the partition states.
- add partitions: ``/brokers/topics/<t>`` rewritten with the new partitions
  (conditional on its version); the controller writes their states. Refused
  with REASSIGNMENT_IN_PROGRESS while one of its partitions is reassigned,
  as Kafka's ZkAdminManager.
- delete: the mark ``/admin/delete_topics/<t>``; the controller removes the
  topic's znodes, and each broker its local replicas.
- configs: ``/config/topics/<t>`` rewritten.
- producer ids: ``/latest_producer_id_block`` claimed with a conditional set,
  ``PRODUCER_ID_BLOCK_SIZE`` ids at a time, so ids are unique cluster-wide.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.cluster.assignment import added_partitions, assign_replicas
from broker.cluster.zk import znodes
from broker.cluster.zk.session import OP_TIMEOUT_S, ZkSession
from broker.cluster.zk.snapshot import Snapshot
from protocol.errors import ErrorCode, KafkaError
from storage import topic_ids
from storage.config import LogConfig
from storage.topic_registry import check_new_topic

log = logging.getLogger("minikafka.cluster")


class ZkAdmin:
    def __init__(
        self,
        session: ZkSession,
        snapshot: Callable[[], Snapshot],
        default_config: Callable[[], LogConfig],
        node_id: int,
        default_replication_factor: int,
        written: Callable[[], None],
    ) -> None:
        self.session = session
        self._snapshot = snapshot
        self._default_config = default_config  # the broker's topic defaults as they are now
        self._node_id = node_id
        self._default_rf = default_replication_factor
        self._written = written

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        replication_factor: int | None = None,
        assignment: dict[int, list[int]] | None = None,
    ) -> uuid.UUID:
        given = {k: str(v) for k, v in (configs or {}).items() if v is not None}
        if assignment is not None:
            partitions = len(assignment)
        check_new_topic(name, partitions, self._snapshot().assignments)
        try:
            LogConfig.from_topic_configs(given, self._default_config())
        except ValueError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_CONFIG) from None
        rf = self._default_rf if replication_factor is None or replication_factor < 0 else replication_factor
        racks = broker_racks(self._snapshot())
        placed = assignment or assign_replicas(partitions, rf, sorted(racks), racks=racks)
        if validate_only:
            return topic_ids.ZERO
        return self.create(name, len(placed), given, rf, placed, racks)

    def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        rf: int,
        placed: dict[int, list[int]] | None,
        racks: Mapping[int, str | None],
    ) -> uuid.UUID:
        """Write the topic's znodes (one transaction) and return its new ID; ``racks``: the live
        brokers and their racks, to place the replicas on when ``placed`` is None."""
        placed = placed or assign_replicas(partitions, rf, sorted(racks), racks=racks)
        client = self.session.client
        txn = client.transaction()
        txn.create(znodes.topic_config_path(name), znodes.encode_topic_config(dict(configs)))
        topic_id = topic_ids.new_topic_id()
        txn.create(znodes.topic_path(name), znodes.encode_assignment(placed, topic_id))
        results = txn.commit_async().get(timeout=OP_TIMEOUT_S)
        if any(isinstance(r, NodeExistsError) for r in results):
            raise KafkaError(f"topic {name!r} already exists", ErrorCode.TOPIC_ALREADY_EXISTS)
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise KafkaError(
                f"creating {name!r} in ZooKeeper failed: {failed[0]!r}", ErrorCode.UNKNOWN_SERVER_ERROR
            )
        log.info(
            "created topic %s (id %s): %d partitions, replicas %s",
            name,
            topic_ids.to_text(topic_id),
            partitions,
            placed,
        )
        self._written()
        return topic_id

    def add_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        """Rewrite ``/brokers/topics/<t>`` with the new partitions (conditional on its version)."""
        client = self.session.client
        path = znodes.topic_path(name)
        while True:
            snap = self._snapshot()
            if name not in snap.assignments or name in snap.deleting:
                raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            try:
                data, stat = client.get_async(path).get(timeout=OP_TIMEOUT_S)
            except NoNodeError:
                raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
            existing = znodes.decode_assignment(name, data)
            if existing.adding or existing.removing:
                raise KafkaError(
                    f"A partition reassignment is in progress for the topic '{name}'.",
                    ErrorCode.REASSIGNMENT_IN_PROGRESS,
                )
            racks = broker_racks(snap)
            placed = added_partitions(name, existing.replicas, count, assignment, sorted(racks), racks)
            if validate_only:
                return
            updated = znodes.encode_assignment({**existing.replicas, **placed}, existing.topic_id)
            try:
                client.set_async(path, updated, stat.version).get(timeout=OP_TIMEOUT_S)
            except BadVersionError:
                continue  # changed meanwhile: check again against what it is now
            log.info("topic %s: partitions added, replicas %s", name, placed)
            self._written()
            return

    def deleting(self, name: str) -> bool:
        snap = self._snapshot()
        return name in snap.deleting or name in snap.assignments

    def delete_topic(self, name: str) -> None:
        if name not in self._snapshot().assignments:
            raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        with contextlib.suppress(NodeExistsError):
            self.session.client.create_async(znodes.delete_topic_path(name), b"").get(timeout=OP_TIMEOUT_S)
        self._written()

    def alter_topic_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        if name not in self._snapshot().assignments:
            raise KafkaError(f"unknown topic {name!r}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            LogConfig.from_topic_configs(overrides, self._default_config())
        except ValueError as exc:
            raise KafkaError(str(exc), ErrorCode.INVALID_CONFIG) from None
        if validate_only:
            return
        path = znodes.topic_config_path(name)
        data = znodes.encode_topic_config(dict(overrides))
        try:
            self.session.client.set_async(path, data).get(timeout=OP_TIMEOUT_S)
        except NoNodeError:
            self.session.client.create_async(path, data).get(timeout=OP_TIMEOUT_S)
        self._written()

    # -- producer ids ------------------------------------------------------------------------------
    def allocate_producer_id_block(self) -> int:
        """Claim the next block of ``PRODUCER_ID_BLOCK_SIZE`` ids cluster-wide; returns its first id."""
        client = self.session.client
        while True:
            try:
                data, stat = client.get_async(znodes.PRODUCER_ID_BLOCK).get(timeout=OP_TIMEOUT_S)
            except NoNodeError:
                with contextlib.suppress(NodeExistsError):
                    client.create_async(znodes.PRODUCER_ID_BLOCK, b"").get(timeout=OP_TIMEOUT_S)
                continue
            start = znodes.decode_producer_id_block_end(data) + 1
            try:
                client.set_async(
                    znodes.PRODUCER_ID_BLOCK,
                    znodes.encode_producer_id_block(self._node_id, start),
                    stat.version,
                ).get(timeout=OP_TIMEOUT_S)
            except BadVersionError:
                continue
            return start


def broker_racks(snap: Snapshot) -> dict[int, str | None]:
    """{live broker: its rack (None: it has none)}, what Kafka's placement works from."""
    return {node_id: node.rack for node_id, node in snap.brokers.items()}


def ensure_cluster_id(session: ZkSession, proposed: str) -> str:
    """The cluster id stored in ZooKeeper, written first (``proposed``) if there is none. Blocking."""
    client = session.client
    for path in znodes.PERSISTENT_PATHS:
        client.ensure_path(path)
    with contextlib.suppress(NodeExistsError):
        client.create(znodes.CLUSTER_ID, znodes.encode_cluster_id(proposed))
    data: Any = client.get(znodes.CLUSTER_ID)[0]
    return znodes.decode_cluster_id(data)
