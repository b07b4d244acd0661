"""Compiling and running the Java checks (tests/java/*.java) with Kafka's own Java client.

The client's jars (kafka-clients 3.9.1 and the codecs it loads) are in ``build/java/lib``,
put there by ``make java-clients`` (tests/java/fetch_jars.py). `compile_checks` compiles the
sources into ``build/java/classes`` when a source or jar is newer than the last compilation.
`run_checks` starts one JVM for a group of checks and reads its stdout, one JSON object a
line: ``{"check": ..., "ok": ..., "detail": ..., "ms": ...}`` per check, ``{"event": ...}``
for progress the caller may act on (see JavaChecks.java).

Contract for the tests: a check passes only if its JVM run printed ``"ok": true`` for it;
a missing check, a JVM that died or a line that is not JSON fails the test with what the
JVM printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.broker_process import REPO
from tests.java.fetch_jars import JARS

SOURCES = REPO / "tests" / "java"
LIB = REPO / "build" / "java" / "lib"
CLASSES = REPO / "build" / "java" / "classes"
INSTALL_HINT = "run `make java-clients` (Kafka's Java client from PyPI; javac from openjdk-17-jdk-headless)"
# Every check's line, in the order the runs reported them, for the terminal summary.
REPORTED: list[CheckResult] = []
_compile_lock = threading.Lock()


@dataclass(frozen=True)
class CheckResult:
    group: str
    name: str
    ok: bool
    detail: str
    ms: int


@dataclass
class JvmRun:
    """What one JVM printed: its checks by name, its events, and the rest for error messages."""

    label: str
    checks: dict[str, CheckResult] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)  # stdout lines that were not JSON objects
    returncode: int | None = None
    stderr_path: Path | None = None
    seconds: float = 0.0

    def stderr_tail(self, chars: int = 3000) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_text(errors="replace")[-chars:]

    def assert_ok(self, name: str) -> None:
        """Fails the calling test unless check ``name`` reported ok; the message carries its detail."""
        result = self.checks.get(name)
        if result is None:
            pytest.fail(
                f"{self.label}: check {name} did not report (JVM exit code {self.returncode}, "
                f"{len(self.checks)} checks reported)\nstdout noise: {self.noise[-20:]}\n"
                f"stderr tail:\n{self.stderr_tail()}",
                pytrace=False,
            )
        if not result.ok:
            pytest.fail(f"{name}: {result.detail}", pytrace=False)

    def assert_clean_exit(self) -> None:
        assert self.returncode == 0, (
            f"{self.label}: JVM exit code {self.returncode}\nstderr tail:\n{self.stderr_tail()}"
        )
        assert not self.noise, f"{self.label}: stdout lines that are not check results: {self.noise[:20]}"


def java_tools() -> tuple[str, str]:
    """Paths of java and javac; fails the test (with how to install them) when one is missing."""
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        pytest.fail(f"java and javac are needed: {INSTALL_HINT}", pytrace=False)
    return java, javac


def classpath() -> str:
    missing = [jar for jar in JARS if not (LIB / jar).is_file()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)} in {LIB}: {INSTALL_HINT}", pytrace=False)
    return os.pathsep.join([str(CLASSES), *(str(LIB / jar) for jar in JARS)])


def compile_checks() -> Path:
    """Compiles tests/java/*.java into build/java/classes unless it is newer than every source
    and jar; returns the classes directory. A compile error fails the test with javac's output."""
    _, javac = java_tools()
    cp = classpath()
    stamp = CLASSES / ".compiled"
    inputs = [*SOURCES.glob("*.java"), *(LIB / jar for jar in JARS)]
    newest = max(p.stat().st_mtime for p in inputs)
    with _compile_lock:
        if stamp.exists() and stamp.stat().st_mtime >= newest:
            return CLASSES
        shutil.rmtree(CLASSES, ignore_errors=True)
        CLASSES.mkdir(parents=True)
        proc = subprocess.run(
            [javac, "-Xlint:all", "-encoding", "UTF-8", "-d", str(CLASSES), "-cp", cp]
            + sorted(str(p) for p in SOURCES.glob("*.java")),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            pytest.fail(f"javac failed:\n{proc.stdout}{proc.stderr}", pytrace=False)
        stamp.touch()
    return CLASSES


def run_checks(
    groups: str,
    options: dict[str, str | Path],
    *,
    workdir: Path,
    timeout: float = 240.0,
    on_event: Callable[[dict[str, Any]], str | None] | None = None,
    check_timeout_ms: int = 60000,
) -> JvmRun:
    """Runs ``JavaChecks <groups> key=value...`` and collects what it prints.

    ``on_event`` is called (on this thread) for each ``{"event": ...}`` line; a string it
    returns is written to the JVM's stdin as one line. The JVM is killed after ``timeout``
    seconds; checks it had not reported by then are missing (and fail).
    """
    compile_checks()
    java, _ = java_tools()
    label = f"JavaChecks {groups}"
    run = JvmRun(label, stderr_path=workdir / f"jvm-{groups.replace(',', '-')}.stderr")
    args = [f"{k}={v}" for k, v in {**options, "timeout.ms": str(check_timeout_ms)}.items()]
    command = [
        java,
        "-Xmx768m",
        "-XX:+UseSerialGC",
        "-Dfile.encoding=UTF-8",
        "-cp",
        classpath(),
        "JavaChecks",
        groups,
        *args,
    ]
    start = time.monotonic()
    with (
        open(run.stderr_path, "wb") as stderr,
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=workdir
        ) as proc,
    ):
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                _take_line(run, groups, raw.decode("utf-8", errors="replace").rstrip("\n"), proc, on_event)
            run.returncode = proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    run.seconds = time.monotonic() - start
    return run


def _take_line(
    run: JvmRun,
    group: str,
    line: str,
    proc: subprocess.Popen[bytes],
    on_event: Callable[[dict[str, Any]], str | None] | None,
) -> None:
    try:
        obj = json.loads(line)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        run.noise.append(line)
        return
    if "check" in obj:
        result = CheckResult(
            group, str(obj["check"]), obj.get("ok") is True, str(obj.get("detail")), obj.get("ms", 0)
        )
        run.checks[result.name] = result
        REPORTED.append(result)
    elif "event" in obj:
        run.events.append(obj)
        reply = on_event(obj) if on_event is not None else None
        if reply is not None and proc.stdin is not None:
            proc.stdin.write(reply.encode() + b"\n")
            proc.stdin.flush()
    else:
        run.noise.append(line)


def summary_lines(results: Iterable[CheckResult], verbose: bool = False) -> list[str]:
    """The terminal summary: counts, each failure, each Admin API the broker does not serve,
    and with ``verbose`` every check's detail."""
    results = list(results)
    failed = [r for r in results if not r.ok]
    unsupported = [r for r in results if r.ok and r.detail.startswith("UNSUPPORTED_VERSION")]
    lines = [f"{len(results)} Java checks reported, {len(failed)} failed"]
    if verbose:
        lines += [f"{'ok    ' if r.ok else 'FAILED'} {r.name} ({r.ms} ms): {r.detail}" for r in results]
    lines += [f"FAILED {r.name}: {r.detail}" for r in failed]
    lines += [f"UNSUPPORTED {r.name}: {r.detail.removeprefix('UNSUPPORTED_VERSION: ')}" for r in unsupported]
    return lines
