"""Small files of security state (credentials, ACLs, quotas) in the data directory, replaced durably.

`replace_durably` writes a temporary file beside the target (mode 0600: it
may hold salted credentials), fsyncs it, renames it over the target and fsyncs the
directory, so after a crash the file is either the old one or the new one,
whole. `stamp` is what tells a file changed on disk: (mtime, size, inode).
`ConfigMapFile` is the JSON file of named configs that the SCRAM credentials
and the client quotas of a single broker live in.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def replace_durably(path: Path, data: bytes) -> None:
    """Callers serialize their writes to one file (the temporary file's name is fixed, so one left
    by a crash is simply overwritten by the next write)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def stamp(path: Path) -> tuple[int, int, int]:
    """(mtime ns, size, inode) of ``path``; FileNotFoundError when it is gone."""
    st = path.stat()
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ConfigMapFile:
    """A JSON file of named configs, ``{"version": 1, "<section>": {name: {key: value}}}``, replaced
    durably on every change and re-read when it changes on disk (`changed`)."""

    def __init__(self, path: Path, section: str, what: str) -> None:
        """``what`` names the file in errors ("a credentials file")."""
        self.path = path
        self._section = section
        self._what = what
        self._stamp: tuple[int, int, int] | None = None

    def load(self) -> dict[str, dict[str, str]]:
        """The file's configs ({} when absent); ValueError (one line) when it is not one of ours."""
        try:
            text = self.path.read_text(encoding="utf-8")
            self._stamp = stamp(self.path)
        except FileNotFoundError:
            self._stamp = None
            return {}
        try:
            doc = json.loads(text)
            configs = doc[self._section]
            if doc.get("version") != 1 or not isinstance(configs, dict):
                raise ValueError("unexpected layout")
            return {str(n): {str(k): str(v) for k, v in c.items()} for n, c in configs.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{self.path} is not {self._what} of minikafka ({exc})") from None

    def changed(self) -> bool:
        """Whether the file changed on disk since it was last loaded or saved."""
        try:
            return stamp(self.path) != self._stamp
        except FileNotFoundError:
            return self._stamp is not None

    def apply(self, changes: dict[str, dict[str, str | None]]) -> None:
        """Merge ``changes`` ({name: {key: value, or None to delete}}) into the file, durably; a name
        left with no key is dropped."""
        configs = self.load()
        for name, change in changes.items():
            config = configs.setdefault(name, {})
            for key, value in change.items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
            if not config:
                del configs[name]
        data = json.dumps({"version": 1, self._section: configs}, indent=1, sort_keys=True).encode()
        replace_durably(self.path, data)
        self._stamp = stamp(self.path)
