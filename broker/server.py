"""Run a broker: listen, serve, shut down cleanly.

Shutdown (SIGTERM/SIGINT or `BrokerServer.stop()`): stop accepting, answer
parked fetches with what they have, wait (up to a deadline) for in-flight
requests to be answered and written, close connections, then flush and close
every log (checkpoints and the clean-shutdown marker are written by storage).
Background log maintenance (`broker.log_tasks`) starts once listening and stops,
letting its current step finish, before the logs are closed.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import signal
import time
from collections.abc import Callable

from broker import handlers  # noqa: F401  (registers every API handler)
from broker.broker import Broker
from broker.config import BrokerConfig
from broker.connection import KafkaConnection
from broker.tls_accept import TlsAccept
from storage.fs import FileSystem

log = logging.getLogger("minikafka.server")

SHUTDOWN_DEADLINE_S = 10.0


class BrokerServer:
    def __init__(self, config: BrokerConfig, fs: FileSystem | None = None) -> None:
        """``fs``: the storage filesystem seam (tests inject a `storage.fs.FaultyFileSystem`)."""
        self.config = config
        self._fs = fs
        self.broker: Broker | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._stopped = asyncio.Event()
        self.port: int = int(config["port"])  # the first listener's bound port, once started

    async def start(self) -> None:
        self.broker = Broker(self.config, self._fs)
        loop = asyncio.get_running_loop()
        broker = self.broker
        metrics_port = int(self.config["metrics.port"])
        if metrics_port:  # up before the Kafka port accepts, so a scrape never races start-up
            from broker.metrics import BrokerMetrics

            broker.metrics = BrokerMetrics(broker)
            broker.metrics.serve(self.config["metrics.host"], metrics_port)
            log.info("metrics on http://%s:%d/metrics", self.config["metrics.host"], metrics_port)
        await broker.security.start()  # credentials and ACLs loaded before any client is served
        await broker.dynamic.start()  # dynamic broker configs: kept current from here on
        bound = {}
        for listener in self.config.served_listeners():
            context = broker.security.ssl_context(listener.name)
            if context is None:
                factory: Callable[[], asyncio.BaseProtocol] = functools.partial(
                    KafkaConnection, broker, listener.name
                )
            else:  # TLS after our own accept, so that handshakes count as connections
                factory = functools.partial(TlsAccept, broker, listener.name, context)
            server = await loop.create_server(
                factory,
                host=listener.host,
                port=listener.port,
                reuse_address=True,
                backlog=1024,
                start_serving=False,
            )
            self._servers.append(server)
            bound[listener.name] = server.sockets[0].getsockname()[1]
            log.info(
                "listener %s (%s) on %s:%d",
                listener.name,
                listener.protocol,
                listener.host,
                bound[listener.name],
            )
        self.port = next(iter(bound.values()))
        broker.advertise(bound)  # what Metadata tells clients
        # Bound (so the registration can name the ports) but not listening until the broker is
        # registered and has read the cluster's metadata, as Kafka opens its listeners last: a
        # client connecting earlier is refused and tries another broker, rather than being told
        # from an empty view that its topics do not exist.
        await broker.cluster.start()
        for server in self._servers:
            await server.start_serving()
        broker.log_tasks.start()
        if broker.remote_logs is not None:
            broker.remote_logs.start()
        log.info(
            "minikafka broker %d listening on %s:%d (advertised %s:%d), data in %s",
            broker.node_id,
            self.config["host"],
            self.port,
            broker.cluster.node.host,
            broker.cluster.node.port,
            self.config.data_dir,
        )

    async def stop(self) -> None:
        if self._stopped.is_set() or self.broker is None:
            self._stopped.set()
            return
        broker = self.broker
        log.info("shutting down")
        await broker.cluster.hand_over(SHUTDOWN_DEADLINE_S)  # a cluster member's leaderships move first
        for server in self._servers:
            server.close()
        broker.close_waiters()
        deadline = time.monotonic() + SHUTDOWN_DEADLINE_S
        while time.monotonic() < deadline and any(not c.idle for c in broker.connections):
            await asyncio.sleep(0.01)
        for conn in list(broker.connections):
            if conn.transport is not None:
                while time.monotonic() < deadline and conn.transport.get_write_buffer_size():
                    await asyncio.sleep(0.01)
            conn.close()
        await asyncio.sleep(0)
        await broker.cluster.stop()
        await broker.security.stop()
        await broker.dynamic.stop()
        await broker.log_tasks.stop()
        if broker.remote_logs is not None:
            await broker.remote_logs.stop()
        if broker.metrics is not None:
            broker.metrics.close()
        broker.close()
        log.info("shut down cleanly")
        self._stopped.set()


def tune_allocator() -> None:
    """Keep glibc from hoarding freed request/response buffers.

    glibc raises its mmap threshold each time a large mmapped block is freed,
    after which megabyte-sized produce and fetch buffers come from the heap and
    fragment it: RSS then grows with traffic instead of staying flat. A fixed
    threshold keeps every buffer over 128 KiB in its own mapping, returned to
    the OS when freed. No effect (and no error) on other C libraries.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_mmap_threshold = -3
    libc.mallopt(m_mmap_threshold, 128 * 1024)


async def run(config: BrokerConfig) -> None:
    """Serve until SIGTERM/SIGINT, then shut down cleanly.

    The signal handlers are installed before anything starts, so a signal that
    arrives during start-up still ends in a clean shutdown, never a kill.
    """
    tune_allocator()
    loop = asyncio.get_running_loop()
    stop_requested = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_requested.set)
    server = BrokerServer(config)
    await server.start()
    await stop_requested.wait()
    await server.stop()
