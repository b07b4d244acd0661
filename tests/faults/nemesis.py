"""The nemesis: a seeded schedule of faults against ZooKeeper and three brokers in network namespaces.

`FaultCluster` runs ZooKeeper (host ``zk``) and brokers ``b1``-``b3`` (node ids 1-3) on one
`netns.Network`, with every client on host ``client``. `Nemesis` injects one fault at a time, each
of a kind in `KINDS`, healing it before the next; the seed fixes the order of the kinds, the targets
(among those the cluster's metadata names at that moment: the controller, a partition's leader, a
group's coordinator) and the durations, so a failing seed can be run again.

Kinds: ``kill-broker``, ``kill-controller``, ``kill-leader``, ``kill-coordinator`` (SIGKILL, then a
restart on the same data dir), ``pause-broker`` (SIGSTOP past the ZooKeeper session timeout),
``kill-zookeeper`` and ``pause-zookeeper``, ``isolate-broker`` (cut from every host),
``cut-from-zookeeper`` (from ZooKeeper only), ``asymmetric`` (a broker hears nobody, everyone hears
it) and ``clients-cut-from-leader`` (the client host cannot reach a partition's leader).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.faults.netns import Network

BROKERS = ["b1", "b2", "b3"]
HOSTS = ["zk", *BROKERS, "client"]
SESSION_TIMEOUT_MS = 6000

KINDS = [
    "kill-broker",
    "kill-controller",
    "kill-leader",
    "kill-coordinator",
    "pause-broker",
    "kill-zookeeper",
    "pause-zookeeper",
    "isolate-broker",
    "cut-from-zookeeper",
    "asymmetric",
    "clients-cut-from-leader",
]


@dataclass
class Fault:
    kind: str
    target: str
    start: float  # wall-clock time the fault began
    healed: float  # wall-clock time it was healed (the broker restarted, the links back)


class FaultCluster:
    """ZooKeeper and three brokers on ``net``; processes can be killed, paused and restarted."""

    def __init__(self, net: Network, directory: Path) -> None:
        self.net = net
        self.directory = directory
        self.env = {
            "MINIKAFKA_ZOOKEEPER_CONNECT": f"{net.address('zk')}:2181",
            "MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            "MINIKAFKA_REPLICA_LAG_TIME_MAX_MS": "5000",
            "MINIKAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "3",
            "MINIKAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "3",
            "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.paused: set[str] = set()

    def data(self, broker: str) -> Path:
        return self.directory / broker / "data"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.net.address(b)}:9092" for b in BROKERS)

    def start(self) -> FaultCluster:
        self.start_zookeeper()
        for b in BROKERS:
            self.start_broker(b)
        return self

    def start_zookeeper(self) -> None:
        self.procs["zk"] = self.net.start_zookeeper("zk", self.directory / "zookeeper")

    def start_broker(self, b: str) -> None:
        node = BROKERS.index(b) + 1
        self.procs[b] = self.net.start_broker(b, self.data(b), {**self.env, "MINIKAFKA_NODE_ID": str(node)})

    def kill(self, host: str) -> None:
        proc = self.procs[host]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        self.paused.discard(host)

    def pause(self, host: str) -> None:
        os.kill(self.procs[host].pid, signal.SIGSTOP)
        self.paused.add(host)

    def resume(self, host: str) -> None:
        os.kill(self.procs[host].pid, signal.SIGCONT)
        self.paused.discard(host)

    def restart(self, host: str) -> None:
        if host == "zk":
            self.start_zookeeper()
        else:
            self.start_broker(host)

    def heal_all(self) -> None:
        """Links back, paused processes resumed, dead ones restarted."""
        self.net.heal()
        for host in list(self.paused):
            self.resume(host)
        for host in ["zk", *BROKERS]:
            if self.procs[host].poll() is not None:
                self.restart(host)

    def query(self, *args: str, timeout: float = 60) -> Any:
        """``tests.faults.workload ARGS`` run on the client host; its JSON answer."""
        res = self.net.run("client", [sys.executable, "-m", "tests.faults.workload", *args], timeout=timeout)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:1])} failed: {res.stderr[-2000:]}")
        return json.loads(res.stdout)

    def workload(self, *args: str) -> subprocess.Popen[str]:
        """``tests.faults.workload ARGS`` started in the background on the client host."""
        repo = Path(__file__).resolve().parents[2]
        argv = ["ip", "netns", "exec", self.net.ns("client"), sys.executable, "-m", "tests.faults.workload"]
        with open(self.directory / f"{args[0]}-{time.monotonic_ns()}.err", "w") as err:
            proc = subprocess.Popen(
                [*argv, *args],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONPATH": str(repo)},
                cwd=repo,
                start_new_session=True,
            )
        self.net.procs.append(proc)
        return proc


class Nemesis:
    """Seeded faults against ``cluster``; targets chosen from ``topic``'s leaders and ``group``'s coordinator."""

    def __init__(self, cluster: FaultCluster, seed: int, topic: str, group: str) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.topic = topic
        self.group = group
        self.faults: list[Fault] = []

    def schedule(self) -> list[str]:
        """Every kind once (or those ``FAULT_KINDS`` names, space-separated), in the seed's order."""
        kinds = os.environ.get("FAULT_KINDS", "").split() or list(KINDS)
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"FAULT_KINDS: unknown {sorted(unknown)}; known: {KINDS}")
        self.rng.shuffle(kinds)
        return kinds

    def _broker(self, node: int) -> str:
        return BROKERS[node - 1] if 1 <= node <= len(BROKERS) else self.rng.choice(BROKERS)

    def _whois(self) -> dict[str, Any]:
        try:
            return self.cluster.query("whois", self.cluster.bootstrap, self.topic, self.group)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError):
            return {"controller": -1, "leaders": {}, "coordinator": -1}

    def target(self, kind: str) -> str:
        who = self._whois()
        if kind == "kill-controller":
            return self._broker(who["controller"])
        if kind in ("kill-leader", "clients-cut-from-leader"):
            leaders = [leader for leader, _ in who["leaders"].values()]
            return self._broker(self.rng.choice(leaders) if leaders else -1)
        if kind == "kill-coordinator":
            return self._broker(who["coordinator"])
        if kind in ("kill-zookeeper", "pause-zookeeper"):
            return "zk"
        return self.rng.choice(BROKERS)

    def inject(self, kind: str) -> Fault:
        """Cause one fault, hold it for its seeded duration, heal it; the record of it."""
        c, net = self.cluster, self.cluster.net
        target = self.target(kind)
        start = time.time()
        heal: Callable[[], None]
        if kind.startswith("kill-"):
            c.kill(target)
            hold = self.rng.uniform(2, 8)
            heal = lambda: c.restart(target)  # noqa: E731
        elif kind == "pause-broker":
            c.pause(target)
            hold = SESSION_TIMEOUT_MS / 1000 + self.rng.uniform(1, 4)
            heal = lambda: c.resume(target)  # noqa: E731
        elif kind == "pause-zookeeper":
            c.pause(target)
            hold = self.rng.uniform(2, 5)
            heal = lambda: c.resume(target)  # noqa: E731
        else:
            others = [h for h in HOSTS if h != target]
            if kind == "isolate-broker":
                for other in others:
                    net.cut(target, other)
            elif kind == "cut-from-zookeeper":
                net.cut(target, "zk")
            elif kind == "asymmetric":
                for other in others:
                    net.cut_one_way(target, other)
            elif kind == "clients-cut-from-leader":
                net.cut("client", target)
            else:
                raise ValueError(kind)
            hold = self.rng.uniform(6, 12)
            heal = net.heal
        time.sleep(hold)
        heal()
        fault = Fault(kind, target, start, time.time())
        self.faults.append(fault)
        time.sleep(self.rng.uniform(3, 6))
        return fault

    def record(self) -> list[dict[str, Any]]:
        return [asdict(f) for f in self.faults]
