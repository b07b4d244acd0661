"""Hosts in network namespaces for fault tests: ZooKeeper, brokers and test clients, each on its own address.

`Network` makes one namespace per host (``<prefix>-<name>``), each with a
veth pair whose other end sits on a bridge inside a switch namespace, so
nothing of the test touches the host's own network. Hosts get 10.77.0.<n>/24.
`cut(a, b)` drops every packet between two hosts with iptables INPUT rules in
both of them; `heal()` removes all such rules. Processes run with
``ip netns exec``; everything (processes, namespaces) is removed on exit, and
a run that was killed leaves nothing that the next one does not clear first
(namespaces are named after a fixed prefix and swept at start).

Needs root, iproute2 and iptables (`make test-faults` installs them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from broker.dev_cluster import ZOOKEEPER_CONF, ZOOKEEPER_JAR, write_zoo_cfg

REPO = Path(__file__).resolve().parents[2]
PREFIX = "mkf"
SUBNET = "10.77.0"


def available() -> str | None:
    """Why fault tests cannot run here, or None if they can."""
    if os.geteuid() != 0:
        return "fault tests need root (network namespaces, iptables)"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"fault tests need {tool} (make test-faults installs it)"
    if not ZOOKEEPER_JAR.is_file():
        return "fault tests need Debian's zookeeper (make test-faults installs it)"
    return None


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {res.stderr.strip()}")
    return res


def sweep() -> None:
    """Remove namespaces left by an earlier run that was killed (their processes go with them)."""
    listed = _sh("ip", "netns", "list", check=False).stdout.split()
    for name in listed:
        if name.startswith(f"{PREFIX}-"):
            _kill_in(name)
            _sh("ip", "netns", "delete", name, check=False)


def _kill_in(ns: str) -> None:
    for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


class Network:
    """Hosts ``names`` on one switch; ``address(name)`` is where each one listens."""

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)
        self.addresses = {name: f"{SUBNET}.{i + 1}" for i, name in enumerate(self.names)}
        self.switch = f"{PREFIX}-sw"
        self.procs: list[subprocess.Popen[Any]] = []

    def ns(self, name: str) -> str:
        return f"{PREFIX}-{name}"

    def address(self, name: str) -> str:
        return self.addresses[name]

    def up(self) -> Network:
        sweep()
        _sh("ip", "netns", "add", self.switch)
        _sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        for i, name in enumerate(self.names):
            ns = self.ns(name)
            _sh("ip", "netns", "add", ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            switch_end = f"port{i}"
            _sh(
                "ip",
                "-n",
                ns,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                switch_end,
                "netns",
                self.switch,
            )
            _sh("ip", "-n", ns, "addr", "add", f"{self.addresses[name]}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", self.switch, "link", "set", switch_end, "master", "br0")
            _sh("ip", "-n", self.switch, "link", "set", switch_end, "up")
        return self

    def down(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for name in self.names:
            _kill_in(self.ns(name))
            _sh("ip", "netns", "delete", self.ns(name), check=False)
        _sh("ip", "netns", "delete", self.switch, check=False)

    def __enter__(self) -> Network:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- faults ---------------------------------------------------------------------------------
    def cut(self, a: str, b: str) -> None:
        """Drop everything between hosts ``a`` and ``b`` (at each receiver, both ways)."""
        for here, there in ((a, b), (b, a)):
            _sh(
                "ip",
                "netns",
                "exec",
                self.ns(here),
                "iptables",
                "-A",
                "INPUT",
                "-s",
                self.addresses[there],
                "-j",
                "DROP",
            )

    def cut_one_way(self, receiver: str, sender: str) -> None:
        """Drop what ``sender`` sends to ``receiver``; the other direction still flows."""
        _sh(
            "ip", "netns", "exec", self.ns(receiver),
            "iptables", "-A", "INPUT", "-s", self.addresses[sender], "-j", "DROP",
        )  # fmt: skip

    def heal(self) -> None:
        for name in self.names:
            _sh("ip", "netns", "exec", self.ns(name), "iptables", "-F", "INPUT")

    # -- processes ------------------------------------------------------------------------------
    def spawn(
        self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside host ``name``'s namespace, output to ``log``; killed on `down`."""
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns(name), *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                cwd=REPO,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def run(self, name: str, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` to completion inside host ``name``'s namespace."""
        return subprocess.run(
            ["ip", "netns", "exec", self.ns(name), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
        )

    def python(self, name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``python -m tests.faults.client ARGS`` inside host ``name``."""
        res = self.run(name, [sys.executable, "-m", "tests.faults.client", *args], timeout=timeout)
        if res.returncode != 0:
            raise RuntimeError(f"client {' '.join(args)} failed: {res.stderr[-3000:]}")
        return res

    def client(self, name: str, *args: str) -> subprocess.Popen[str]:
        """``python -m tests.faults.client ARGS`` inside host ``name``, in the background (stdout piped)."""
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(name), sys.executable, "-m", "tests.faults.client", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def start_zookeeper(self, name: str, directory: Path) -> subprocess.Popen[bytes]:
        """Debian's ZooKeeper on host ``name``, port 2181, ready when this returns."""
        directory.mkdir(parents=True, exist_ok=True)
        cfg = write_zoo_cfg(directory, self.address(name), 2181)
        proc = self.spawn(
            name,
            [
                "java",
                "-cp",
                f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}",
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(cfg),
            ],
            directory / "zookeeper.log",
        )
        self.wait_listening(name, self.address(name), 2181, proc, directory / "zookeeper.log")
        return proc

    def start_broker(self, name: str, data_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """A broker on host ``name``:9092 with ``env`` (MINIKAFKA_*), listening when this returns."""
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = data_dir.parent / f"{name}.log"
        argv = [
            sys.executable,
            "-m",
            "broker",
            "--data-dir",
            str(data_dir),
            "--host",
            self.address(name),
            "--port",
            "9092",
        ]
        proc = self.spawn(name, argv, log, env)
        self.wait_listening(name, self.address(name), 9092, proc, log)
        return proc

    def wait_listening(
        self, name: str, host: str, port: int, proc: subprocess.Popen[bytes], log: Path
    ) -> None:
        probe = f"import socket; socket.create_connection(({host!r}, {port}), timeout=0.5).close()"
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited: {log.read_text(errors='replace')[-3000:]}")
            if self.run(name, [sys.executable, "-c", probe], timeout=10).returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"{name} is not listening on {host}:{port}: {log.read_text(errors='replace')[-3000:]}"
        )
