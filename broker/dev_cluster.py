"""`make cluster`: ZooKeeper and N brokers on this machine, stopped together on Ctrl-C.

    python -m broker.dev_cluster [--brokers 3] [--data-dir ./data] [--first-port 9092]
                                 [--zookeeper HOST:PORT | --zookeeper-port 2181]
                                 [--racks RACK,RACK,...]

Broker n (1..N) listens on 127.0.0.1:(first-port + n - 1) with its data in
``<data-dir>/broker-<n>``. ``--racks`` gives the brokers a ``broker.rack``
each, in turn: with ``--brokers 6 --racks a,b,c`` brokers 1 and 4 are in
rack a, 2 and 5 in b, 3 and 6 in c (other settings, such as
``MINIKAFKA_REPLICA_SELECTOR_CLASS``, come from the environment, which every
broker inherits). Unless ``--zookeeper`` names a running ensemble,
Debian's ZooKeeper (package ``zookeeper``) is started as a plain Java process
with its data in ``<data-dir>/zookeeper``. Every process's output goes to
``<data-dir>/<name>.log``. SIGINT/SIGTERM stop the brokers (cleanly, SIGTERM)
and then ZooKeeper. Exit codes: 0 after a clean stop, 1 if something could not
start (one line says what).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")  # Debian's log4j settings
INSTALL_HINT = "Debian's ZooKeeper is not installed: apt-get install zookeeper (or make zookeeper-tools)"


def zookeeper_status(port: int, timeout: float = 1.0) -> str:
    """The answer to ZooKeeper's ``srvr`` four-letter command on 127.0.0.1:``port`` ("" if none)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"srvr")
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
    except OSError:
        return ""
    return b"".join(chunks).decode(errors="replace")


def write_zoo_cfg(directory: Path, host: str, port: int) -> Path:
    """``directory/zoo.cfg`` for a standalone ZooKeeper on ``host:port`` with its data in ``directory/data``.

    tickTime is 100 ms: ZooKeeper expires sessions in buckets of one tick, so a
    dead broker's session ends within 100 ms of its timeout (failover time is
    session timeout + that + election). Session timeouts may range from
    minSessionTimeout (2 ticks) to maxSessionTimeout (20 s, set explicitly:
    the default, 20 ticks, would be 2 s). No admin server (it would take port
    8080); ``srvr`` tells readiness.
    """
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    cfg = directory / "zoo.cfg"
    cfg.write_text(
        f"tickTime=100\ndataDir={data}\nclientPort={port}\nclientPortAddress={host}\n"
        "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\nmaxSessionTimeout=20000\n"
    )
    return cfg


def start_zookeeper(
    directory: Path, port: int, log_path: Path, timeout: float = 30.0
) -> subprocess.Popen[bytes]:
    """A standalone ZooKeeper on 127.0.0.1:``port``, ready (``srvr`` reports standalone) when this returns.

    Raises RuntimeError (with the log's tail) if it does not come up.
    """
    if not ZOOKEEPER_JAR.is_file():
        raise RuntimeError(INSTALL_HINT)
    cfg = write_zoo_cfg(directory, "127.0.0.1", port)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [
                "java",
                "-cp",
                f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}",
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while "Mode: standalone" not in zookeeper_status(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError(f"ZooKeeper did not start on port {port}: {log_path.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc


def stop(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    """SIGTERM (SIGCONT first, in case it was paused), then SIGKILL after ``timeout``; the exit code."""
    if proc.poll() is None:
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                break
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m broker.dev_cluster", description=__doc__.splitlines()[0] if __doc__ else None
    )
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--data-dir", default="./data")
    p.add_argument("--first-port", type=int, default=9092)
    p.add_argument("--zookeeper", help="HOST:PORT of a running ZooKeeper (default: start one)")
    p.add_argument("--zookeeper-port", type=int, default=2181)
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument(
        "--racks", default="", help="comma-separated broker.rack values, given to the brokers in turn"
    )
    args = p.parse_args(argv)
    racks = [r.strip() for r in args.racks.split(",") if r.strip()]
    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    stopping = False

    def request_stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    zookeeper = None
    brokers: list[subprocess.Popen[bytes]] = []
    try:
        connect = args.zookeeper
        if connect is None:
            zookeeper = start_zookeeper(data / "zookeeper", args.zookeeper_port, data / "zookeeper.log")
            connect = f"127.0.0.1:{args.zookeeper_port}"
        for n in range(1, args.brokers + 1):
            env = {
                **os.environ,
                "MINIKAFKA_ZOOKEEPER_CONNECT": connect,
                "MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": str(args.session_timeout_ms),
                "MINIKAFKA_NODE_ID": str(n),
            }
            if racks:
                env["MINIKAFKA_BROKER_RACK"] = racks[(n - 1) % len(racks)]
            port = args.first_port + n - 1
            with open(data / f"broker-{n}.log", "ab") as log:
                brokers.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "broker",
                            "--data-dir",
                            str(data / f"broker-{n}"),
                            "--port",
                            str(port),
                        ],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            rack = f", rack {env['MINIKAFKA_BROKER_RACK']}" if racks else ""
            print(
                f"broker {n} on 127.0.0.1:{port}{rack}, data in {data / f'broker-{n}'},"
                f" log {data / f'broker-{n}.log'}"
            )
        print(f"ZooKeeper at {connect}; Ctrl-C stops everything", flush=True)
        while not stopping:
            exited = [i + 1 for i, b in enumerate(brokers) if b.poll() is not None]
            if exited:
                print(
                    f"minikafka: broker {exited[0]} exited; see {data / f'broker-{exited[0]}.log'}",
                    file=sys.stderr,
                )
                return 1
            time.sleep(0.2)
        return 0
    except (RuntimeError, OSError) as exc:
        print(f"minikafka: cannot start the cluster: {exc}", file=sys.stderr)
        return 1
    finally:
        for b in brokers:
            stop(b)
        if zookeeper is not None:
            stop(zookeeper)


if __name__ == "__main__":
    sys.exit(main())
