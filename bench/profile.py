"""py-spy profiles of the broker under load, summarised as text under bench/results/.

`Profiler(pid, seconds, out)` runs `py-spy record --format raw` (collapsed
stacks: `frame;frame;... count` per line) on the broker for a bounded time.
`summarise(raw)` turns that into two top-N lists: self time (the innermost
frame of each sample) and inclusive time (each distinct frame of a sample
counted once), as percentages of all samples. Only the summary is written
to bench/results/ (small, diffable); the raw stacks stay in the run's temp dir.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def py_spy() -> str:
    here = Path(sys.executable).parent / "py-spy"
    path = str(here) if here.exists() else shutil.which("py-spy")
    if path is None:
        raise RuntimeError("py-spy not found: `make bench` installs it (pip extra `bench`)")
    return path


class Profiler:
    """py-spy record on `pid` for `seconds` into `raw` (collapsed stacks); start(), then wait()."""

    def __init__(self, pid: int, seconds: float, raw: Path, rate: int = 200) -> None:
        self.cmd = [
            py_spy(),
            "record",
            "--pid",
            str(pid),
            "--duration",
            str(max(1, round(seconds))),
            "--rate",
            str(rate),
            "--format",
            "raw",
            "--output",
            str(raw),
            "--nonblocking",
        ]
        self.raw = raw
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Profiler:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self

    def wait(self, timeout: float = 120) -> str:
        assert self.proc is not None
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if self.proc.returncode != 0 or not self.raw.exists():
            raise RuntimeError(f"py-spy failed: {err.decode(errors='replace')[-500:]}")
        return self.raw.read_text()


def _frame(frame: str) -> str:
    # py-spy raw frames look like "handle (broker/handlers/produce.py:42)"; drop the line number
    # so one function is one entry, and the venv prefix so paths are short.
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/lib/python3"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})" if where else name


def summarise(raw: str, title: str, top: int = 25) -> str:
    """Self and inclusive top-N of collapsed stacks, as a small text report."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        k = int(count)
        frames = [_frame(f) for f in stack.split(";")]
        frames = [f for f in frames if not f.startswith("process ")]  # py-spy's thread/process roots
        if not frames:
            continue
        total += k
        own[frames[-1]] += k
        for f in set(frames):
            incl[f] += k
    lines = [f"# {title}", f"{total} samples", "", "## self time (innermost frame)"]
    lines += [f"{100 * c / max(total, 1):6.1f}%  {f}" for f, c in own.most_common(top)]
    lines += ["", "## inclusive time (frame anywhere on the stack)"]
    lines += [f"{100 * c / max(total, 1):6.1f}%  {f}" for f, c in incl.most_common(top)]
    return "\n".join(lines) + "\n"


def save(name: str, text: str) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / name
    path.write_text(text)
    return path
