"""Group membership with Kafka 4's consumer group protocol (KIP-848): ``group.protocol=consumer``.

The coordinator computes the assignment; the member only heartbeats:

1. A background task sends ConsumerGroupHeartbeat every heartbeat interval
   (the coordinator says how long), carrying the subscription, the rebalance
   timeout (``max.poll.interval.ms``), the server assignor
   (``group.remote.assignor``, or the coordinator's default) and the
   partitions the member owns, by topic id. The member id is generated here
   (a random UUID, base64, as Kafka's clients do) and kept for the member's
   life; epoch 0 joins, -1 leaves (-2 for a static member, which keeps its
   partitions until it comes back or its session expires).
2. An answer with an assignment is applied in the consumer's next ``poll``:
   partitions no longer assigned are committed (``enable.auto.commit``) and
   revoked (listener ``on_partitions_revoked``), the new ones are assigned
   (``on_partitions_assigned``), and the next heartbeat, sent at once,
   reports what the member now owns, which lets the coordinator hand the
   revoked partitions to others. Partitions it keeps are never revoked.
3. Topic ids are turned into names with Metadata v10+ (the subscribed topics
   first, every topic if an id is still unknown).
4. FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID lose the partitions (listener
   ``on_partitions_lost``) and rejoin with epoch 0; coordinator errors find
   the coordinator again; other errors (GROUP_ID_NOT_FOUND for a classic
   group, UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID, ...) reach the caller
   from ``poll``.

Commits carry the member epoch (OffsetCommit v9, which Kafka requires of
these members).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any

from client.errors import (
    COORDINATOR_CODES,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    UnsupportedVersionError,
    error_for,
)
from client.group import STABLE, UNJOINED, GroupMember
from client.types import TopicPartition
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from client.consumer import AIOConsumer

log = logging.getLogger("client.group")

CONSUMER_GROUP_HEARTBEAT = 68
METADATA = 3
OFFSET_COMMIT = 8
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
_REJOIN_CODES = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)


def _member_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ConsumerGroupMember(GroupMember):
    """The group side of one `AIOConsumer` using the consumer group protocol."""

    def __init__(self, consumer: AIOConsumer) -> None:
        super().__init__(consumer)
        self.member_id = _member_id()
        self.epoch = 0
        self.remote_assignor: str | None = consumer.config["group.remote.assignor"]
        self.interval = self.heartbeat_interval
        self.names: dict[uuid.UUID, str] = {}
        self.ids: dict[str, uuid.UUID] = {}
        self.pending: set[TopicPartition] | None = None  # an assignment not yet applied by poll
        self.error: KafkaError | None = None  # a fatal heartbeat error, raised by the next poll
        self._wakeup = asyncio.Event()
        self._sent_topics: list[str] | None = None

    # -- driven by the consumer ------------------------------------------------------------------

    def request_rejoin(self) -> None:
        """The subscription changed: tell the coordinator at once."""
        self._wakeup.set()
        self.consumer._wake()

    def metadata_changed(self) -> None:
        """Partition counts are the coordinator's business here: nothing to do."""

    async def poll(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            if self._heartbeat is not None and self._heartbeat.done() and not self._heartbeat.cancelled():
                self._heartbeat.result()  # surface a crash of the loop
            self._heartbeat = asyncio.ensure_future(self._heartbeat_loop())
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        if self.lost_pending:
            await self._lose_partitions()
        if self.pending is not None:
            new, self.pending = self.pending, None
            await self._apply(new)

    async def _apply(self, new: set[TopicPartition]) -> None:
        topics = self.consumer._subscribed_topics()
        new = {tp for tp in new if tp.topic in topics}
        revoked = self.owned - new
        added = new - self.owned
        if revoked:
            if self.auto_commit:
                await self.consumer._commit_quietly(revoked)
            await self.consumer._call_listener("on_partitions_revoked", revoked)
        self.owned = new
        self.consumer._set_assignment(new)
        self.state = STABLE
        if added:
            await self.consumer._call_listener("on_partitions_assigned", added)
        self._wakeup.set()  # acknowledge: the next heartbeat reports what is owned now

    async def _lose_partitions(self) -> None:
        self.lost_pending = False
        lost, self.owned = self.owned, set()
        self.consumer._set_assignment(set())
        if lost:
            await self.consumer._call_listener("on_partitions_lost", lost)
        self._wakeup.set()

    # -- heartbeats ------------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            try:
                await self._beat()
            except asyncio.CancelledError:
                raise
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
            except KafkaError as exc:
                self.error = exc
                self.consumer._wake()
            self._wakeup.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wakeup.wait()

    async def _coordinator_max(self, api_key: int) -> tuple[str, int]:
        """(the coordinator's address, the newest version of ``api_key`` it serves; -1: none)."""
        node = await self.ensure_coordinator()
        conn = await self.cluster.connection(("coordinator", node))
        theirs = conn.broker_versions.get(api_key)
        return conn.address, -1 if theirs is None else theirs[1]

    async def _heartbeat_version(self) -> int:
        address, newest = await self._coordinator_max(CONSUMER_GROUP_HEARTBEAT)
        if newest < 0:
            raise UnsupportedVersionError(
                f"broker {address} does not serve ConsumerGroupHeartbeat: use group.protocol=classic"
            )
        return min(1, newest)

    async def _beat(self) -> None:
        if self.pending is not None or self.lost_pending:
            return  # wait for poll to apply (or drop) the last assignment first
        version = await self._heartbeat_version()
        topics = sorted(self.consumer._subscribed_topics())
        owned = await self._owned_by_id()
        body = {
            "group_id": self.group_id,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "instance_id": self.instance_id,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topic_names": topics,
            "server_assignor": self.remote_assignor,
            "topic_partitions": owned,
        }
        resp = await self.send(CONSUMER_GROUP_HEARTBEAT, body, version=version)
        code = resp.error_code
        if code in COORDINATOR_CODES:
            if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                self.coordinator_dead(ErrorCode(code).name)
            return
        if code in _REJOIN_CODES:
            log.info("group %s: heartbeat answered %s: rejoining", self.group_id, ErrorCode(code).name)
            self.epoch = 0
            self.state = UNJOINED
            self.lost_pending = True
            self.consumer._wake()
            return
        if code:
            raise error_for(code, context=f"ConsumerGroupHeartbeat: {resp.error_message or ''}")
        if resp.member_id:
            self.member_id = resp.member_id
        self.epoch = resp.member_epoch
        self.generation = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.interval = resp.heartbeat_interval_ms / 1000
        if resp.assignment is not None:
            new = await self._by_name(resp.assignment.topic_partitions)
            if new != self.owned or self.state != STABLE:
                self.pending = new
                self.consumer._wake()

    async def _owned_by_id(self) -> list[dict[str, Any]]:
        by_topic: dict[str, list[int]] = {}
        for tp in self.owned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if any(t not in self.ids for t in by_topic):
            await self._learn_ids(list(by_topic))
        return [
            {"topic_id": self.ids[t], "partitions": sorted(ps)}
            for t, ps in sorted(by_topic.items())
            if t in self.ids
        ]

    async def _by_name(self, entries: Any) -> set[TopicPartition]:
        if any(e.topic_id not in self.names for e in entries):
            await self._learn_ids(sorted(self.consumer._subscribed_topics()))
        if any(e.topic_id not in self.names for e in entries):
            await self._learn_ids(None)
        out = set()
        for e in entries:
            name = self.names.get(e.topic_id)
            if name is None:
                log.warning(
                    "group %s: assigned topic id %s is unknown; skipping it", self.group_id, e.topic_id
                )
                continue
            out |= {TopicPartition(name, p) for p in e.partitions}
        return out

    async def _learn_ids(self, topics: list[str] | None) -> None:
        """Metadata v10+ (which carries topic ids) for ``topics`` (None: every topic)."""
        conn = await self.cluster.any_connection()
        theirs = conn.broker_versions.get(METADATA)
        if theirs is None or theirs[1] < 10:
            raise UnsupportedVersionError(f"broker {conn.address} has no topic ids (Metadata v10+)")
        version = min(12, theirs[1])
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        resp = await conn.send(METADATA, body, version=version, timeout=self.request_timeout)
        for t in resp.topics:
            if t.error_code == 0 and t.name:
                self.names[t.topic_id] = t.name
                self.ids[t.name] = t.topic_id

    # -- leaving and commits ---------------------------------------------------------------------

    async def leave(self) -> None:
        """Heartbeat with epoch -1 (-2 for a static member) so the group moves on at once."""
        if self.coordinator is not None and self.epoch > 0:
            epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
            body = {
                "group_id": self.group_id,
                "member_id": self.member_id,
                "member_epoch": epoch,
                "instance_id": self.instance_id,
            }
            try:
                await self.send(CONSUMER_GROUP_HEARTBEAT, body, version=await self._heartbeat_version())
            except KafkaError as exc:
                log.debug("group %s: leaving failed: %s", self.group_id, exc)
        self.epoch = 0
        self.state = UNJOINED

    def _commit_identity(self) -> tuple[int, str]:
        if self.epoch > 0:
            return self.epoch, self.member_id
        return -1, ""

    async def _commit_version(self) -> int | None:
        _, newest = await self._coordinator_max(OFFSET_COMMIT)
        if newest < 9:
            raise UnsupportedVersionError("group.protocol=consumer needs OffsetCommit v9")
        return 9


def new_group_member(consumer: AIOConsumer) -> GroupMember:
    """The member for ``group.protocol``: classic (JoinGroup/SyncGroup) or consumer (KIP-848)."""
    if consumer.config["group.protocol"] == "consumer":
        return ConsumerGroupMember(consumer)
    return GroupMember(consumer)
