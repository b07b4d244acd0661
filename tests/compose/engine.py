"""A real Docker engine for the compose test: Debian's dockerd, a local base image, clean teardown.

No registry can be pulled from here, so the Dockerfile's base image
(``python:3.11-slim-bookworm``) is built locally when absent: a Debian bookworm root
filesystem from Debian's mirror (mmdebstrap) with a venv at /opt/python and the
host's CA certificates (containers reach the package registries only through
the host's trust store), imported under that tag. The Dockerfile itself stays
as it is for people who can pull the real image.

`DockerEngine` starts dockerd as a plain background process unless one already
answers, and on exit stops the one it started and undoes what dockerd leaves
behind (iptables' FORWARD policy DROP and the docker0 bridge), which would
otherwise break later network-namespace tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

BASE_IMAGE = "python:3.11-slim-bookworm"
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")


def run(
    *argv: str, timeout: float = 600, check: bool = True, **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=check, **kw)  # type: ignore[call-overload]


def compose_command() -> list[str]:
    """``docker compose`` (v2 plugin) if present, else Debian's ``docker-compose`` (v1)."""
    if run("docker", "compose", "version", check=False).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"]


def missing_tools() -> list[str]:
    return [t for t in ("dockerd", "docker", "mmdebstrap", "iptables") if shutil.which(t) is None] + (
        []
        if shutil.which("docker-compose") or run("docker", "compose", "version", check=False).returncode == 0
        else ["docker-compose"]
    )


class DockerEngine:
    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None

    def answers(self) -> bool:
        return run("docker", "info", check=False, timeout=30).returncode == 0

    def __enter__(self) -> DockerEngine:
        if self.answers():
            return self  # someone else's engine: use it, leave it running
        self._log = open(self.log_dir / "dockerd.log", "wb")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen(
            ["dockerd"], stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(
                    f"dockerd did not start:\n{(self.log_dir / 'dockerd.log').read_text()[-3000:]}"
                )
            time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        self._log.close()
        run("iptables", "-P", "FORWARD", "ACCEPT", check=False)
        run("ip", "link", "delete", "docker0", check=False)

    def ensure_base_image(self) -> None:
        """Build and import ``python:3.11-slim-bookworm`` from Debian when the engine does not have it."""
        if run("docker", "image", "inspect", BASE_IMAGE, check=False).returncode == 0:
            return
        with tempfile.TemporaryDirectory() as tmp:
            rootfs = Path(tmp) / "rootfs.tar"
            hooks = [
                'chroot "$1" python3 -m venv /opt/python',
                f'mkdir -p "$1{HOST_CA_DIR}" && cp -r {HOST_CA_DIR}/. "$1{HOST_CA_DIR}/" && chroot "$1" update-ca-certificates',
            ]
            run(
                "mmdebstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,python-is-python3,ca-certificates,passwd",
                *[f"--customize-hook={h}" for h in hooks],
                "bookworm",
                str(rootfs),
                timeout=900,
            )
            path = "/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            run("docker", "import", "--change", f"ENV PATH={path}", str(rootfs), BASE_IMAGE, timeout=600)
