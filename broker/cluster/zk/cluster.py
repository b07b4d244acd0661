"""`ZkCluster`: this broker as a member of a cluster coordinated through ZooKeeper.

What it does, all on the event loop (ZooKeeper calls in worker threads):

- Registers ``/brokers/ids/<id>`` (ephemeral) once any registration left by a
  previous process of the same id has expired, and again after a lost session.
- Keeps a snapshot of the metadata (`snapshot.read_snapshot`), re-read whenever
  a watch fires and every ``REFRESH_S`` seconds, and answers the
  `ClusterView` from it.
- Applies partition states to the local replicas: a state naming this broker
  as leader makes it lead that epoch, but only if the state was written after
  this broker's current registration (its zxid is newer), so a restarted
  broker waits for the controller to re-elect it; any other leader makes it
  a follower that truncates (leader epochs) and fetches. The groups of a
  `__consumer_offsets` partition are loaded when it starts leading it and
  dropped when it stops.
- Topic IDs: local replicas of a topic whose ID differs from the one in
  ZooKeeper belong to a deleted topic of the same name (deleted and created
  again while this broker was away) and are deleted; a local topic without an
  ID (registered before topic IDs) takes ZooKeeper's.
- As partition leader: writes ISR changes to the state znode conditionally on
  its version (they count only once written) and shrinks the ISR of followers
  lagging ``replica.lag.time.max.ms``.
- Campaigns for ``/controller`` when nobody holds it; as controller it bumps
  ``/controller_epoch`` and writes the decisions of `controller.py`, each
  write in a transaction that checks the controller epoch's version, gives
  an ID to any topic without one (written by a Kafka before 2.8), runs
  topic deletions and creates ``__consumer_offsets`` once enough brokers live
  (placed rack-aware like any topic; not while only some brokers have a rack,
  which Kafka cannot place either).
  It also runs the leader elections asked for (`elect_leaders`, through
  `election_queue.ElectionQueue`) and, with ``auto.leader.rebalance.enable``,
  checks the leader imbalance 5 s after taking over and then every
  ``leader.imbalance.check.interval.seconds`` (`elections.py`).
- ``admin`` (`admin.ZkAdmin`) is its `TopicAdmin`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Mapping

from kazoo.client import TransactionRequest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from broker.cluster.assignment import FullAssignment, MixedRacks
from broker.cluster.view import BrokerNode, PartitionState, TopicState
from broker.cluster.zk import znodes
from broker.cluster.zk.admin import ZkAdmin, broker_racks
from broker.cluster.zk.controller import plan_state_writes
from broker.cluster.zk.election_queue import Answer, ElectionQueue
from broker.cluster.zk.elections import FIRST_CHECK_S, PREFERRED, LeaderBalance, elect, imbalanced_partitions
from broker.cluster.zk.reassigner import Reassigner, topic_znode
from broker.cluster.zk.session import ZkSession
from broker.cluster.zk.snapshot import Snapshot, TopicPartition, carry_over, read_snapshot
from broker.replica import Partition, ReplicaManager
from broker.replica.fetcher import FetcherManager
from protocol.errors import ErrorCode, KafkaError
from storage import topic_ids
from storage.errors import KafkaStorageError

log = logging.getLogger("minikafka.cluster")

REFRESH_S = 2.0
OFFSETS_TOPIC = "__consumer_offsets"


def _now_ms() -> int:
    return int(time.time() * 1000)


class ZkCluster:
    def __init__(
        self,
        session: ZkSession,
        replicas: ReplicaManager,
        node: BrokerNode,
        cluster_id: str,
        *,
        default_replication_factor: int,
        offsets_partitions: int,
        offsets_replication_factor: int,
        offsets_configs: dict[str, str],
        replica_lag_ms: int,
        balance: LeaderBalance,
        inter_broker_listener: str,
    ) -> None:
        self.session = session
        self.replicas = replicas
        self.logs = replicas.logs
        self.node = node
        self._cluster_id = cluster_id
        self._offsets = (offsets_partitions, offsets_replication_factor, offsets_configs)
        self._lag_ms = replica_lag_ms
        self._balance = balance
        self._elections = ElectionQueue()
        self._imbalance_due = False  # the controller checks the leader imbalance on its next snapshot
        self._imbalance_timer: asyncio.TimerHandle | None = None
        self._offsets_problem = ""  # why __consumer_offsets cannot be placed, once logged
        self._listener = inter_broker_listener  # the one followers fetch from leaders on
        self.topic_deleted: list[Callable[[str], None]] = []
        self.leadership_changed: list[Callable[[str, int, bool], None]] = []  # (topic, partition, now leads)
        self._snap = Snapshot()
        self._view: dict[str, TopicState] | None = None
        self._names: dict[int, str] | None = None  # by UUID.int: UUID's own hash is Python code
        self._dirty = asyncio.Event()
        self._reads_started = self._reads_done = 0  # snapshot reads begun, and the last one taken in
        self._read_done = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._registered_session = -1
        self._synced_session = -1
        self._controller_epoch = -1
        self._controller_epoch_version = -1
        self.admin = ZkAdmin(
            session,
            lambda: self._snap,
            lambda: self.logs.default_config,
            node.node_id,
            default_replication_factor,
            self._dirty.set,
        )
        self.fetchers = FetcherManager(replicas, self._address)
        self.reassigner = Reassigner(session, self._fenced_transaction, self._commit)
        replicas.isr_requests = self._request_isr
        replicas.isr_eligible = self._registered
        replicas.in_cluster = self._in_cluster

    # -- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Register this broker, read the metadata once, and keep following it."""
        await self._register()
        await self._refresh_once()
        self._tasks = [
            asyncio.ensure_future(self._refresh_loop()),
            asyncio.ensure_future(self._isr_loop()),
        ]

    async def hand_over(self, timeout_s: float) -> None:
        """Clean shutdown: leave the cluster first so the controller moves our leaderships away.

        Deleting our registration is what a dead broker looks like to the
        controller, without waiting for the session timeout: it elects new
        leaders from the ISRs at once. We keep serving (as a follower, for
        anything still in flight) until we lead nothing or ``timeout_s`` passes.
        """
        try:
            await self.session.run(self.session.client.delete, znodes.broker_path(self.node.node_id))
        except Exception as exc:  # ZooKeeper unreachable: the session timeout will do it
            log.warning("could not leave the cluster before shutting down: %r", exc)
            return
        self._registered_session = -2  # never re-register from here on
        self._dirty.set()
        deadline = asyncio.get_running_loop().time() + timeout_s
        while asyncio.get_running_loop().time() < deadline:
            led = [p for p in self.replicas.partitions() if p.is_leader]
            if not led:
                log.info("moved every leadership away; shutting down")
                return
            await asyncio.sleep(0.1)
        log.warning("still leading %d partitions after %.0f s; shutting down anyway", len(led), timeout_s)

    async def stop(self) -> None:
        self._stopping = True
        self._dirty.set()
        if self._imbalance_timer is not None:
            self._imbalance_timer.cancel()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.fetchers.close()
        await asyncio.to_thread(self.session.close)

    def on_change(self) -> None:
        self._dirty.set()

    def on_state(self, state: str) -> None:
        log.info("ZooKeeper session %s", state)
        if state == "lost" and self._registered_session != -2:
            self._registered_session = -1
            self._controller_epoch = -1
        self._dirty.set()

    # -- registration and election ----------------------------------------------------------------
    async def _register(self) -> None:
        """Create our ephemeral registration, waiting out one left by an earlier process of this id."""
        path = znodes.broker_path(self.node.node_id)
        data = znodes.encode_broker(self.node)
        client = self.session.client
        waited = False
        while not self._stopping:
            try:
                await self.session.run(client.create, path, data, None, True, False, True)
                self._registered_session = self.session.session_id
                log.info("registered as broker %d in ZooKeeper", self.node.node_id)
                return
            except NodeExistsError:
                stat = await self.session.run(client.exists, path)
                if stat is not None and stat.ephemeralOwner == self.session.session_id:
                    self._registered_session = self.session.session_id
                    return
                if not waited:
                    log.warning("%s is still held by an earlier session; waiting for it to expire", path)
                    waited = True
                await asyncio.sleep(0.5)

    async def _campaign(self) -> None:
        client = self.session.client
        try:
            await self.session.run(
                client.create, znodes.CONTROLLER, znodes.encode_controller(self.node.node_id), None, True
            )
        except NodeExistsError:
            return
        # We hold /controller: bump the controller epoch, which fences writes of any earlier controller.
        while True:
            try:
                data, stat = await self.session.run(client.get, znodes.CONTROLLER_EPOCH)
                epoch = int(data or b"0") + 1
                stat = await self.session.run(
                    client.set, znodes.CONTROLLER_EPOCH, str(epoch).encode(), stat.version
                )
                break
            except NoNodeError:
                try:
                    await self.session.run(client.create, znodes.CONTROLLER_EPOCH, b"1")
                    epoch = 1
                    stat = (await self.session.run(client.get, znodes.CONTROLLER_EPOCH))[1]
                    break
                except NodeExistsError:
                    continue
            except BadVersionError:
                continue
        self._controller_epoch, self._controller_epoch_version = epoch, stat.version
        log.info("broker %d is the controller (epoch %d)", self.node.node_id, epoch)
        if self._balance.auto_rebalance:
            self._schedule_imbalance_check(FIRST_CHECK_S)

    # -- following the metadata ---------------------------------------------------------------------
    async def _refresh_loop(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(REFRESH_S):
                    await self._dirty.wait()
            self._dirty.clear()
            if self._stopping:
                return
            try:
                await self._refresh_once()
            except Exception as exc:  # ZooKeeper unreachable, a write raced: try again shortly
                log.debug("metadata refresh failed: %r", exc)
                await asyncio.sleep(0.2)
                self._dirty.set()

    async def _refresh_once(self) -> None:
        if self._registered_session not in (self.session.session_id, -2) and self.session.connected:
            await self._register()
        if self._synced_session != self.session.session_id:
            # a new session may be served by an ensemble member behind the others: catch it up before
            # reading, so no decision (deleting a replica a reassignment removed) rests on old data
            await self.session.run(self.session.client.sync, "/")
            self._synced_session = self.session.session_id
        self._reads_started += 1
        started = self._reads_started
        snap = await self.session.run(read_snapshot, self.session.client, self.session.watch)
        self._reads_done = started
        self._read_done.set()
        for problem in snap.problems:
            log.warning("ZooKeeper metadata: %s", problem)
        carry_over(self._snap, snap)
        self._snap = snap
        self._view = self._names = None
        if (
            snap.controller == self.node.node_id
            and self._controller_epoch_version == snap.controller_epoch_version
        ):
            if await self._act_as_controller(snap):
                return  # wrote something: the watches bring the next snapshot
        elif snap.controller == -1:
            await self._campaign()
            self._dirty.set()
        else:
            self._controller_epoch = -1
            self._imbalance_due = False
            self._elections.fail_all(ErrorCode.NOT_CONTROLLER, "this broker is no longer the controller")
            self.reassigner.queue.fail_all(
                ErrorCode.NOT_CONTROLLER, "this broker is no longer the controller"
            )
        self._apply(snap)

    def _apply(self, snap: Snapshot) -> None:
        """Make the local replicas match the snapshot: host, lead, follow, forget."""
        me = self.node.node_id
        my_czxid = snap.broker_czxid.get(me, -1)
        followed: list[Partition] = []
        now = _now_ms()
        self._drop_stale(snap)
        for topic, assignment in snap.assignments.items():
            if topic in snap.deleting:
                continue
            topic_id = snap.topic_ids.get(topic)
            if topic_id is None:
                continue  # written by a Kafka without topic IDs: the controller is adding one
            for index, replicas in assignment.items():
                if me not in replicas:
                    if self.replicas.get((topic, index)) is not None:
                        self._unhost(topic, index)
                    continue
                part = self._local(topic, topic_id, index, len(assignment), snap.configs.get(topic, {}))
                if part is None:
                    continue
                record = snap.states.get((topic, index))
                if record is None:
                    continue
                state = record.state
                if state.leader == me:
                    if part.is_leader and part.leader_epoch == state.leader_epoch:
                        part.replicas = list(replicas)  # a reassignment adds and removes replicas
                        if record.version > part.partition_epoch:
                            self.replicas.isr_changed(part, list(state.isr), record.version)
                    elif state.leader_epoch >= part.leader_epoch and record.mzxid > my_czxid >= 0:
                        try:
                            part.become_leader(
                                state.leader_epoch, replicas, list(state.isr), now, record.version
                            )
                            self.replicas.advance_high_watermark(part)  # moves only with an ISR of one
                        except KafkaStorageError as exc:
                            log.error("%s-%d: cannot lead: %s", topic, index, exc)
                            continue
                        log.info(
                            "leading %s-%d from epoch %d, ISR %s",
                            topic,
                            index,
                            state.leader_epoch,
                            list(state.isr),
                        )
                        self._leadership(topic, index, True)
                    continue
                if state.leader_epoch > part.leader_epoch or part.is_leader or part.leader_id != state.leader:
                    was_leader = part.is_leader
                    part.become_follower(
                        state.leader, state.leader_epoch, replicas, list(state.isr), record.version
                    )
                    if was_leader:
                        self._leadership(topic, index, False)
                else:
                    part.isr, part.partition_epoch = list(state.isr), record.version
                    part.replicas = list(replicas)
                if state.leader >= 0:
                    followed.append(part)
        self.fetchers.follow(followed)
        for topic in [t for t in self.logs.topics() if t not in snap.assignments or t in snap.deleting]:
            if topic not in snap.unreadable:  # a malformed znode is not a deletion
                self._delete_local(topic)

    def _drop_stale(self, snap: Snapshot) -> None:
        """Delete local replicas whose topic ID is not ZooKeeper's for that name: they belong to a
        deleted topic (deleted and created again while this broker was away)."""
        for topic, info in self.logs.topics().items():
            current = snap.topic_ids.get(topic)
            if current is not None and info.topic_id not in (topic_ids.ZERO, current):
                log.warning(
                    "local replicas of %s have topic id %s, the cluster's is %s: they belong to a deleted topic",
                    topic,
                    topic_ids.to_text(info.topic_id),
                    topic_ids.to_text(current),
                )
                self._delete_local(topic)

    def _local(
        self, topic: str, topic_id: uuid.UUID, index: int, count: int, configs: dict[str, str]
    ) -> Partition | None:
        """The local replica of a partition assigned to us, created (empty) if missing.

        A local topic with no ID (registered before topic IDs) takes this one;
        one with another ID was deleted first (`_drop_stale`).
        """
        info = self.logs.topics().get(topic)
        part = self.replicas.get((topic, index))
        try:
            if info is None:
                self.logs.create_topic(topic, count, configs, hosted=(index,), topic_id=topic_id)
                info = self.logs.topics()[topic]
            elif info.topic_id == topic_ids.ZERO:
                self.logs.set_topic_id(topic, topic_id)
            if info.partitions < count:  # CreatePartitions: the registry learns the new count first
                self.logs.add_partitions(topic, count)
            if index not in info.local_partitions:
                self.logs.host_partition(topic, index)
            elif info.configs != configs:
                self.logs.alter_topic_configs(topic, configs)
        except (KafkaError, ValueError) as exc:
            log.error("cannot host %s-%d: %s", topic, index, exc)
            return None
        if part is None:
            part = self.replicas.host(topic, [index])[0]
        return part

    def _unhost(self, topic: str, index: int) -> None:
        """Stop serving a partition no longer assigned to us (a reassignment moved it) and delete our
        replica, as Kafka's StopReplica with delete: a leader first stops leading, failing what waits
        on it."""
        part = self.replicas.get((topic, index))
        if part is not None and part.is_leader:
            part.become_follower(-1, part.leader_epoch, part.replicas, part.isr, part.partition_epoch)
            self._leadership(topic, index, False)
        log.info("%s-%d is no longer assigned to this broker: deleting its replica", topic, index)
        self.replicas.drop_partition((topic, index))
        with contextlib.suppress(KafkaError):
            self.logs.unhost_partition(topic, index)

    def _delete_local(self, topic: str) -> None:
        log.info("deleting the local replicas of %s", topic)
        self.replicas.drop_topic(topic)
        with contextlib.suppress(KafkaError):
            self.logs.delete_topic(topic)
        for callback in self.topic_deleted:
            callback(topic)

    def _leadership(self, topic: str, index: int, leads: bool) -> None:
        for callback in self.leadership_changed:
            callback(topic, index, leads)

    def _in_cluster(self, topic: str, index: int) -> bool:
        assignment = self._snap.assignments.get(topic)
        return assignment is not None and index in assignment and topic not in self._snap.deleting

    def _registered(self, node_id: int) -> bool:
        """Whether ``node_id`` is registered (alive): only such a follower may join an ISR."""
        return node_id in self._snap.brokers

    def _address(self, node_id: int) -> tuple[str, int] | None:
        broker = self._snap.brokers.get(node_id)
        return broker.address(self._listener) if broker is not None else None

    # -- controller -------------------------------------------------------------------------------
    async def _act_as_controller(self, snap: Snapshot) -> bool:
        """Write what the controller decided; True if anything was written."""
        client = self.session.client
        wrote = False
        for topic in snap.deleting:
            for path in (
                znodes.topic_path(topic),
                znodes.topic_config_path(topic),
                znodes.delete_topic_path(topic),
            ):
                with contextlib.suppress(NoNodeError):
                    await self.session.run(client.delete, path, -1, True)
            log.info("controller: deleted topic %s", topic)
            wrote = True
        for topic, version in snap.topic_versions.items():
            if topic in snap.topic_ids or topic in snap.deleting:
                continue
            topic_id = topic_ids.new_topic_id()
            txn = self._fenced_transaction()
            txn.set_data(znodes.topic_path(topic), topic_znode(snap, topic, {}, topic_id), version)
            if await self._commit(txn):
                log.info("controller: topic %s has no id; gave it %s", topic, topic_ids.to_text(topic_id))
            wrote = True
        n, rf, configs = self._offsets
        if OFFSETS_TOPIC not in snap.assignments and len(snap.brokers) >= rf:
            try:
                self.admin.create(OFFSETS_TOPIC, n, configs, rf, None, broker_racks(snap))
                wrote = True
            except MixedRacks as exc:  # Kafka cannot place it either; said once, tried on each change
                if str(exc) != self._offsets_problem:
                    log.error("controller: cannot create %s: %s", OFFSETS_TOPIC, exc)
                    self._offsets_problem = str(exc)
            except KafkaError:
                pass
        writes = plan_state_writes(snap, self._controller_epoch, unclean=self._unclean)
        written = {w.tp for w in writes}
        if self._imbalance_due:
            self._imbalance_due = False
            moves = [
                tp
                for tp in imbalanced_partitions(snap, self._balance.imbalance_percentage)
                if tp not in written
            ]
            if moves:
                log.info(
                    "controller: leader imbalance: moving %d partitions to their preferred leaders",
                    len(moves),
                )
            for tp in moves:
                outcome = elect(snap, tp, PREFERRED, self._controller_epoch)
                if outcome.write is not None:
                    writes.append(outcome.write)
                    written.add(tp)
        writes += self._elections.plan(snap, self._controller_epoch, written)
        wrote |= await self.reassigner.act(snap, self._controller_epoch, written)
        for w in writes:
            topic, index = w.tp
            txn = self._fenced_transaction()
            data = znodes.encode_state(w.state)
            if w.expected_version < 0:
                await self.session.run(client.ensure_path, znodes.partition_path(topic, index))
                txn.create(znodes.state_path(topic, index), data)
            else:
                txn.set_data(znodes.state_path(topic, index), data, w.expected_version)
            if not await self._commit(txn):
                log.debug("controller write for %s-%d lost a race", topic, index)
            else:
                self._elections.landed(w.tp)
                log.info(
                    "controller: %s-%d leader %d epoch %d ISR %s",
                    topic,
                    index,
                    w.state.leader,
                    w.state.leader_epoch,
                    list(w.state.isr),
                )
            wrote = True
        return wrote

    def set_unclean_default(self, enabled: bool) -> None:
        """A new broker-level ``unclean.leader.election.enable`` (a dynamic broker config): turned on,
        the controller looks at once for partitions it can now elect a leader for, as Kafka's
        enableDefaultUncleanLeaderElection."""
        if enabled == self._balance.unclean:
            return
        self._balance = dataclasses.replace(self._balance, unclean=enabled)
        if enabled:
            self._dirty.set()

    def _unclean(self, topic: str) -> bool:
        """Whether ``topic`` allows unclean leader election (its config, else the broker's)."""
        value = self._snap.configs.get(topic, {}).get("unclean.leader.election.enable")
        return self._balance.unclean if value is None else value.strip().lower() == "true"

    def _schedule_imbalance_check(self, delay_s: float) -> None:
        if self._imbalance_timer is not None:
            self._imbalance_timer.cancel()
        self._imbalance_timer = asyncio.get_running_loop().call_later(delay_s, self._imbalance_check_due)

    def _imbalance_check_due(self) -> None:
        if self._stopping:
            return
        self._imbalance_due = self._controller_epoch != -1
        self._dirty.set()
        self._schedule_imbalance_check(self._balance.check_interval_s)

    async def elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None, timeout_s: float
    ) -> dict[TopicPartition, Answer]:
        """Elect the leaders of ``partitions`` (None: all) as ElectLeaders asks; only the controller does.

        Answers per partition as `elections.elect` and `election_queue.ElectionQueue` describe;
        NOT_CONTROLLER for every one when this broker is not the controller.
        """
        snap = self._snap
        if partitions is None:
            partitions = sorted(
                tp for tp in snap.states if tp[0] in snap.assignments and tp[0] not in snap.deleting
            )
        if not self.is_controller:
            return {tp: (ErrorCode.NOT_CONTROLLER, "this broker is not the controller") for tp in partitions}
        request = self._elections.add(election_type, partitions)
        self._dirty.set()
        return await self._elections.wait(request, timeout_s)

    async def alter_partition_reassignments(
        self, targets: dict[TopicPartition, list[int] | None], allow_rf_change: bool, timeout_s: float
    ) -> dict[TopicPartition, Answer] | None:
        """Start (a list of replicas) or cancel (None) reassignments; only the controller does
        (`reassignment.py` has the rules); None on another broker (NOT_CONTROLLER)."""
        if not self.is_controller:
            return None
        request = self.reassigner.queue.add(targets, allow_rf_change)
        self._dirty.set()
        answers = await self.reassigner.queue.wait(request, timeout_s)
        # as Kafka's controller, whose memory has them at once: a ListPartitionReassignments that
        # follows the answer lists them
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._fresh_snapshot()
        return answers

    async def _fresh_snapshot(self) -> None:
        """Wait until a snapshot read after this call has been taken in."""
        wanted = self._reads_started + 1
        self._dirty.set()
        while self._reads_done < wanted:
            self._read_done.clear()
            await self._read_done.wait()

    def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, FullAssignment] | None:
        """The reassignments in progress (of ``partitions``; None: all); None if not the controller."""
        if not self.is_controller:
            return None
        return self.reassigner.ongoing(self._snap, partitions)

    @property
    def is_controller(self) -> bool:
        return self._snap.controller == self.node.node_id and self._controller_epoch != -1

    def _fenced_transaction(self) -> TransactionRequest:
        """A transaction that applies only while our controller epoch is the current one."""
        txn = self.session.client.transaction()
        txn.check(znodes.CONTROLLER_EPOCH, self._controller_epoch_version)
        return txn

    async def _commit(self, txn: TransactionRequest) -> bool:
        """Commit; False if any operation failed (a race lost, or a newer controller)."""
        results = await self.session.run(txn.commit)
        return not any(isinstance(r, Exception) for r in results)

    # -- ISR changes, as partition leader ---------------------------------------------------------
    def _request_isr(self, part: Partition, isr: list[int]) -> None:
        # The state the change is made against, taken now: by the time the task runs a new epoch
        # may have been applied, and the write must then fail on the version, not land on it.
        asyncio.ensure_future(
            self._write_isr(part, isr, part.partition_epoch, part.lead_term, part.leader_epoch)
        )

    async def _write_isr(self, part: Partition, isr: list[int], expected: int, term: int, epoch: int) -> None:
        """Write ``isr`` to the state znode if its version is still ``expected`` (taken at the request).

        A definite failure (a newer version: someone else wrote) drops the
        pending change and re-reads. A failure of unknown outcome (ZooKeeper
        unreachable, the call timed out: the write may have landed) keeps the
        change pending, so the HW keeps counting the maximal ISR, until a read
        of the znode tells whether it landed (`_settle_isr`).
        """
        record = self._snap.states.get(part.tp)
        controller_epoch = record.state.controller_epoch if record is not None else 0
        state = znodes.LeaderAndIsr(self.node.node_id, epoch, tuple(isr), controller_epoch)
        path = znodes.state_path(part.topic, part.index)
        pending = part.pending_isr  # this change, as long as it is the one pending (`is`)
        try:
            stat = await self.session.run(self.session.client.set, path, znodes.encode_state(state), expected)
        except (BadVersionError, NoNodeError) as exc:
            log.info("%s-%d: ISR change to %s lost a race (%r); re-reading", part.topic, part.index, isr, exc)
            if _still_pending(part, pending, term, epoch):
                self.replicas.isr_write_failed(part)
            self._dirty.set()
            return
        except Exception as exc:
            log.warning(
                "%s-%d: ISR change to %s has an unknown outcome (%r); reading it back",
                part.topic,
                part.index,
                isr,
                exc,
            )
            await self._settle_isr(part, pending, expected, term, epoch)
            return
        log.info("%s-%d: ISR %s -> %s", part.topic, part.index, part.isr, isr)
        if _still_pending(part, pending, term, epoch):
            self.replicas.isr_changed(part, isr, stat.version)

    async def _settle_isr(
        self, part: Partition, pending: list[int] | None, expected: int, term: int, epoch: int
    ) -> None:
        """Read the state znode until we know whether our ISR write (on version ``expected``) landed."""
        path = znodes.state_path(part.topic, part.index)
        while not self._stopping and _still_pending(part, pending, term, epoch):
            try:
                # sync first: after a reconnect to another server of an ensemble, a read could
                # otherwise come from one that has not seen our write yet
                await self.session.run(self.session.client.sync, path)
                _, stat = await self.session.run(self.session.client.get, path)
            except NoNodeError:
                return  # the topic is being deleted
            except Exception:
                await asyncio.sleep(0.5)
                continue
            if not _still_pending(part, pending, term, epoch):
                return  # a new state was applied meanwhile: it settled everything
            if stat.version == expected:
                log.info("%s-%d: the ISR change did not land", part.topic, part.index)
                self.replicas.isr_write_failed(part)
                return
            # Another version: applied by the refresh, which takes a newer version's ISR (`_apply`).
            self._dirty.set()
            return

    async def _isr_loop(self) -> None:
        while not self._stopping:
            await asyncio.sleep(max(self._lag_ms / 2000, 0.1))
            now = _now_ms()
            for part in self.replicas.partitions():
                if part.is_leader and len(part.isr) > 1:
                    lagging = self.replicas.lagging_followers(part, now, self._lag_ms)
                    if lagging:
                        self.replicas.request_isr(part, [r for r in part.isr if r not in lagging])

    # -- ClusterView ------------------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def controller_id(self) -> int:
        return self._snap.controller

    def brokers(self) -> list[BrokerNode]:
        return [b for _, b in sorted(self._snap.brokers.items())]

    def broker(self, node_id: int) -> BrokerNode | None:
        return self._snap.brokers.get(node_id)

    def topics(self) -> Mapping[str, TopicState]:
        if self._view is None:
            self._view = {t: self._state(t) for t in self._snap.assignments if t not in self._snap.deleting}
        return self._view

    def topic(self, name: str) -> TopicState | None:
        return self.topics().get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        if self._names is None:
            self._names = {t.topic_id.int: t.name for t in self.topics().values()}
        return self._names.get(topic_id.int)

    def _state(self, topic: str) -> TopicState:
        live = self._snap.brokers
        states = []
        for index, replicas in sorted(self._snap.assignments[topic].items()):
            record = self._snap.states.get((topic, index))
            leader, epoch, isr = (
                (-1, -1, ())
                if record is None
                else (
                    record.state.leader,
                    record.state.leader_epoch,
                    record.state.isr,
                )
            )
            if leader not in live:
                leader = -1
            offline = tuple(r for r in replicas if r not in live)
            states.append(PartitionState(index, leader, epoch, tuple(replicas), tuple(isr), offline))
        topic_id = self._snap.topic_ids.get(topic, topic_ids.ZERO)
        return TopicState(topic, topic_id, tuple(states), dict(self._snap.configs.get(topic, {})))


def _still_pending(part: Partition, pending: list[int] | None, term: int, epoch: int) -> bool:
    """Whether ``pending`` (an ISR change asked for as leader of ``epoch`` in ``term``) is still the
    partition's pending change: nothing applied since (a new state, another change) has settled it."""
    return (
        part.pending_isr is pending
        and part.lead_term == term
        and part.leader_epoch == epoch
        and part.is_leader
    )
