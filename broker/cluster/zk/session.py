"""The broker's ZooKeeper session (kazoo), bridged to the event loop.

- Reads and writes are plain kazoo calls bounded by ``OP_TIMEOUT_S``; they run
  in worker threads of the session's own pool (`run`), never on the loop, and
  never in the loop's default executor: a ZooKeeper that hangs would otherwise
  take every worker thread and stall the fsyncs that acks=all writes wait for.
- One-shot watches: every read in a snapshot re-arms a watch whose firing
  calls ``on_change`` on the loop (`watch`); the cluster re-reads everything it
  needs then. Level-triggered: a missed or coalesced event only delays the
  next snapshot, it cannot leave a stale view behind.
- Session state changes (connected, suspended, lost) reach ``on_state`` on the
  loop: after a lost session the ephemeral znodes (our registration, the
  controller claim) are gone and must be created again.

kazoo's default connection retry backs off for up to an hour; ours retries
forever with at most a second between attempts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.retry import KazooRetry

log = logging.getLogger("minikafka.zookeeper")

OP_TIMEOUT_S = 5.0
POOL_THREADS = 8  # the refresh, ISR writes of several partitions, ACL and quota watchers at once
T = TypeVar("T")

# What a ZooKeeper that is down, hung or out of reach raises through `ZkSession.run`.
UNREACHABLE = (
    ConnectionClosedError,
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
    TimeoutError,
)


def log_refresh_failure(logger: logging.Logger, exc: Exception, what: str) -> None:
    """A background re-read of ``what`` failed and the current ones are kept: one warning line if
    ZooKeeper only cannot be reached now, a traceback for anything else."""
    if isinstance(exc, UNREACHABLE):
        logger.warning("ZooKeeper unreachable (%r): keeping the current %s", exc, what)
    else:
        logger.exception("re-reading %s failed; keeping the current ones", what)


class ZkSession:
    def __init__(
        self,
        hosts: str,
        session_timeout_ms: int,
        loop: asyncio.AbstractEventLoop,
        on_change: Callable[[], None],
        on_state: Callable[[str], None],
    ) -> None:
        self._loop = loop
        self._on_change = on_change
        self._on_state = on_state
        self.client = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0),
            command_retry=KazooRetry(max_tries=3, delay=0.1, backoff=2, max_delay=1.0),
        )
        self.client.add_listener(self._state_listener)
        self._pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="zookeeper")

    def start(self, timeout_s: float) -> None:
        """Connect (blocking, before the broker serves); raises on timeout."""
        self.client.start(timeout=timeout_s)

    def close(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()
            self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def connected(self) -> bool:
        return bool(self.client.connected)

    @property
    def session_id(self) -> int:
        client_id = self.client.client_id
        return int(client_id[0]) if client_id else -1

    def _state_listener(self, state: str) -> None:
        name = {
            KazooState.CONNECTED: "connected",
            KazooState.SUSPENDED: "suspended",
            KazooState.LOST: "lost",
        }.get(state, str(state))
        self._loop.call_soon_threadsafe(self._on_state, name)

    def watch(self, _event: Any) -> None:
        """A kazoo watch callback (any thread): tell the loop something changed."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._on_change)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking kazoo call in a worker thread of the session's pool."""
        call = self._loop.run_in_executor(self._pool, functools.partial(fn, *args))
        async with asyncio.timeout(OP_TIMEOUT_S * 3):
            return await call
