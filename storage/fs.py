"""The filesystem seam: every byte the storage engine writes goes through `FileSystem`.

`FileSystem` does real I/O with ``os.open``/``os.pwrite``/``os.pread``/``os.fsync``.
`FaultyFileSystem` is the same with public fault injection (`fail_next_write`,
`fail_next_fsync`), so tests exercise the real error paths without monkeypatching.

Contracts:
- `File.write` appends at the file's end in one call and is all-or-nothing: if the
  write fails part-way, the file is truncated back to its previous size before
  the `OSError` propagates. If even that truncation fails, ``File.failed`` is set
  and the owner must stop using the file.
- `File.fsync` raises `OSError` on failure; the caller decides what a failed fsync
  means (a `PartitionLog` goes offline).
- `File.fsync` may run in another thread concurrently with `write`/`pread`/`truncate`
  on the same file (the kernel serialises them); it must never run concurrently
  with `close` -- the owner guarantees that (see `PartitionLog.flush`).
- `File.reserve_ahead` (bytes, 0 = off) makes appends reserve disk blocks past the
  end of the file with ``fallocate(FALLOC_FL_KEEP_SIZE)`` in steps of that size:
  the file's size (what readers, recovery and `size()` see) is unchanged, but
  ext4 no longer reserves and maps blocks one 4 KB page at a time inside each
  write (a quarter less CPU per appended byte, measured with 1 KB to 1 MB
  writes). `release_reserve` gives the unused blocks back (a segment does it when
  sealed). Where fallocate is missing or fails (another filesystem, a full
  disk) appends carry on without it; a reservation left by a crash is harmless
  and released at the next seal.
- `File.write_back(min_bytes)` starts the kernel's writeback of the whole pages
  appended since its last call, once there are at least ``min_bytes`` of them,
  with ``sync_file_range(SYNC_FILE_RANGE_WRITE)``: it does not wait for the
  disk, and nothing is durable because of it (that is `fsync`'s job). Bytes
  left to the kernel's flusher go to disk when their file's first dirty page
  is ``vm.dirty_expire_centisecs`` (30 s) old, all of them in one burst, and
  on ext4 every fsync on the filesystem meanwhile waits behind that burst:
  a file written steadily for a minute stalls acks=all fsyncs for 100-200
  ms (measured with a 5 MB/s replica copy). Advisory: where the call is
  missing or fails nothing happens.
- `File.view(n, pos)` is a read-only memoryview of bytes already in the file,
  through a shared read-only mapping (remapped when a view reaches past the
  mapped length): a Fetch response hands it to the socket with no copy and
  no fresh memory. A view stays valid after the file is closed, renamed or
  deleted (the mapping keeps the pages). Truncating the file below a live
  view's bytes is the one hazard: touching them then raises SIGBUS in user
  space (EFAULT in a syscall), so the log truncates only bytes that were
  never readable (a failed write's tail) while serving, and everything else
  (recovery) before it serves.
- `atomic_write` = write a temp file, fsync it, rename over the target, fsync the
  directory: readers see the old or the new content, never a mix.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
import shutil

from storage.naming import TMP_SUFFIX

BytesLike = bytes | bytearray | memoryview

_FALLOC_FL_KEEP_SIZE = 1
_fallocate = getattr(ctypes.CDLL(None, use_errno=True), "fallocate", None)
if _fallocate is not None:
    _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
if _sync_file_range is not None:
    _sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
PAGE_SIZE = mmap.PAGESIZE


def start_writeback(fd: int, pos: int, length: int) -> bool:
    """Start writing the dirty pages of [pos, pos + length) to disk without waiting; False if unsupported."""
    return _sync_file_range is not None and _sync_file_range(fd, pos, length, _SYNC_FILE_RANGE_WRITE) == 0


def reserve_blocks(fd: int, pos: int, length: int) -> bool:
    """Allocate disk blocks for [pos, pos + length) without changing the file's size; False if unsupported."""
    return _fallocate is not None and _fallocate(fd, _FALLOC_FL_KEEP_SIZE, pos, length) == 0


