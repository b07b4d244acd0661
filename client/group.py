"""Consumer group membership: coordinator discovery, join/sync, heartbeats, commits.

The protocol (Kafka's classic group protocol, as the Java consumer runs it):

1. FindCoordinator(group) names the broker that owns the group; group
   requests go on a connection of their own to it (JoinGroup may block for a
   whole rebalance and a broker answers one connection in order).
2. Before joining, the member commits its positions when enable.auto.commit is
   on and, with an eager protocol (range, roundrobin, sticky), revokes all its
   partitions (listener ``on_partitions_revoked``).
3. JoinGroup carries one subscription per configured assignor (the consumer
   protocol encoding of `client.assignors`); the coordinator picks the first
   protocol every member supports. MEMBER_ID_REQUIRED is answered by joining
   again with the id it hands out.
4. The leader (the coordinator names it) runs the chosen assignor over every
   member's subscription and sends all assignments in SyncGroup; the others
   send an empty SyncGroup; each gets its own assignment back.
5. With ``cooperative-sticky`` (when every configured assignor is
   cooperative) the member keeps its partitions through the rebalance and only
   revokes those missing from its new assignment, then joins once more so they
   can be handed over; unaffected partitions are never revoked.
6. A background task sends Heartbeat every heartbeat.interval.ms while the
   member is stable. REBALANCE_IN_PROGRESS asks the consumer to rejoin on its
   next poll; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION mean the partitions were
   lost (listener ``on_partitions_lost``). If poll is not called for
   max.poll.interval.ms the member leaves the group, as Kafka's does.

Joining and listener calls happen inside the consumer's ``poll`` (and
``close``/``unsubscribe``), in the caller's thread for the synchronous
consumer, so a listener may commit or seek.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from client.assignors import assignor
from client.errors import (
    COORDINATOR_CODES,
    CommitFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaResponseError,
    KafkaTimeoutError,
    error_for,
)
from client.types import OffsetAndMetadata, TopicPartition, offsets_by_topic
from protocol.errors import ErrorCode, ProtocolError
from protocol.member_data import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

if TYPE_CHECKING:
    from client.consumer import AIOConsumer

log = logging.getLogger("client.group")

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
UNSTABLE_OFFSET_COMMIT = 88

UNJOINED = "unjoined"
JOINING = "joining"
STABLE = "stable"


class _Retry(Exception):
    """Join/sync hit a transient condition: back off and try again."""


class GroupMember:
    """The group side of one `AIOConsumer`."""

    def __init__(self, consumer: AIOConsumer) -> None:
        self.consumer = consumer
        self.cluster = consumer.cluster
        c = consumer.config
        self.group_id: str = c["group.id"]
        self.instance_id: str | None = c["group.instance.id"]
        self.session_timeout_ms: int = c["session.timeout.ms"]
        self.rebalance_timeout_ms: int = c["max.poll.interval.ms"]
        self.heartbeat_interval = c["heartbeat.interval.ms"] / 1000
        self.request_timeout = c["request.timeout.ms"] / 1000
        self.retry_backoff = c["retry.backoff.ms"] / 1000
        self.auto_commit: bool = c["enable.auto.commit"]
        self.assignors = [assignor(name) for name in c["partition.assignment.strategy"]]
        self.cooperative = all(a.cooperative for a in self.assignors)
        self.coordinator: int | None = None
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader_id = ""
        self.state = UNJOINED
        self.rejoin_needed = True
        self.lost_pending = False
        self.owned: set[TopicPartition] = set()
        self.snapshot: dict[str, int | None] = {}
        self._prepared = False
        self._leader_counts: dict[str, int | None] = {}
        self._heartbeat: asyncio.Task[None] | None = None
        self._join_task: asyncio.Task[Assignment] | None = None
        self._closed = False

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id

    # -- coordinator -----------------------------------------------------------------------------

    async def ensure_coordinator(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = self.retry_backoff
        while self.coordinator is None:
            try:
                self.coordinator = await self.cluster.find_coordinator(self.group_id)
                break
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last: KafkaError = exc
            except KafkaResponseError as exc:
                if not exc.retriable:
                    raise
                last = exc
            if deadline is not None and time.monotonic() + backoff > deadline:
                raise KafkaTimeoutError(f"no coordinator for group {self.group_id!r}: {last}")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
        return self.coordinator

    def coordinator_dead(self, why: object = "") -> None:
        if self.coordinator is not None:
            log.info("group %s: coordinator %s unavailable (%s)", self.group_id, self.coordinator, why)
            self.cluster.drop(("coordinator", self.coordinator))
        self.coordinator = None

    async def send(
        self, api_key: int, body: dict[str, Any], timeout: float | None = None, version: int | None = None
    ) -> Any:
        node = await self.ensure_coordinator(timeout)
        try:
            conn = await self.cluster.connection(("coordinator", node))
            return await conn.send(api_key, body, timeout=timeout or self.request_timeout, version=version)
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            self.coordinator_dead(exc)
            raise

    async def version(self, api_key: int) -> int:
        node = await self.ensure_coordinator()
        conn = await self.cluster.connection(("coordinator", node))
        return conn.version(api_key)

    # -- membership ------------------------------------------------------------------------------

    def request_rejoin(self) -> None:
        self.rejoin_needed = True
        self.consumer._wake()

    async def poll(self) -> None:
        """Called from each consumer poll: advance a rebalance without waiting for it.

        The listener steps (revoke before joining, assign after syncing, lost)
        run here, in the caller's context; the JoinGroup/SyncGroup round trips
        run in a background task, so a poll returns at its timeout even while
        the group waits for other members (which may be polled by the same
        thread), and a cooperative member keeps consuming what it owns.
        """
        task = self._join_task
        if task is not None:
            if not task.done():
                return
            self._join_task = None
            assignment = task.result()  # fatal errors (e.g. INCONSISTENT_GROUP_PROTOCOL) reach the caller
            self._prepared = False
            self.state = STABLE
            self.rejoin_needed = False
            await self._on_join_complete(assignment)
            if self._heartbeat is None or self._heartbeat.done():
                self._heartbeat = asyncio.ensure_future(self._heartbeat_loop())
        if self.lost_pending:
            await self._lose_partitions()
        if (self.rejoin_needed or self.state != STABLE) and not self._closed:
            if not self._prepared:
                await self._on_join_prepare()
                self._prepared = True
            self.state = JOINING
            self._join_task = asyncio.ensure_future(self._join_until_assigned())
            self._join_task.add_done_callback(lambda _t: self.consumer._wake())

    async def _join_until_assigned(self) -> Assignment:
        """Find the coordinator, JoinGroup and SyncGroup until an assignment arrives (network only)."""
        while True:
            try:
                await self.ensure_coordinator()
                return await self._join_and_sync()
            except _Retry as exc:
                log.debug("group %s: rejoining: %s", self.group_id, exc)
                if str(exc) == "member id assigned":
                    continue
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("group %s: join failed: %s", self.group_id, exc)
            await asyncio.sleep(self.retry_backoff)

    def _subscription_bytes(self, topics: list[str]) -> list[dict[str, Any]]:
        owned = sorted(self.owned)
        return [
            {
                "name": a.name,
                "metadata": encode_subscription(
                    topics, a.user_data(owned, self.generation), owned, self.generation
                ),
            }
            for a in self.assignors
        ]

    async def _join_and_sync(self) -> Assignment:
        topics = sorted(self.consumer._subscribed_topics())
        version = await self.version(JOIN_GROUP)
        body = {
            "group_id": self.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "protocol_type": "consumer",
            "protocols": self._subscription_bytes(topics),
        }
        if version < 5 and self.instance_id is not None:
            raise KafkaError("group.instance.id needs JoinGroup v5, which the broker does not support")
        join_timeout = max(self.request_timeout, self.rebalance_timeout_ms / 1000 + 5)
        resp = await self.send(JOIN_GROUP, body, timeout=join_timeout)
        code = resp.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            raise _Retry("member id assigned")
        if code:
            self._join_error(code, "JoinGroup")
        self.generation = resp.generation_id
        self.member_id = resp.member_id
        self.protocol = resp.protocol_name
        self.leader_id = resp.leader
        assignments: list[dict[str, Any]] = []
        if self.is_leader:
            assignments = await self._assign(resp.members)
        sync_version = await self.version(SYNC_GROUP)
        sync = {
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "assignments": assignments,
        }
        if sync_version < 3 and self.instance_id is not None:
            raise KafkaError("group.instance.id needs SyncGroup v3")
        resp = await self.send(SYNC_GROUP, sync, timeout=join_timeout)
        if resp.error_code:
            self._join_error(resp.error_code, "SyncGroup")
        try:
            return decode_assignment(resp.assignment)
        except ProtocolError as exc:
            raise KafkaError(f"undecodable assignment from the group leader: {exc}") from None

    def _join_error(self, code: int, what: str) -> None:
        if code in COORDINATOR_CODES:
            if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                self.coordinator_dead(ErrorCode(code).name)
            raise _Retry(f"{what}: {ErrorCode(code).name}")
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            raise _Retry(f"{what}: UNKNOWN_MEMBER_ID")
        if code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
            raise _Retry(f"{what}: ILLEGAL_GENERATION")
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            raise _Retry(f"{what}: REBALANCE_IN_PROGRESS")
        raise error_for(code, context=f"{what} for group {self.group_id!r}")

    async def _assign(self, members: list[Any]) -> list[dict[str, Any]]:
        """Leader: run the chosen assignor over every member's subscription."""
        chosen = next((a for a in self.assignors if a.name == self.protocol), None)
        if chosen is None:
            raise KafkaError(f"group chose assignor {self.protocol!r}, which this consumer does not have")
        subscriptions: dict[str, Subscription] = {}
        for m in members:
            try:
                sub = decode_subscription(m.metadata)
            except ProtocolError as exc:
                log.warning(
                    "member %s sent an undecodable subscription (%s); treating it as empty", m.member_id, exc
                )
                sub = Subscription([])
            sub.member_id = m.member_id
            sub.group_instance_id = m.get("group_instance_id")
            subscriptions[m.member_id] = sub
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        self.cluster.track(topics)
        with contextlib.suppress(KafkaError):
            await self.cluster.refresh(topics)
        counts = {t: n for t in topics if (n := self.cluster.partition_count(t))}
        self._leader_counts = {t: counts.get(t) for t in topics}
        result = chosen.assign(counts, subscriptions)
        log.info(
            "group %s generation %s: %s assigned %s",
            self.group_id,
            self.generation,
            chosen.name,
            {m: len(tps) for m, tps in result.items()},
        )
        return [{"member_id": m, "assignment": encode_assignment(result.get(m, []))} for m in subscriptions]

    async def _on_join_prepare(self) -> None:
        if self.auto_commit and self.owned:
            await self.consumer._commit_quietly(self.owned)
        if not self.cooperative:
            revoked, self.owned = self.owned, set()
            self.consumer._set_assignment(set())
        else:
            topics = self.consumer._subscribed_topics()
            revoked = {tp for tp in self.owned if tp.topic not in topics}
            self.owned -= revoked
            self.consumer._set_assignment(self.owned)
        if revoked:
            await self.consumer._call_listener("on_partitions_revoked", revoked)

    async def _on_join_complete(self, assignment: Assignment) -> None:
        topics = self.consumer._subscribed_topics()
        new = {tp for tp in assignment.partitions if tp.topic in topics}
        if self.cooperative:
            revoked = self.owned - new
            added = new - self.owned
            if revoked:
                await self.consumer._call_listener("on_partitions_revoked", revoked)
                self.rejoin_needed = True  # let the revoked partitions be handed over
        else:
            added = new
        self.owned = new
        self.consumer._set_assignment(new)
        # What the assignment was computed from: the leader knows; a follower learns counts later.
        counts = self._leader_counts if self.is_leader else {}
        self.snapshot = {t: counts.get(t, self.cluster.partition_count(t)) for t in topics}
        self._leader_counts = {}
        await self.consumer._call_listener("on_partitions_assigned", added)

    async def _lose_partitions(self) -> None:
        self.lost_pending = False
        lost, self.owned = self.owned, set()
        self.consumer._set_assignment(set())
        self.rejoin_needed = True
        if lost:
            await self.consumer._call_listener("on_partitions_lost", lost)

    def _reset_member(self, code: int) -> None:
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            self.member_id = ""
        self.generation = -1
        self.state = UNJOINED
        self.lost_pending = True
        self.request_rejoin()

    def metadata_changed(self) -> None:
        """After a metadata refresh: rejoin if a subscribed topic's partition count changed."""
        if self.state != STABLE:
            return
        for topic, count in self.snapshot.items():
            now = self.cluster.partition_count(topic)
            if count is None and not self.is_leader:
                self.snapshot[topic] = now  # a follower just learned it; the leader assigned with it
                continue
            if now is not None and now != count:
                log.info("group %s: %s now has %s partitions: rejoining", self.group_id, topic, now)
                self.request_rejoin()
                return

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.heartbeat_interval)
            if self.state != STABLE or self.coordinator is None:
                continue
            idle = time.monotonic() - self.consumer._last_poll
            if idle > self.rebalance_timeout_ms / 1000:
                log.warning(
                    "group %s: poll() not called for %.1f s (max.poll.interval.ms=%d): leaving the group",
                    self.group_id,
                    idle,
                    self.rebalance_timeout_ms,
                )
                await self.leave()
                self.lost_pending = True
                self.request_rejoin()
                continue
            body = {
                "group_id": self.group_id,
                "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": self.instance_id,
            }
            try:
                resp = await self.send(HEARTBEAT, body)
            except KafkaError as exc:
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
                continue
            code = resp.error_code
            if code == ErrorCode.NONE:
                continue
            if code == ErrorCode.REBALANCE_IN_PROGRESS:
                self.request_rejoin()
            elif code in (
                ErrorCode.ILLEGAL_GENERATION,
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.FENCED_INSTANCE_ID,
            ):
                log.info("group %s: heartbeat answered %s", self.group_id, ErrorCode(code).name)
                self._reset_member(code)
            elif code in COORDINATOR_CODES:
                self.coordinator_dead(ErrorCode(code).name)
            else:
                log.warning("group %s: heartbeat error %s", self.group_id, code)

    async def leave(self) -> None:
        """LeaveGroup (dynamic members only), so the group rebalances without waiting for the session timeout."""
        if self.member_id and self.instance_id is None and self.coordinator is not None:
            try:
                await self.send(LEAVE_GROUP, {"group_id": self.group_id, "member_id": self.member_id})
            except KafkaError as exc:
                log.debug("group %s: LeaveGroup failed: %s", self.group_id, exc)
        self.member_id = "" if self.instance_id is None else self.member_id
        self.generation = -1
        self.state = UNJOINED

    async def close(self) -> None:
        """Revoke (listener), leave the group and stop heartbeating."""
        if self._closed:
            return
        if self._join_task is not None:
            self._join_task.cancel()
            with contextlib.suppress(BaseException):
                await self._join_task
            self._join_task = None
        if self.owned:
            if self.state == STABLE and not self.lost_pending:
                await self.consumer._call_listener("on_partitions_revoked", set(self.owned))
            else:
                await self.consumer._call_listener("on_partitions_lost", set(self.owned))
        self.owned = set()
        self._closed = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(BaseException):
                await self._heartbeat
        await self.leave()

    # -- offsets ---------------------------------------------------------------------------------

    async def commit(self, offsets: dict[TopicPartition, OffsetAndMetadata], timeout: float) -> None:
        """OffsetCommit with this member's generation (or -1/"" outside a group), retrying coordinator errors."""
        if not offsets:
            return
        deadline = time.monotonic() + timeout
        by_topic = offsets_by_topic(offsets)
        while True:
            generation, member_id = self._commit_identity()
            body = {
                "group_id": self.group_id,
                "generation_id_or_member_epoch": generation,
                "member_id": member_id,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }
            retry: KafkaError | None = None
            try:
                resp = await self.send(
                    OFFSET_COMMIT,
                    body,
                    timeout=max(0.1, deadline - time.monotonic()),
                    version=await self._commit_version(),
                )
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                retry = exc
            else:
                for t in resp.topics:
                    for p in t.partitions:
                        code = p.error_code
                        if code == ErrorCode.NONE:
                            continue
                        if code in COORDINATOR_CODES:
                            if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                                self.coordinator_dead(ErrorCode(code).name)
                            retry = error_for(code)
                        elif code == ErrorCode.STALE_MEMBER_EPOCH:
                            retry = error_for(code)  # a heartbeat moved the epoch on: commit with the new one
                        elif code in (
                            ErrorCode.ILLEGAL_GENERATION,
                            ErrorCode.UNKNOWN_MEMBER_ID,
                            ErrorCode.FENCED_INSTANCE_ID,
                            ErrorCode.FENCED_MEMBER_EPOCH,
                        ):
                            self._reset_member(code)
                            raise CommitFailedError(
                                f"commit rejected ({ErrorCode(code).name}): the group has rebalanced and the "
                                "partitions may now be assigned to another member"
                            )
                        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
                            self.request_rejoin()
                            raise CommitFailedError(
                                "commit rejected: the group is rebalancing; poll to rejoin"
                            )
                        else:
                            raise error_for(code, context=f"commit of {t.name}-{p.partition_index}")
            if retry is None:
                return
            if time.monotonic() + self.retry_backoff >= deadline:
                raise KafkaTimeoutError(f"commit did not complete: {retry}")
            await asyncio.sleep(self.retry_backoff)

    def _commit_identity(self) -> tuple[int, str]:
        """(generation, member id) an OffsetCommit carries: -1 and "" unless the member is in the group."""
        if self.state == STABLE and self.member_id:
            return self.generation, self.member_id
        return -1, ""

    async def _commit_version(self) -> int | None:
        """The OffsetCommit version to send; None: the negotiated one."""
        return None

    async def fetch_committed(
        self, partitions: list[TopicPartition], timeout: float
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch: committed offset per partition (None where nothing is committed)."""
        deadline = time.monotonic() + timeout
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(set(partitions)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "group_id": self.group_id,
            "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        }
        while True:
            retry: object = None
            try:
                resp = await self.send(OFFSET_FETCH, body, timeout=max(0.1, deadline - time.monotonic()))
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                retry = exc
            else:
                top = resp.get("error_code", 0)
                if top in COORDINATOR_CODES:
                    if top != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                        self.coordinator_dead(ErrorCode(top).name)
                    retry = ErrorCode(top).name
                elif top:
                    raise error_for(top, context=f"OffsetFetch for group {self.group_id!r}")
                else:
                    out: dict[TopicPartition, OffsetAndMetadata | None] = {}
                    for t in resp.topics:
                        for p in t.partitions:
                            if p.error_code == UNSTABLE_OFFSET_COMMIT:
                                retry = "UNSTABLE_OFFSET_COMMIT"
                            elif p.error_code in COORDINATOR_CODES:
                                self.coordinator_dead(p.error_code)
                                retry = p.error_code
                            elif p.error_code and p.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                                raise error_for(
                                    p.error_code, context=f"OffsetFetch {t.name}-{p.partition_index}"
                                )
                            tp = TopicPartition(t.name, p.partition_index)
                            out[tp] = (
                                OffsetAndMetadata(p.committed_offset, p.metadata or "")
                                if p.committed_offset >= 0
                                else None
                            )
                    if retry is None:
                        return {tp: out.get(tp) for tp in partitions}
            if time.monotonic() + self.retry_backoff >= deadline:
                raise KafkaTimeoutError(f"could not fetch committed offsets: {retry}")
            await asyncio.sleep(self.retry_backoff)
