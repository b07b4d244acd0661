"""Running tests/flink/job.py as a process of its own, and killing all of it (no tests here).

A PyFlink job run locally is one Python driver and the JVM it starts (a MiniCluster: JobManager
and TaskManager in one process, the map running in its embedded interpreter; in PyFlink's
process mode there would be Python worker processes too). `FlinkRun` starts the driver as the
leader of a new session, so SIGKILL reaches every one of those processes (`session_pids`):
that is the "TaskManager killed" of these tests, with the JobManager lost too, so the next run
has to resume from the checkpoint the killed one left on disk (`latest_checkpoint`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.broker_process import REPO

FLINK_DIR = REPO / "build" / "flink"
JOB = Path(__file__).resolve().parent / "job.py"
INSTALL_HINT = (
    "make test-flink installs PyFlink in build/flink/venv and the connector jars in build/flink/lib"
)


@dataclass(frozen=True)
class FlinkInstall:
    """The apache-flink venv's interpreter and the jars the job loads (connector, Kafka client)."""

    python: Path
    jars: tuple[Path, ...]


def session_pids(sid: int) -> list[int]:
    """Every live process whose session id is ``sid`` (from /proc/PID/stat)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == sid:
            pids.append(int(entry.name))
    return pids


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest complete checkpoint under ``directory`` (``<job id>/chk-N`` holding a
    ``_metadata`` file: Flink writes that last), or None if there is none yet."""
    done = [m.parent for m in directory.glob("*/chk-*/_metadata")]
    if not done:
        return None
    return max(done, key=lambda chk: (chk.stat().st_mtime, int(chk.name.removeprefix("chk-"))))


class FlinkRun:
    """One start of the job: ``args`` are job.py's options, its output and Flink's log go to
    ``directory``. The process group is the session of the driver; `kill` ends all of it."""

    def __init__(self, install: FlinkInstall, directory: Path, args: list[str]) -> None:
        self.install = install
        self.directory = directory
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.output_path = directory / "job.out"
        self.started = 0.0

    def start(self) -> FlinkRun:
        self.directory.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "FLINK_LOG_DIR": str(self.directory), "PYTHONUNBUFFERED": "1"}
        # The job imports PyFlink only, from its own venv; the map runs in the JVM's embedded
        # interpreter (thread mode), which knows that venv's packages only through PYTHONPATH.
        (site,) = (self.install.python.parent.parent / "lib").glob("python3.*/site-packages")
        env["PYTHONPATH"] = str(site)
        with open(self.output_path, "wb") as out:
            self.proc = subprocess.Popen(
                [
                    str(self.install.python),
                    str(JOB),
                    *self.args,
                    "--jars",
                    *map(str, self.install.jars),
                ],
                cwd=self.directory,
                env=env,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started = time.monotonic()
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float) -> int:
        """Asks the job to stop with a draining savepoint (job.py's ``stop``) and returns the
        driver's exit code (0: finished); kills everything and raises after ``timeout`` s."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"stop\n")
        self.proc.stdin.flush()
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        """The driver's exit code once it exits (job finished: 0); kills everything and raises
        AssertionError after ``timeout`` s."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the Flink job did not finish in {timeout:.0f} s\n{self.report()}"
            ) from None

    def send_signal(self, signum: int) -> None:
        """Sends ``signum`` to every process of the run."""
        if self.proc is None:
            return
        for pid in session_pids(self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def kill(self) -> None:
        """SIGKILL the driver, the JVM and anything they started (everything in the session)."""
        if self.proc is None:
            return
        sid = self.proc.pid
        for _ in range(5):
            pids = session_pids(sid)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()

    def flink_logs(self) -> list[Path]:
        return sorted(self.directory.glob("flink-*.log"))

    def report(self, lines: int = 40) -> str:
        """The tail of the driver's output, and where Flink's own log is."""
        try:
            tail = self.output_path.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            tail = []
        logs = ", ".join(map(str, self.flink_logs())) or "none"
        return "job output (tail):\n" + "\n".join(tail) + f"\nFlink log: {logs}"


# One line per finished scenario (records in and out, what was killed, time), printed at the end
# of the session by tests/flink/conftest.py.
RESULTS: list[str] = []