class File:
    """An open file: append-only writes at the end, positional reads, fsync, truncate."""

    __slots__ = (
        "path",
        "_fd",
        "_fs",
        "_size",
        "_reserved",
        "_map",
        "reserve_ahead",
        "failed",
        "_written_back",
    )

    def __init__(self, fs: FileSystem, path: str, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._fs = fs
        st = os.fstat(fd)
        self._size = st.st_size
        # Blocks past the end (a reservation a crash left behind) count as reserved.
        allocated = st.st_blocks * 512
        self._reserved = allocated if allocated > self._size + st.st_blksize else self._size
        self.reserve_ahead = 0
        self._map: mmap.mmap | None = None  # for `view`: the file's first len(_map) bytes
        self.failed = False
        self._written_back = 0  # `write_back` has started the writeback of the bytes below this

    def fileno(self) -> int:
        return self._fd

    def size(self) -> int:
        """Current size in bytes (tracked in memory; this object is the only writer)."""
        return self._size

    def write(self, data: BytesLike) -> int:
        """Append ``data`` at the end of the file; return the position it was written at.

        All or nothing: on failure the file is truncated back and `OSError` raised.
        """
        pos = self._size
        with memoryview(data) as mv:
            n = mv.nbytes
            if pos + n > self._reserved and self.reserve_ahead:
                self._reserve(pos + n)
            try:
                self._fs._pwrite_all(self, mv.cast("B"), pos)
            except BaseException:
                try:
                    os.ftruncate(self._fd, pos)
                    self._reserved = pos
                except OSError:
                    self.failed = True
                raise
        self._size = pos + n
        return pos

    def _reserve(self, end: int) -> None:
        """Reserve blocks up to ``end`` rounded up to the next step; stop reserving if that fails."""
        step = self.reserve_ahead
        target = (end + step - 1) // step * step
        if reserve_blocks(self._fd, self._reserved, target - self._reserved):
            self._reserved = target
        else:
            self.reserve_ahead = 0

    def release_reserve(self) -> None:
        """Give back the blocks reserved past the end of the file (the size and content are unchanged)."""
        if self._reserved > self._size:
            os.ftruncate(self._fd, self._size)
            self._reserved = self._size

    def write_back(self, min_bytes: int) -> bool:
        """Start the writeback of the whole pages written since the last call if they make at least
        ``min_bytes`` (see the module docstring); True if it started one."""
        end = self._size // PAGE_SIZE * PAGE_SIZE  # a partial last page would be written twice
        start = self._written_back
        if end - start < max(min_bytes, PAGE_SIZE):
            return False
        self._written_back = end
        return self._fs._start_writeback(self, start, end - start)

    def write_at(self, data: BytesLike, pos: int) -> None:
        """Overwrite bytes at ``pos`` (the file's size grows if they reach past its end).

        Not all-or-nothing: a failure may leave part of ``data`` written. For
        files whose content can be rebuilt (indexes), not for the log.
        """
        with memoryview(data) as mv:
            flat = mv.cast("B")
            self._fs._pwrite_all(self, flat, pos)
            self._size = max(self._size, pos + flat.nbytes)

    def pread(self, n: int, pos: int) -> bytes:
        """Up to ``n`` bytes from ``pos`` (fewer only at the end of the file)."""
        if n <= 0:
            return b""
        data = os.pread(self._fd, n, pos)
        if len(data) < n and pos + len(data) < self._size:
            # A short read before EOF: keep reading (rare, e.g. huge reads).
            parts = [data]
            got = len(data)
            while got < n:
                chunk = os.pread(self._fd, n - got, pos + got)
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
            data = b"".join(parts)
        return data

    def view(self, n: int, pos: int) -> memoryview:
        """Read-only view of bytes [pos, pos + n), which must lie within the file (see the module doc)."""
        end = pos + n
        if n <= 0:
            return memoryview(b"")
        if end > self._size or pos < 0:
            raise ValueError(f"view [{pos}, {end}) outside {self.path} of {self._size} bytes")
        mapped = self._map
        if mapped is None or end > len(mapped):
            # A new mapping of the whole file as it is now; views of the old one keep it alive.
            mapped = self._map = mmap.mmap(self._fd, self._size, mmap.MAP_SHARED, mmap.PROT_READ)
        return memoryview(mapped)[pos:end]

    def fsync(self) -> None:
        self._fs._fsync(self)

    def mtime_ms(self) -> int:
        """Last modification time of the open file, in ms since the epoch."""
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    def truncate(self, size: int) -> None:
        """Set the file's size (shrink, or grow with zeros); blocks reserved past it are given back."""
        if size < self._size:
            self._map = None
        os.ftruncate(self._fd, size)
        self._size = self._reserved = size
        self._written_back = min(self._written_back, size // PAGE_SIZE * PAGE_SIZE)

    def close(self) -> None:
        self._map = None
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self._fd < 0


class FileSystem:
    """Real files. Subclass and override `_pwrite_all`/`_fsync` to inject faults."""

    def open(self, path: str, *, create: bool = True) -> File:
        """Open ``path`` for reading and appending (created empty if absent and ``create``)."""
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
        return File(self, path, os.open(path, flags, 0o644))

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def atomic_write(self, path: str, data: bytes) -> None:
        """Replace ``path`` with ``data`` atomically and durably (tmp + fsync + rename + fsync dir)."""
        tmp = path + TMP_SUFFIX
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        f = File(self, tmp, fd)
        try:
            f.write(data)
            f.fsync()
        except BaseException:
            f.close()
            self._remove_quietly(tmp)
            raise
        f.close()
        os.replace(tmp, path)
        self.fsync_dir(os.path.dirname(path) or ".")

    def fsync_dir(self, path: str) -> None:
        """fsync a directory so that file creations, renames and removals in it are durable."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            f = File(self, path, fd)
            f.fsync()
        finally:
            os.close(fd)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        os.remove(path)

    def remove_if_exists(self, path: str) -> bool:
        """Remove ``path``; False if it was already gone."""
        try:
            os.remove(path)
        except FileNotFoundError:
            return False
        return True

    def rmtree(self, path: str) -> None:
        shutil.rmtree(path)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def _pwrite_all(self, file: File, data: memoryview, pos: int) -> None:
        fd = file.fileno()
        while data:
            n = os.pwrite(fd, data, pos)
            data = data[n:]
            pos += n

    def _fsync(self, file: File) -> None:
        os.fsync(file.fileno())

    def _start_writeback(self, file: File, pos: int, length: int) -> bool:
        return start_writeback(file.fileno(), pos, length)

    @staticmethod
    def _remove_quietly(path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


class FaultyFileSystem(FileSystem):
    """`FileSystem` with injectable failures (public API for tests).

    - `fail_next_write`: the next write (optionally only to a path containing
      ``path_contains``) writes half of its bytes, then raises `OSError` (EIO), as
      a disk failing mid-write would; `File.write` then truncates the partial bytes away.
    - `fail_next_fsync`: the next fsync (same filter) raises `OSError` (EIO) without syncing.
    Each armed fault fires once.
    """

    def __init__(self) -> None:
        super().__init__()
        self._write_faults: list[str | None] = []
        self._fsync_faults: list[str | None] = []
        self.writes_failed = 0
        self.fsyncs_failed = 0

    def fail_next_write(self, path_contains: str | None = None) -> None:
        self._write_faults.append(path_contains)

    def fail_next_fsync(self, path_contains: str | None = None) -> None:
        self._fsync_faults.append(path_contains)

    @staticmethod
    def _take(faults: list[str | None], path: str) -> bool:
        for i, pattern in enumerate(faults):
            if pattern is None or pattern in path:
                del faults[i]
                return True
        return False

    def _pwrite_all(self, file: File, data: memoryview, pos: int) -> None:
        if self._take(self._write_faults, file.path):
            self.writes_failed += 1
            half = len(data) // 2
            if half:
                os.pwrite(file.fileno(), data[:half], pos)
            raise OSError(errno.EIO, f"injected write failure on {file.path}")
        super()._pwrite_all(file, data, pos)

    def _fsync(self, file: File) -> None:
        if self._take(self._fsync_faults, file.path):
            self.fsyncs_failed += 1
            raise OSError(errno.EIO, f"injected fsync failure on {file.path}")
        super()._fsync(file)
