"""The machine's physical limits, measured in the same run as the broker figures.

- `loopback_bandwidth()`: iperf3 server and client on 127.0.0.1 (a free port,
  one client, bounded duration), bytes/s received, best of three runs. The baseline for produce
  with 1 MB batches.
- `disk_write_fsync()`: sequential 1 MB writes of `size_mb` into a temp dir
  followed by one fsync (fio `--end_fsync=1`, or `dd conv=fsync` when fio is
  missing), bytes/s. The baseline for acks=all (group-commit fsync).
- `socket_to_file()`: the least any Python broker must do per produced byte:
  a child process streams `size_mb` MB over loopback TCP, and this process
  receives it into one reused buffer and appends it to a new file with
  `os.pwrite` (page cache, no fsync). The baseline that shows what this
  machine's kernel copies cost before any broker logic.

- `warm_memory()`: not a limit but a precaution. This VM's host backs guest
  memory lazily and takes freed memory back within about a minute, so the
  first write to a page the guest gets costs ~1.4 s per GB: a process that
  appends gigabytes to the page cache runs at ~0.7 GB/s whatever it is
  (a bare pwrite loop included), against ~4 GB/s into pages touched before.
  Touching and freeing memory just before a cell that writes that much makes
  the cell measure the software, not the hypervisor; the bench does it before
  the socket -> file baseline and before every produce cell alike. It must
  come right before: within ten seconds most of it is cold again, and even at
  once only about half of it serves the writes that follow, hence 3x.

The measuring functions return (bytes/s, tool used); a missing tool is a `RuntimeError` naming it
(`make bench` installs them: see the Makefile's bench-tools step).
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.broker_process import free_port


def _need(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise RuntimeError(f"{binary} not found: `make bench` installs it (Makefile bench-tools)")
    return path


def loopback_bandwidth(seconds: float = 3.0, runs: int = 3, block: str = "1M") -> tuple[float, str]:
    """iperf3 over 127.0.0.1, ``runs`` runs of ``seconds`` writing ``block``-sized buffers: the best received bytes/s.

    The best, because a limit is what the machine can do; one run on this
    shared VM has come out anywhere between 1.5 and 5.2 GB/s. 1 MB writes by
    default, the size of the batches the figure is compared with (iperf3's own
    default, 128 KB, has measured 20-60% lower).
    """
    iperf3 = _need("iperf3")
    port = free_port()
    server = subprocess.Popen(
        [iperf3, "-s", "-B", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        best = 0.0
        for _ in range(runs):
            for _ in range(50):  # the server needs a moment to listen
                res = subprocess.run(
                    [iperf3, "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-l", block, "-J"],
                    capture_output=True,
                    text=True,
                    timeout=seconds + 30,
                )
                report = json.loads(res.stdout or "{}")
                if res.returncode == 0 and "sum_received" in report.get("end", {}):
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("iperf3 client could not reach its server on 127.0.0.1")
            best = max(best, report["end"]["sum_received"]["bits_per_second"] / 8)
        return best, f"iperf3, 1 stream, {block} writes, best of {runs}"
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(10)


def disk_write_fsync(size_mb: int = 512, directory: str | None = None) -> tuple[float, str]:
    """Sequential write of `size_mb` MB in 1 MB blocks, then fsync: bytes/s to stable storage."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        fio = shutil.which("fio")
        start = time.perf_counter()  # wall clock around the whole write, so the fsync is surely in it
        if fio:
            subprocess.run(
                [
                    fio,
                    "--name=seqwrite",
                    f"--directory={tmp}",
                    "--rw=write",
                    "--bs=1M",
                    f"--size={size_mb}M",
                    "--ioengine=sync",
                    "--end_fsync=1",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=True,
            )
            return size_mb * 1_048_576 / (time.perf_counter() - start), "fio, 1 MB blocks, end fsync"
        dd = _need("dd")
        target = Path(tmp) / "dd.out"
        subprocess.run(
            [dd, "if=/dev/zero", f"of={target}", "bs=1M", f"count={size_mb}", "conv=fsync"],
            capture_output=True,
            timeout=600,
            check=True,
        )
        return size_mb * 1_048_576 / (time.perf_counter() - start), "dd conv=fsync, 1 MB blocks"


def warm_memory(size_mb: int) -> None:
    """Write ``size_mb`` MB of anonymous memory and free it, so the guest's next pages are host-backed."""
    chunk = bytes(64 << 20)
    with mmap.mmap(-1, size_mb << 20, flags=mmap.MAP_PRIVATE) as m:
        for pos in range(0, len(m) - len(chunk) + 1, len(chunk)):
            m[pos : pos + len(chunk)] = chunk


_SENDER = """
import socket, sys
size_mb, port = int(sys.argv[1]), int(sys.argv[2])
block = bytes(range(256)) * 4096
with socket.create_connection(("127.0.0.1", port)) as s:
    for _ in range(size_mb):
        s.sendall(block)
"""


def socket_to_file(size_mb: int = 1000, directory: str | None = None) -> tuple[float, str]:
    """Loopback TCP from a child process into a file via one Python recv_into/pwrite loop: bytes/s."""
    with tempfile.TemporaryDirectory(dir=directory) as tmp, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        sender = subprocess.Popen(
            [sys.executable, "-c", _SENDER, str(size_mb), str(listener.getsockname()[1])]
        )
        conn, _ = listener.accept()
        fd = os.open(os.path.join(tmp, "sink"), os.O_WRONLY | os.O_CREAT)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        pos = 0
        try:
            start = time.perf_counter()
            while True:
                n = conn.recv_into(view)
                if n == 0:
                    break
                os.pwrite(fd, view[:n], pos)
                pos += n
            elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
            conn.close()
            sender.wait(30)
        if pos != size_mb << 20:
            raise RuntimeError(f"socket_to_file received {pos} of {size_mb << 20} bytes")
        return pos / elapsed, "Python recv_into + os.pwrite, 1 MB buffer"
