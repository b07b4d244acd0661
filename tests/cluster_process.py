"""Real ZooKeeper and a cluster of real broker processes for tests (no tests here).

`ZooKeeperProcess` runs Debian's ZooKeeper (package ``zookeeper``) as a plain
Java process on a free 127.0.0.1 port with its own data dir; it is ready when
the ``srvr`` four-letter command reports standalone mode. `Cluster` starts N
brokers (`tests.broker_process.BrokerProcess`) as members, node ids 1..N,
each with its own data dir, and optionally its own ``broker.rack``, settings and a
Prometheus metrics port. Everything stops when the test's context exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from broker.config import env_name
from broker.dev_cluster import INSTALL_HINT, ZOOKEEPER_JAR, start_zookeeper, stop
from tests.broker_process import BrokerProcess, free_port

QUIET = logging.getLogger("tests.librdkafka")  # librdkafka's connection errors go here, not to stderr

# Short timeouts so failover happens within a test (the ZooKeeper allows 200 ms to 20 s).
SESSION_TIMEOUT_MS = 6000


def zookeeper_available() -> bool:
    return ZOOKEEPER_JAR.is_file()


@contextlib.contextmanager
def zookeeper_for_test(directory: Path) -> Iterator[ZooKeeperProcess]:
    """A running ZooKeeper in ``directory`` for one test (the ``zookeeper`` fixtures of tests/cluster
    and tests/tiered); the test is skipped when Debian's ZooKeeper is not installed."""
    if not zookeeper_available():
        pytest.skip(INSTALL_HINT)
    with ZooKeeperProcess(directory) as zk:
        yield zk


class ZooKeeperProcess:
    """broker.dev_cluster's ZooKeeper on a free port, for one test."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = directory / "zookeeper.log"

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeperProcess:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.proc = start_zookeeper(self.directory, self.port, self.log_path)
        return self

    def pause(self) -> None:
        """SIGSTOP: ZooKeeper hangs (connections stay open, nothing is answered)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)
            stop(self.proc)
            self.proc = None

    def __enter__(self) -> ZooKeeperProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Cluster:
    """``size`` brokers (node ids 1..size) of one cluster on one ZooKeeper.

    ``config``: broker keys for every broker (dots as underscores); ``racks``:
    {node id: its broker.rack}; ``broker_config``: {node id: {key: value}} for
    single brokers (Kafka's key names); ``metrics``: give each broker a metrics
    port (``metrics_ports``, for `metrics_url`).
    """

    def __init__(
        self,
        directory: Path,
        zookeeper: ZooKeeperProcess,
        size: int = 3,
        *,
        racks: Mapping[int, str] | None = None,
        broker_config: Mapping[int, Mapping[str, str]] | None = None,
        metrics: bool = False,
        **config: str,
    ) -> None:
        self.zookeeper = zookeeper
        self.directory = directory
        self.racks = dict(racks or {})
        self.broker_config = {node: dict(keys) for node, keys in (broker_config or {}).items()}
        self.metrics_ports = {node: free_port() for node in range(1, size + 1)} if metrics else {}
        self.config = {
            "MINIKAFKA_ZOOKEEPER_CONNECT": zookeeper.connect_string,
            "MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "MINIKAFKA_REPLICA_LAG_TIME_MAX_MS": "5000",
            "MINIKAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "5",
            "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            **{f"MINIKAFKA_{k.upper().replace('.', '_')}": v for k, v in config.items()},
        }
        self.brokers = {
            node: BrokerProcess(directory / f"broker-{node}" / "data", env=self._env(node))
            for node in range(1, size + 1)
        }
        for b in self.brokers.values():
            b.data_dir.parent.mkdir(parents=True, exist_ok=True)

    def _env(self, node: int) -> dict[str, str]:
        """The environment of broker ``node``: the common settings, then its own."""
        env = {**self.config, "MINIKAFKA_NODE_ID": str(node)}
        env.update({env_name(key): value for key, value in self.broker_config.get(node, {}).items()})
        if node in self.racks:
            env["MINIKAFKA_BROKER_RACK"] = self.racks[node]
        if node in self.metrics_ports:
            env["MINIKAFKA_METRICS_PORT"] = str(self.metrics_ports[node])
        return env

    def metrics_url(self, node: int) -> str:
        return f"http://127.0.0.1:{self.metrics_ports[node]}/metrics"

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def start(self, timeout: float = 30.0) -> Cluster:
        """Start every broker and wait until each one sees all of them registered."""
        for b in self.brokers.values():
            b.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.registered(node) == set(self.brokers) for node in self.brokers):
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("the brokers did not all register in ZooKeeper")

    def registered(self, node: int) -> set[int]:
        """The brokers that ``node`` lists in its Metadata answer (empty if it does not answer)."""
        from confluent_kafka.admin import AdminClient

        try:
            md = AdminClient(
                {"bootstrap.servers": self.brokers[node].bootstrap, "logger": QUIET}
            ).list_topics(timeout=2)
        except Exception:
            return set()
        return set(md.brokers)

    def add_broker(self, node: int, timeout: float = 30.0) -> None:
        """Start one more broker (node id ``node``) in this cluster and wait until it is registered."""
        broker = BrokerProcess(self.directory / f"broker-{node}" / "data", env=self._env(node))
        broker.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.brokers[node] = broker
        broker.start()
        deadline = time.monotonic() + timeout
        while node not in self.registered(min(self.brokers)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"broker {node} did not register in ZooKeeper")
            time.sleep(0.2)

    def restart(self, node: int) -> None:
        """Start a stopped or killed broker again on its port and data dir."""
        self.brokers[node].start(timeout=40)

    def kill(self, node: int) -> None:
        self.brokers[node].kill()

    def pause(self, node: int) -> None:
        proc = self.brokers[node].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        proc = self.brokers[node].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        for b in self.brokers.values():
            if b.proc is not None:
                os.kill(b.proc.pid, signal.SIGCONT)
                b.stop()

    def log(self, node: int) -> str:
        return self.brokers[node].log()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
