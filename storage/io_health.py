"""Storage failures made visible: logged once, counted, and their end logged.

Every `PartitionLog` of a data directory reports to one `IoHealth`. A failed
file operation (``op``: append, roll, fsync, truncate, delete, compact,
checkpoint) is counted per (topic, partition, op) for the metrics
(``minikafka_storage_errors_total``) and logged once per partition and errno
with the partition's path and the OS message: at WARNING while the partition
stays usable (a full disk: the write left no bytes behind and a later one may
succeed), at ERROR when it went offline (a failed fsync: nothing more is read
or written until the broker restarts). Repeats of the same errno on the same
partition are only counted, so a full disk under load writes one line, not
one per request. The first successful write after failures logs that writes
succeed again, and the next failure is logged afresh.

Thread safety: fsyncs run in executor threads, so the counters are guarded by
a lock. It is only taken on failures and on the first success after them.
"""

from __future__ import annotations

import errno as errno_names
import logging
import threading
from collections import Counter

log = logging.getLogger("minikafka.storage")


def describe_os_error(exc: BaseException) -> str:
    """``[ENOSPC] No space left on device`` for an OSError (its chained cause included), else ``str(exc)``."""
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    if isinstance(cause, OSError) and cause.errno is not None:
        name = errno_names.errorcode.get(cause.errno, str(cause.errno))
        return f"[{name}] {cause.strerror or cause}"
    return str(exc)


def _errno(exc: BaseException) -> int:
    cause = exc if isinstance(exc, OSError) else exc.__cause__
    return cause.errno if isinstance(cause, OSError) and cause.errno is not None else -1


class IoHealth:
    """Storage failures of one data directory's partition logs (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.errors: Counter[tuple[str, int, str]] = Counter()  # (topic, partition, op) -> failures
        self._logged: dict[tuple[str, int], set[int]] = {}  # partition -> errnos already logged
        self._since_ok: Counter[tuple[str, int]] = Counter()  # failures since the last success

    def failed(
        self, topic: str, partition: int, op: str, path: str, exc: BaseException, *, offline: bool
    ) -> None:
        """Count a failed ``op`` on ``path``; log it unless this errno was already logged for the partition."""
        code = _errno(exc)
        tp = (topic, partition)
        with self._lock:
            self.errors[(topic, partition, op)] += 1
            self._since_ok[tp] += 1
            seen = self._logged.setdefault(tp, set())
            first = code not in seen or offline
            seen.add(code)
        if not first:
            return
        if offline:
            log.error(
                "storage error on %s-%d (%s) at %s: %s; the partition is offline until the broker restarts",
                topic,
                partition,
                op,
                path,
                describe_os_error(exc),
            )
        else:
            log.warning(
                "storage error on %s-%d (%s) at %s: %s; its writes answer KAFKA_STORAGE_ERROR until one succeeds",
                topic,
                partition,
                op,
                path,
                describe_os_error(exc),
            )

    def failing(self, topic: str, partition: int) -> bool:
        """Whether the partition's last write failed (cheap: read without the lock)."""
        return self._since_ok.get((topic, partition), 0) > 0

    def succeeded(self, topic: str, partition: int, op: str) -> None:
        """A write of a failing partition succeeded: log it once and forget the logged errnos."""
        tp = (topic, partition)
        with self._lock:
            failures = self._since_ok.pop(tp, 0)
            self._logged.pop(tp, None)
        if failures:
            log.warning(
                "storage on %s-%d works again: %s succeeded after %d failed writes", *tp, op, failures
            )
