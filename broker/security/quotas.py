"""Client quotas (Kafka's ClientQuotaManager): what each client may send and fetch, and its throttling.

`ClientQuotas` (``broker.security.quotas``) holds every entity's quotas
(broker/security/quota_config.py: entities, keys, precedence), keeps them
current from where they are stored (broker/security/quota_store.py: the data
directory on a single broker, ZooKeeper in a cluster; re-read every
``RELOAD_S`` seconds, when a file changes, and when a ZooKeeper change
notification appears), and measures each quota entity's rate
(broker/security/quota_rate.py: ``quota.window.num`` samples of
``quota.window.size.seconds``).

Enforcement, as KafkaApis does it (KIP-219: the answer goes out at once with
``throttle_time_ms``, then the connection reads nothing for that long):

- `enabled` is False while no entity has a ``producer_byte_rate``,
  ``consumer_byte_rate`` or ``request_percentage``: then handlers and the
  connection check that one attribute and do nothing else.
- Produce (`record_produce`): the bytes of the request's record sets count
  against ``producer_byte_rate``; acks=0 requests too.
- Fetch from a consumer (`record_fetch`; followers are exempt): the record
  bytes of the answer count against ``consumer_byte_rate``. When that makes
  the client exceed its quota, the bytes are taken back out of its rate and
  the answer carries no records (the partitions, their offsets and errors
  stay), as Kafka answers a throttled fetch empty.
- Every request (`after_request`): the time its handler ran, as a percentage
  of one thread, counts against ``request_percentage``; throttle times are
  capped at one ``quota.window.size.seconds`` (ClientRequestQuotaManager).
  Exempt: replication (follower fetches, WriteTxnMarkers), SASL exchanges and
  acks=0 produces.
- CreateTopics, CreatePartitions, DeleteTopics (`mutation_quota`): the
  partitions created or deleted count against ``controller_mutation_rate``,
  a token bucket (Kafka's ControllerMutationQuotaManager, KIP-599); see
  `MutationQuota` for its strict and permissive forms.
- A throttle time sets ``Session.throttle_ms`` (the largest one wins); the
  connection mutes itself for that long once the handler has returned
  (broker/connection.py). The answer's ``throttle_time_ms`` is the largest of
  the byte-rate and request throttle times.

The user of a connection is its principal's name (``ANONYMOUS`` for
``User:ANONYMOUS``), the client-id the request header's (null: empty).
Use from the event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from broker.cluster.zk.session import log_refresh_failure
from broker.config import BrokerConfig, ConfigError
from broker.security.credentials import local_users_file
from broker.security.quota_config import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Entity,
    QuotaFilter,
    Quotas,
    QuotaTable,
    format_value,
    matches,
)
from broker.security.quota_rate import SampledRate, TokenBucket, record_and_throttle
from broker.security.quota_store import (
    add_entities,
    entity_path,
    local_quota_file,
    read_zk_quotas,
    sanitize,
    write_zk_entity,
)
from protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from broker.cluster.zk.session import ZkSession
    from broker.security.session import Session
    from protocol.headers import RequestHeader

log = logging.getLogger("minikafka.security")

RELOAD_S = 5.0
FETCH, WRITE_TXN_MARKERS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 1, 27, 17, 36
_EXEMPT_APIS = frozenset((WRITE_TXN_MARKERS, SASL_HANDSHAKE, SASL_AUTHENTICATE))
_MEASURED = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)

WriteUsers = Callable[[dict[str, dict[str, str | None]]], Awaitable[None]]
Tags = tuple[str, str]


class RequestContext(Protocol):
    """What quotas read of broker.context.RequestContext (not imported: it leads back here)."""

    @property
    def header(self) -> RequestHeader: ...

    @property
    def session(self) -> Session: ...

    @property
    def version(self) -> int: ...


def user_of(principal: str) -> str:
    """The user name quotas know a principal by (Kafka's KafkaPrincipal.getName)."""
    return principal.partition(":")[2]


def _replica_id(version: int, req: Any) -> int:
    return req.replica_state.replica_id if version >= 15 else req.replica_id


class ClientQuotas:
    def __init__(self, config: BrokerConfig, data_dir: Path | None, write_users: WriteUsers) -> None:
        """``data_dir`` None: quotas live in ZooKeeper (`start` gets the session). ``write_users``
        makes user config changes durable beside the SCRAM credentials (BrokerSecurity's)."""
        self.enabled = False
        self._request_on = False
        self._samples = int(config["quota.window.num"])
        self._window_ms = int(config["quota.window.size.seconds"]) * 1000
        if self._samples < 1 or self._window_ms < 1000:
            raise ConfigError("quota.window.num and quota.window.size.seconds must be at least 1")
        self._table = QuotaTable({})
        self._rates: dict[str, dict[Tags, SampledRate]] = {key: {} for key in _MEASURED}
        self._buckets: dict[Tags, TokenBucket] = {}  # controller_mutation_rate
        self._write_users = write_users
        self._users_file = None if data_dir is None else local_users_file(data_dir)
        self._file = None if data_dir is None else local_quota_file(data_dir)
        self.zk: ZkSession | None = None
        self._lock = asyncio.Lock()  # a re-read never undoes a write it did not see
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._fired: Callable[[Any], None] | None = None  # the ZooKeeper watch (set by `start`)
        if self._file is not None:
            try:
                self._replace(self._load_local())
            except ValueError as exc:
                raise ConfigError(str(exc)) from None

    @property
    def quotas(self) -> Quotas:
        """Every entity's quotas, ``{(user, client-id): {key: value}}`` (do not modify)."""
        return self._table.quotas

    # -- enforcement ------------------------------------------------------------------------------
    def record_produce(self, ctx: RequestContext, req: Any) -> int:
        """Count a Produce request's record bytes; its throttle time (0: within the quota)."""
        if not self._table.has(PRODUCER_BYTE_RATE):
            return 0
        size = 0
        for topic in req.topic_data:
            for pd in topic.partition_data:
                if pd.records:
                    size += len(pd.records)
        return self._record(PRODUCER_BYTE_RATE, ctx.session, ctx.header.client_id, size)[0]

    def record_fetch(self, ctx: RequestContext, req: Any, answer: dict[str, Any]) -> None:
        """Count a consumer Fetch answer's record bytes; when that is over the quota, set its
        ``throttle_time_ms`` and empty its record sets."""
        if not self._table.has(CONSUMER_BYTE_RATE) or _replica_id(ctx.version, req) >= 0:
            return
        parts = [p for t in answer["responses"] for p in t["partitions"]]
        size = sum(len(p["records"]) for p in parts if p.get("records"))
        ms, rate, now_ms = self._record(CONSUMER_BYTE_RATE, ctx.session, ctx.header.client_id, size)
        if ms:
            rate.record(-size, now_ms)  # Kafka's unrecordQuotaSensor: these bytes are not sent
            for p in parts:
                if p.get("records"):
                    p["records"] = b""
            answer["throttle_time_ms"] = max(answer.get("throttle_time_ms", 0), ms)

    def fetch_cap(self, ctx: RequestContext, req: Any) -> int | None:
        """The most record bytes one consumer Fetch may carry (Kafka's getMaxValueInQuotaWindow):
        consumer_byte_rate x (quota.window.num - 1) x the window in seconds, so a throttled
        consumer cannot take a whole max_bytes in one answer; None when it has no quota (and for
        followers). The first batch is still sent whatever the cap, as with max_bytes."""
        if not self._table.has(CONSUMER_BYTE_RATE) or _replica_id(ctx.version, req) >= 0:
            return None
        tags = self._table.tags(
            CONSUMER_BYTE_RATE, user_of(ctx.session.principal), ctx.header.client_id or ""
        )
        bound = self._table.bound(CONSUMER_BYTE_RATE, tags)
        if bound is None:
            return None
        return int(bound * (self._samples - 1) * self._window_ms / 1000)

    def mutation_quota(self, ctx: RequestContext, strict_since: int) -> MutationQuota | None:
        """The ``controller_mutation_rate`` of the request's client, for CreateTopics,
        CreatePartitions and DeleteTopics (None: no such quota applies). Strict from version
        ``strict_since`` on (such clients understand THROTTLING_QUOTA_EXCEEDED), permissive below."""
        table = self._table
        if not table.has(CONTROLLER_MUTATION_RATE):
            return None
        tags = table.tags(
            CONTROLLER_MUTATION_RATE, user_of(ctx.session.principal), ctx.header.client_id or ""
        )
        bound = table.bound(CONTROLLER_MUTATION_RATE, tags)
        if bound is None:
            return None
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket()
        burst = bound * self._samples * self._window_ms / 1000
        return MutationQuota(bucket, bound, burst, ctx.version >= strict_since, ctx.session)

    def after_request(self, ctx: RequestContext, req: Any, result: Any, started: float) -> Any:
        """Count the time since ``started`` (time.perf_counter) against ``request_percentage``;
        the result, its ``throttle_time_ms`` raised to the throttle time (when awaitable: once done)."""
        if not self._request_on:
            return result
        api_key = ctx.header.api_key
        if (
            api_key in _EXEMPT_APIS
            or (api_key == FETCH and _replica_id(ctx.version, req) >= 0)
            or (api_key == 0 and req.acks == 0)
        ):
            return result
        percent_s = (time.perf_counter() - started) * 100
        ms = self._record(
            REQUEST_PERCENTAGE, ctx.session, ctx.header.client_id, percent_s, max_ms=self._window_ms
        )[0]
        if not ms:
            return result
        if isinstance(result, dict):
            _raise_throttle(result, ms)
        elif inspect.isawaitable(result):
            return _throttled(result, ms)
        return result

    def _record(
        self, key: str, session: Session, client_id: str | None, value: float, max_ms: int | None = None
    ) -> tuple[int, SampledRate, int]:
        """(throttle time, the rate recorded to, now in ms); a throttle time also goes to the session."""
        table = self._table
        tags = table.tags(key, user_of(session.principal), client_id or "")
        rates = self._rates[key]
        rate = rates.get(tags)
        if rate is None:
            rate = rates[tags] = SampledRate(self._samples, self._window_ms)
        now_ms = int(time.monotonic() * 1000)
        bound = table.bound(key, tags)
        if bound is None:
            rate.record(value, now_ms)
            return 0, rate, now_ms
        ms = record_and_throttle(rate, value, bound, now_ms, max_ms)
        if ms > session.throttle_ms:
            session.throttle_ms = ms
        return ms, rate, now_ms

    # -- the admin APIs ---------------------------------------------------------------------------
    async def describe(self, flt: QuotaFilter) -> list[tuple[Entity, dict[str, float]]]:
        """The entities that pass ``flt`` with their quotas (in a cluster: read from ZooKeeper now)."""
        if self.zk is not None:
            await self.refresh()
        if flt.ip_only:
            return []  # no IP quotas are kept here
        found = [(e, dict(v)) for e, v in self._table.quotas.items() if matches(e, flt)]
        return sorted(found, key=lambda item: (_order(item[0][0]), _order(item[0][1])))

    async def alter(self, changes: dict[Entity, dict[str, float | None]]) -> None:
        """Apply checked changes (``{entity: {key: value, or None to remove}}``) durably, then here."""
        users: dict[str, dict[str, str | None]] = {}
        others: dict[str, dict[str, str | None]] = {}
        for entity, change in changes.items():
            text = {k: None if v is None else format_value(k, v) for k, v in change.items()}
            if entity[1] is None:
                assert entity[0] is not None
                users[entity[0]] = text  # user configs are keyed by the name itself (zk_users sanitizes)
            else:
                others[entity_path(entity)] = text
        async with self._lock:
            if users:
                await self._write_users(users)
            if others and self._file is not None:
                await asyncio.to_thread(self._file.apply, others)
            elif others:
                assert self.zk is not None
                for path, change in others.items():
                    await self.zk.run(write_zk_entity, self.zk.client, path, change)
            quotas = {e: dict(v) for e, v in self._table.quotas.items()}
            for entity, change in changes.items():
                values = quotas.setdefault(entity, {})
                for key, value in change.items():
                    if value is None:
                        values.pop(key, None)
                    else:
                        values[key] = float(format_value(key, value))
                if not values:
                    del quotas[entity]
            self._replace(quotas)

    # -- keeping current --------------------------------------------------------------------------
    async def start(self, zk: ZkSession | None) -> None:
        self.zk = zk
        loop = asyncio.get_running_loop()

        def fired(_event: Any) -> None:  # one function: kazoo keeps a set of them until the watch fires
            loop.call_soon_threadsafe(self._changed.set)

        self._fired = fired
        if zk is not None:
            await self.refresh()
        self._task = asyncio.ensure_future(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def refresh(self) -> None:
        """Read every entity's quotas again from where they are kept."""
        async with self._lock:
            if self.zk is not None:
                quotas = await self.zk.run(read_zk_quotas, self.zk.client, self._fired)
            else:
                quotas = await asyncio.to_thread(self._load_local)
            self._replace(quotas)

    async def _watch(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                async with asyncio.timeout(RELOAD_S):
                    await self._changed.wait()
            self._changed.clear()
            try:
                if self.zk is not None:
                    await self.refresh()
                elif self._local_changed():
                    await self.refresh()
                    log.info("client quotas re-read from %s", self._file.path if self._file else "?")
                self._forget_idle()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_refresh_failure(log, exc, "client quotas")

    def _local_changed(self) -> bool:
        assert self._file is not None and self._users_file is not None
        return self._file.changed() or self._users_file.changed()

    def _load_local(self) -> Quotas:
        assert self._file is not None and self._users_file is not None
        configs = {f"users/{sanitize(name)}": config for name, config in self._users_file.load().items()}
        configs.update(self._file.load())
        quotas: Quotas = {}
        add_entities(quotas, configs)
        return quotas

    def _replace(self, quotas: Quotas) -> None:
        table = QuotaTable(quotas)
        self._table = table
        self._request_on = table.has(REQUEST_PERCENTAGE)
        self.enabled = self._request_on or table.has(PRODUCER_BYTE_RATE) or table.has(CONSUMER_BYTE_RATE)

    def _forget_idle(self) -> None:
        """Drop the rates of entities idle for a whole window: all their samples have expired."""
        now_ms = int(time.monotonic() * 1000)
        expire = self._samples * self._window_ms
        for rates in self._rates.values():
            for tags in [t for t, r in rates.items() if r.idle_since(now_ms) >= expire]:
                del rates[tags]
        for tags in [t for t, b in self._buckets.items() if b.is_full(now_ms)]:
            del self._buckets[tags]


class MutationQuota:
    """One request's view of its client's ``controller_mutation_rate`` (Kafka's Strict- and
    PermissiveControllerMutationQuota).

    `admit` comes before each topic's mutation with its partition count. Strict: once the bucket
    is below zero the topic is refused (THROTTLING_QUOTA_EXCEEDED, Kafka's message) and the answer
    throttled; a topic admitted while credits remain takes its partitions even past zero (the
    next one pays). Permissive: every topic goes ahead and the answer is throttled once the bucket
    is below zero. `finish` puts the throttle time on the answer and mutes the connection for it.
    """

    def __init__(
        self, bucket: TokenBucket, rate: float, burst: float, strict: bool, session: Session
    ) -> None:
        self.bucket, self.rate, self.burst, self.strict, self.session = bucket, rate, burst, strict, session
        self.throttle_ms = 0

    def admit(self, partitions: int) -> None:
        now_ms = int(time.monotonic() * 1000)
        if self.strict:
            ms = self.bucket.throttle_ms(self.rate, self.burst, now_ms)
            if ms:
                self.throttle_ms = max(self.throttle_ms, ms)
                raise KafkaError(
                    "The throttling quota has been exceeded.", ErrorCode.THROTTLING_QUOTA_EXCEEDED
                )
            self.bucket.take(partitions, self.rate, self.burst, now_ms)
            return
        self.bucket.take(partitions, self.rate, self.burst, now_ms)
        self.throttle_ms = max(self.throttle_ms, self.bucket.throttle_ms(self.rate, self.burst, now_ms))

    def finish(self, answer: dict[str, Any]) -> dict[str, Any]:
        if self.throttle_ms:
            answer["throttle_time_ms"] = max(answer.get("throttle_time_ms", 0), self.throttle_ms)
            self.session.throttle_ms = max(self.session.throttle_ms, self.throttle_ms)
        return answer


def _order(name: str | None) -> tuple[int, str]:
    return (0, "") if name is None else (1, name)


def _raise_throttle(response: dict[str, Any], ms: int) -> None:
    if "throttle_time_ms" in response and response["throttle_time_ms"] < ms:
        response["throttle_time_ms"] = ms


async def _throttled(pending: Awaitable[Any], ms: int) -> Any:
    result = await pending
    if isinstance(result, dict):
        _raise_throttle(result, ms)
    return result
