"""Connections to a cluster and the metadata cache shared by one client.

- Bootstrap: the first Metadata request goes to any reachable address of
  ``bootstrap.servers``; after that the brokers named in metadata are used.
- Connections are keyed: ``("node", id)`` for data, ``("coordinator", id)`` for
  group requests (JoinGroup may block for a whole rebalance, and a broker
  answers a connection's requests in order, so group traffic gets its own
  socket as in the Java client) and ``("bootstrap", i)``.
- A failed connect backs that key off exponentially, from reconnect.backoff.ms
  to reconnect.backoff.max.ms with +-20% jitter; the next `connection` call
  for the key waits out the backoff before trying again.
- Metadata: `refresh` fetches the tracked topics (or all of them when a
  pattern subscription asked for that) and replaces the cache; concurrent
  refreshes of the tracked set share one request. Callers refresh on
  NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION and when metadata is
  older than metadata.max.age.ms.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from client.connection import BrokerConnection
from client.errors import (
    ClientClosedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    error_for,
)
from client.security import ClientSecurity
from client.types import BrokerInfo, PartitionInfo, TopicInfo, TopicPartition
from protocol.errors import ErrorCode

log = logging.getLogger("client.cluster")

METADATA = 3
FIND_COORDINATOR = 10

ConnKey = tuple[str, int]


LIST_OFFSETS = 2


class Cluster:
    """Connection pool plus metadata cache for one client (runs on one event loop)."""

    def __init__(self, config: dict[str, Any], *, allow_auto_topic_creation: bool = False) -> None:
        self.config = config
        self.client_id: str | None = config.get("client.id")
        self.bootstrap: list[tuple[str, int]] = config["bootstrap.servers"]
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.request_timeout = config["request.timeout.ms"] / 1000
        self.security = ClientSecurity.from_config(config)
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.tracked: set[str] = set()
        self.want_all_topics = False
        self.last_refresh = 0.0
        self._conns: dict[ConnKey, BrokerConnection] = {}
        self._connecting: dict[ConnKey, asyncio.Future[BrokerConnection]] = {}
        self._failures: dict[ConnKey, int] = {}
        self._backoff_until: dict[ConnKey, float] = {}
        self._refreshing: asyncio.Future[None] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._closed = False

    # -- connections -------------------------------------------------------------------------------

    def _address(self, key: ConnKey) -> tuple[str, int]:
        kind, ident = key
        if kind == "bootstrap":
            return self.bootstrap[ident]
        broker = self.brokers.get(ident)
        if broker is None:
            raise KafkaConnectionError(f"broker {ident} is not in the cluster metadata")
        return broker.host, broker.port

    def _backoff(self, key: ConnKey) -> float:
        failures = self._failures.get(key, 0)
        if not failures:
            return 0.0
        base = self.config["reconnect.backoff.ms"] / 1000
        cap = self.config["reconnect.backoff.max.ms"] / 1000
        return min(cap, base * 2 ** (failures - 1)) * random.uniform(0.8, 1.2)

    async def connection(self, key: ConnKey) -> BrokerConnection:
        """An open connection for ``key`` (connecting, after any backoff, if needed)."""
        if self._closed:
            raise ClientClosedError("client is closed")
        conn = self._conns.get(key)
        if conn is not None and not conn.is_closed:
            return conn
        pending = self._connecting.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[BrokerConnection] = asyncio.get_running_loop().create_future()
        self._connecting[key] = future
        try:
            wait = self._backoff_until.get(key, 0.0) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            host, port = self._address(key)
            timeout = self.config["socket.connection.setup.timeout.ms"] / 1000
            node_id = key[1] if key[0] != "bootstrap" else -(key[1] + 1)
            try:
                conn = await BrokerConnection.open(
                    host,
                    port,
                    client_id=self.client_id,
                    node_id=node_id,
                    timeout=timeout,
                    security=self.security,
                )
            except KafkaError:
                self._failures[key] = self._failures.get(key, 0) + 1
                self._backoff_until[key] = time.monotonic() + self._backoff(key)
                raise
            if self._closed:
                conn.close()
                raise ClientClosedError("client is closed")
            self._failures.pop(key, None)
            self._backoff_until.pop(key, None)
            self._conns[key] = conn
            conn.on_close(lambda c, k=key: self._conns.pop(k, None) if self._conns.get(k) is c else None)
            future.set_result(conn)
            return conn
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
                future.exception()
            raise
        finally:
            self._connecting.pop(key, None)

    async def node(self, node_id: int) -> BrokerConnection:
        return await self.connection(("node", node_id))

    async def any_connection(self) -> BrokerConnection:
        """An open connection to some broker: an existing one, else a known broker, else bootstrap."""
        open_conns = [c for k, c in self._conns.items() if k[0] != "coordinator" and not c.is_closed]
        if open_conns:
            return min(open_conns, key=lambda c: c.in_flight)
        keys: list[ConnKey] = [("node", n) for n in self.brokers]
        random.shuffle(keys)
        keys += [("bootstrap", i) for i in range(len(self.bootstrap))]
        errors = []
        for key in keys:
            try:
                return await self.connection(key)
            except KafkaConnectionError as exc:
                errors.append(str(exc))
        detail = "; ".join(dict.fromkeys(errors))
        raise KafkaConnectionError(detail or "no broker to connect to")

    async def check_bootstrap(self) -> None:
        """Connect to a bootstrap address and read metadata once; `KafkaConnectionError` if none answers."""
        await self.refresh([])

    async def send(self, node_id: int, api_key: int, body: dict[str, Any], **kw: Any) -> Any:
        conn = await self.node(node_id)
        kw.setdefault("timeout", self.request_timeout)
        return await conn.send(api_key, body, **kw)

    async def list_offsets(
        self,
        by_node: Mapping[int, list[TopicPartition]],
        timestamps: Mapping[TopicPartition, int],
        read_committed: bool,
        retriable: tuple[type[Exception], ...],
    ) -> tuple[list[tuple[TopicPartition, Any]], Exception | None]:
        """One ListOffsets request to each leader of ``by_node`` for its partitions' ``timestamps``
        (`list_offsets_body`): every partition answer, as (partition, its answer) in the order the
        leaders gave them, and the last ``retriable`` error of a request that failed (the caller
        retries those partitions). Shared by the consumer and the admin client, which judge the
        answers' error codes each its own way."""
        answers: list[tuple[TopicPartition, Any]] = []
        failed: Exception | None = None
        for node, tps in by_node.items():
            try:
                resp = await self.send(node, LIST_OFFSETS, list_offsets_body(tps, timestamps, read_committed))
            except retriable as exc:
                failed = exc
                continue
            for t in resp.topics:
                answers.extend((TopicPartition(t.name, p.partition_index), p) for p in t.partitions)
        return answers, failed

    async def send_any(self, api_key: int, body: dict[str, Any], **kw: Any) -> Any:
        conn = await self.any_connection()
        kw.setdefault("timeout", self.request_timeout)
        return await conn.send(api_key, body, **kw)

    # -- metadata ----------------------------------------------------------------------------------

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every metadata update."""
        self._listeners.append(callback)

    @property
    def stale(self) -> bool:
        return time.monotonic() - self.last_refresh > self.config["metadata.max.age.ms"] / 1000

    def partition_count(self, topic: str) -> int | None:
        info = self.topics.get(topic)
        if info is None or info.error or not info.partitions:
            return None
        return len(info.partitions)

    def leader(self, tp: TopicPartition) -> int | None:
        info = self.topics.get(tp.topic)
        if info is None:
            return None
        p = info.partitions.get(tp.partition)
        if p is None or p.leader < 0:
            return None
        return p.leader

    def track(self, topics: Iterable[str]) -> bool:
        """Add topics of interest; True if any was new."""
        before = len(self.tracked)
        self.tracked.update(topics)
        return len(self.tracked) != before

    async def refresh(
        self, topics: Iterable[str] | None = None, *, all_topics: bool = False
    ) -> dict[str, TopicInfo]:
        """Fetch metadata and update the cache; returns the topics the response named.

        ``topics=None`` refreshes the tracked set (all topics when
        `want_all_topics`), sharing one request among concurrent callers.
        """
        if topics is None and not all_topics:
            if self._refreshing is None or self._refreshing.done():
                self._refreshing = asyncio.ensure_future(self._refresh_tracked())
            await asyncio.shield(self._refreshing)
            return {t: self.topics[t] for t in self.tracked if t in self.topics}
        return await self._refresh(None if all_topics else list(topics or []))

    async def _refresh_tracked(self) -> None:
        await self._refresh(None if self.want_all_topics else sorted(self.tracked))

    async def _refresh(self, topics: list[str] | None) -> dict[str, TopicInfo]:
        """Metadata for ``topics`` (None = all). With an empty list only brokers are refreshed."""
        conn = await self.any_connection()
        version = conn.version(METADATA)
        body: dict[str, Any]
        if version == 0:
            body = {"topics": [{"name": t} for t in (topics or [])]}
        else:
            body = {"topics": None if topics is None else [{"name": t} for t in topics]}
        if version >= 4:
            body["allow_auto_topic_creation"] = self.allow_auto_topic_creation
        resp = await conn.send(METADATA, body, timeout=self.request_timeout)
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.get("rack")) for b in resp.brokers}
        if brokers:
            self.brokers = brokers
        self.controller_id = resp.get("controller_id", -1)
        self.cluster_id = resp.get("cluster_id")
        seen: dict[str, TopicInfo] = {}
        for t in resp.topics:
            partitions = {
                p.partition_index: PartitionInfo(
                    t.name,
                    p.partition_index,
                    p.leader_id,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    p.error_code,
                )
                for p in t.partitions
            }
            info = TopicInfo(t.name, partitions, bool(t.get("is_internal", False)), t.error_code)
            seen[t.name] = info
            if t.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION):
                self.topics.pop(t.name, None)
            else:
                self.topics[t.name] = info
        if topics is None:
            for name in list(self.topics):
                if name not in seen:
                    del self.topics[name]
        if topics is None or topics:
            self.last_refresh = time.monotonic()
        for cb in list(self._listeners):
            try:
                cb()
            except Exception:
                log.exception("metadata listener failed")
        return seen

    async def wait_for_topic(self, topic: str, timeout: float, *, fail_unknown: bool = False) -> int:
        """The partition count of ``topic``, refreshing until its leaders are known.

        `KafkaTimeoutError` after ``timeout`` s (the topic may not exist); with
        ``fail_unknown`` an UNKNOWN_TOPIC_OR_PARTITION answer raises at once.
        """
        deadline = time.monotonic() + timeout
        self.track([topic])
        backoff = self.config["retry.backoff.ms"] / 1000
        last_error: BaseException | None = None
        while True:
            count = self.partition_count(topic)
            info = self.topics.get(topic)
            if count and info is not None and all(p.leader >= 0 for p in info.partitions.values()):
                return count
            try:
                seen = await self.refresh([topic])
                last_error = None
            except KafkaConnectionError as exc:
                last_error = exc
                seen = {}
            t = seen.get(topic)
            if t is not None and (
                t.error == ErrorCode.INVALID_TOPIC_EXCEPTION
                or (fail_unknown and t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            ):
                raise error_for(t.error, context=f"topic {topic!r}")
            count = self.partition_count(topic)
            info = self.topics.get(topic)
            if count and info is not None and all(p.leader >= 0 for p in info.partitions.values()):
                return count
            if time.monotonic() >= deadline:
                if last_error is not None:
                    raise last_error
                raise KafkaTimeoutError(
                    f"topic {topic!r} not present in metadata after {timeout * 1000:.0f} ms"
                )
            await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, 1.0)

    async def find_coordinator(self, key: str, key_type: int = 0) -> int:
        """Node id of the coordinator for group (key_type 0) ``key``; raises on an error answer."""
        conn = await self.any_connection()
        version = conn.version(FIND_COORDINATOR)
        body: dict[str, Any] = {"key": key}
        if version >= 1:
            body["key_type"] = key_type
        resp = await conn.send(FIND_COORDINATOR, body, timeout=self.request_timeout)
        if resp.error_code:
            raise error_for(resp.error_code, resp.get("error_message"), context=f"FindCoordinator {key!r}")
        if resp.node_id not in self.brokers or (
            self.brokers[resp.node_id].host,
            self.brokers[resp.node_id].port,
        ) != (resp.host, resp.port):
            self.brokers[resp.node_id] = BrokerInfo(resp.node_id, resp.host, resp.port)
        return resp.node_id

    # -- closing -----------------------------------------------------------------------------------

    def drop(self, key: ConnKey) -> None:
        """Close the connection for ``key`` (the next use reconnects)."""
        conn = self._conns.pop(key, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        self._closed = True
        if self._refreshing is not None and not self._refreshing.done():
            self._refreshing.cancel()
            with contextlib.suppress(BaseException):
                await self._refreshing
        for conn in list(self._conns.values()):
            conn.close()
        self._conns.clear()


def list_offsets_body(
    tps: Iterable[TopicPartition], timestamps: Mapping[TopicPartition, int], read_committed: bool
) -> dict[str, Any]:
    """A ListOffsets v1-3 request body asking for ``timestamps[tp]`` of each partition in ``tps``.

    Timestamps: -2 earliest, -1 latest, else the first offset at or after that time.
    Shared by the consumer (position resets, offsets_for_times) and the admin client.
    """
    by_topic: dict[str, list[dict[str, int]]] = collections.defaultdict(list)
    for tp in tps:
        by_topic[tp.topic].append({"partition_index": tp.partition, "timestamp": timestamps[tp]})
    return {
        "replica_id": -1,
        "isolation_level": 1 if read_committed else 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
