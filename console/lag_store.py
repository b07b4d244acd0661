"""The console's history of consumer-group lag and cluster throughput: one embedded SQLite file.

`LagSampler` (console/sampler.py) writes a sample every few seconds; the pages read
`group_history` (lag plots of a group, of a topic or of a partition) and `cluster_rates`
(the overview's in/out rate plot). Every method is synchronous and thread-safe (one
connection opened with ``check_same_thread=False`` behind a `threading.Lock`), so the
asyncio side calls them through `asyncio.to_thread`.

Schema (WAL journal, ``synchronous=NORMAL``: a crash loses at most the last samples, never
the file; names are stored once and samples reference them by integer id)::

    groups(id INTEGER PRIMARY KEY, name TEXT UNIQUE)                       -- consumer-group names
    partitions(id INTEGER PRIMARY KEY, topic TEXT, partition INTEGER,
               UNIQUE (topic, partition))                                   -- (topic, partition) keys
    samples(ts_ms, group_ref -> groups.id, tp_ref -> partitions.id,
            committed, end_offset,
            PRIMARY KEY (group_ref, ts_ms, tp_ref)) WITHOUT ROWID           -- one row per group, partition, sample
    cluster(ts_ms INTEGER PRIMARY KEY, end_offsets_sum, committed_sum,
            size_bytes NULL, consumed_bytes NULL)                           -- one row per sample

``samples`` is clustered on (group_ref, ts_ms), so a group's history over a time range
and the retention purge (per group, by time) are index range scans. Lag is
``max(end_offset - committed, 0)``. Timestamps are ms since the epoch (ints).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

DAY_MS = 86_400_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS groups (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS partitions (
    id INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    UNIQUE (topic, partition)
);
CREATE TABLE IF NOT EXISTS samples (
    ts_ms INTEGER NOT NULL,
    group_ref INTEGER NOT NULL REFERENCES groups (id),
    tp_ref INTEGER NOT NULL REFERENCES partitions (id),
    committed INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    PRIMARY KEY (group_ref, ts_ms, tp_ref)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cluster (
    ts_ms INTEGER PRIMARY KEY,
    end_offsets_sum INTEGER NOT NULL,
    committed_sum INTEGER NOT NULL,
    size_bytes INTEGER,
    consumed_bytes INTEGER
);
"""

_LAG = "max(s.end_offset - s.committed, 0)"


@dataclass
class LagHistory:
    """Lag of one group over time, oldest first; every list has ``len(timestamps)`` entries.

    ``timestamps``: ms since the epoch (of a bucket's first sample when downsampled);
    ``total``: the group's lag summed over its partitions (those matching the filter) in
    one sample, the largest such sum of the bucket when downsampled, None where no
    partition has a sample; ``partitions``: per ``"topic-partition"`` the lag (the
    bucket's maximum when downsampled), None where that partition has no sample.
    """

    timestamps: list[int] = field(default_factory=list)
    total: list[int | None] = field(default_factory=list)
    partitions: dict[str, list[int | None]] = field(default_factory=dict)


@dataclass
class RateHistory:
    """Cluster throughput over time, oldest first, per second; lists as long as ``timestamps``.

    Each entry is the rate between a sample and the one before it (the largest such rate
    of the bucket when downsampled): ``records_in`` from the sum of every partition's end
    offset, ``records_out`` from the sum of every group's committed offsets (records
    consumed, counted once per group), ``bytes_in`` from the size of the logs, ``bytes_out``
    from the sampler's running estimate of bytes consumed (records consumed x the average
    record size of their partitions: the protocol shows no client what a broker sends). An entry is
    None when the delta is negative (a topic or group deleted, segments removed by
    retention) or a size is unknown.
    """

    timestamps: list[int] = field(default_factory=list)
    records_in: list[float | None] = field(default_factory=list)
    records_out: list[float | None] = field(default_factory=list)
    bytes_in: list[float | None] = field(default_factory=list)
    bytes_out: list[float | None] = field(default_factory=list)


class LagStore:
    """Lag and throughput history in the SQLite file ``path`` (":memory:" for a private one).

    Samples older than ``retention_days`` are removed by `purge`, which the caller runs
    every few minutes.
    """

    def __init__(self, path: str, retention_days: float = 7.0) -> None:
        if retention_days <= 0:
            raise ValueError(f"retention_days must be > 0, not {retention_days}")
        self.path = path
        self.retention_days = retention_days
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._conn:
            self._conn.executescript(_SCHEMA)
        self._group_ids: dict[str, int] = {}
        self._tp_ids: dict[tuple[str, int], int] = {}

    # -- writing ---------------------------------------------------------------------------------

    def add_lag(self, ts_ms: int, rows: Iterable[tuple[str, str, int, int, int]]) -> int:
        """Store one sample: rows of (group, topic, partition, committed, end_offset), all at ``ts_ms``.

        One transaction; a row repeating (group, topic, partition, ts_ms) replaces the
        earlier one. Returns the number of rows stored.
        """
        with self._lock:
            try:
                with self._conn:
                    params = [
                        (ts_ms, self._group_id(g), self._tp_id(t, p), committed, end)
                        for g, t, p, committed, end in rows
                    ]
                    self._conn.executemany(
                        "INSERT OR REPLACE INTO samples (ts_ms, group_ref, tp_ref, committed, end_offset)"
                        " VALUES (?, ?, ?, ?, ?)",
                        params,
                    )
            except BaseException:
                self._forget_ids()  # ids made by the rolled-back transaction are gone
                raise
            return len(params)

    def add_cluster(
        self,
        ts_ms: int,
        end_offsets_sum: int,
        committed_sum: int,
        size_bytes: int | None,
        consumed_bytes: int | None = None,
    ) -> None:
        """Store one throughput sample (sums over the cluster at ``ts_ms``; size None when unknown;
        ``consumed_bytes`` a running total kept by the sampler, None when it cannot estimate)."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO cluster"
                " (ts_ms, end_offsets_sum, committed_sum, size_bytes, consumed_bytes) VALUES (?, ?, ?, ?, ?)",
                (ts_ms, end_offsets_sum, committed_sum, size_bytes, consumed_bytes),
            )

    def purge(self, now_ms: int) -> int:
        """Delete samples older than ``now_ms`` minus the retention, and group names no sample uses.

        ((topic, partition) keys are kept: one small row per partition ever seen, whereas
        finding unused ones would scan every sample.) Returns the number of rows deleted
        (lag rows and cluster rows).
        """
        cutoff = now_ms - int(self.retention_days * DAY_MS)
        with self._lock:
            try:
                with self._conn:
                    deleted = 0
                    ids = [r[0] for r in self._conn.execute("SELECT id FROM groups")]
                    for gid in ids:  # per group: a range of the primary key, no full scan
                        cur = self._conn.execute(
                            "DELETE FROM samples WHERE group_ref = ? AND ts_ms < ?", (gid, cutoff)
                        )
                        deleted += cur.rowcount
                    deleted += self._conn.execute("DELETE FROM cluster WHERE ts_ms < ?", (cutoff,)).rowcount
                    self._conn.execute(
                        "DELETE FROM groups WHERE NOT EXISTS"
                        " (SELECT 1 FROM samples WHERE samples.group_ref = groups.id)"
                    )
            finally:
                self._forget_ids()
            return deleted

    def close(self) -> None:
        """Close the file; the store cannot be used afterwards."""
        with self._lock:
            self._conn.close()

    # -- reading ---------------------------------------------------------------------------------

    def group_names(self) -> list[str]:
        """Names of the groups that have samples, sorted."""
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT name FROM groups ORDER BY name")]

    def group_history(
        self,
        group: str,
        since_ms: int,
        until_ms: int,
        max_points: int = 300,
        *,
        topic: str | None = None,
        partition: int | None = None,
    ) -> LagHistory:
        """Lag of ``group`` between ``since_ms`` and ``until_ms`` (both inclusive), at most ``max_points``.

        ``topic`` restricts the history (and ``total``) to that topic's partitions,
        ``partition`` (with ``topic``) to one partition. With more samples than
        ``max_points`` the range from the first to the last sample is cut into at most
        ``max_points`` equal time buckets, each keeping its maximum (spikes stay visible);
        the grouping is done by SQLite.
        """
        if max_points < 1:
            raise ValueError(f"max_points must be >= 1, not {max_points}")
        if partition is not None and topic is None:
            raise ValueError("partition needs a topic")
        with self._lock:
            row = self._conn.execute("SELECT id FROM groups WHERE name = ?", (group,)).fetchone()
            if row is None:
                return LagHistory()
            where = "s.group_ref = ? AND s.ts_ms BETWEEN ? AND ?"
            args: list[object] = [row[0], since_ms, until_ms]
            if topic is not None:
                sub = "SELECT id FROM partitions WHERE topic = ?"
                args.append(topic)
                if partition is not None:
                    sub += " AND partition = ?"
                    args.append(partition)
                where += f" AND s.tp_ref IN ({sub})"
            count, first, last = self._conn.execute(
                f"SELECT COUNT(DISTINCT s.ts_ms), MIN(s.ts_ms), MAX(s.ts_ms) FROM samples s WHERE {where}",
                args,
            ).fetchone()
            if not count:
                return LagHistory()
            width = 1 if count <= max_points else math.ceil((last - first + 1) / max_points)
            bucket = f"((s.ts_ms - {int(first)}) / {int(width)})"
            totals = self._conn.execute(
                f"SELECT b, MIN(ts), MAX(total) FROM ("
                f" SELECT {bucket} AS b, s.ts_ms AS ts, SUM({_LAG}) AS total"
                f" FROM samples s WHERE {where} GROUP BY s.ts_ms"
                f") GROUP BY b ORDER BY b",
                args,
            ).fetchall()
            per_tp = self._conn.execute(
                f"SELECT {bucket} AS b, p.topic, p.partition, MAX({_LAG})"
                f" FROM samples s JOIN partitions p ON p.id = s.tp_ref"
                f" WHERE {where} GROUP BY b, s.tp_ref",
                args,
            ).fetchall()
        index = {b: i for i, (b, _, _) in enumerate(totals)}
        out = LagHistory(timestamps=[ts for _, ts, _ in totals], total=[t for _, _, t in totals])
        keys: dict[tuple[str, int], list[int | None]] = {}
        for b, t, p, lag in per_tp:
            series = keys.get((t, p))
            if series is None:
                series = keys[(t, p)] = [None] * len(totals)
            series[index[b]] = lag
        out.partitions = {f"{t}-{p}": keys[(t, p)] for t, p in sorted(keys)}
        return out

    def cluster_rates(self, since_ms: int, until_ms: int, max_points: int = 300) -> RateHistory:
        """Per-second throughput between ``since_ms`` and ``until_ms`` (inclusive), at most ``max_points``.

        The first point in the range is a rate against the sample just before
        ``since_ms`` if there is one (otherwise it has no rate and is left out).
        Downsampling as in `group_history`: equal time buckets keeping each one's maximum.
        """
        if max_points < 1:
            raise ValueError(f"max_points must be >= 1, not {max_points}")
        with self._lock:
            prev = self._conn.execute(
                "SELECT MAX(ts_ms) FROM cluster WHERE ts_ms < ?", (since_ms,)
            ).fetchone()[0]
            start = since_ms if prev is None else prev
            rates = (
                "SELECT ts_ms, ts_ms - LAG(ts_ms) OVER w AS dt,"
                " end_offsets_sum - LAG(end_offsets_sum) OVER w AS d_in,"
                " committed_sum - LAG(committed_sum) OVER w AS d_out,"
                " size_bytes - LAG(size_bytes) OVER w AS d_bytes,"
                " consumed_bytes - LAG(consumed_bytes) OVER w AS d_bytes_out"
                " FROM cluster WHERE ts_ms BETWEEN ? AND ? WINDOW w AS (ORDER BY ts_ms)"
            )
            args = (start, until_ms)
            count, first, last = self._conn.execute(
                f"SELECT COUNT(*), MIN(ts_ms), MAX(ts_ms) FROM ({rates}) WHERE dt IS NOT NULL", args
            ).fetchone()
            if not count:
                return RateHistory()
            width = 1 if count <= max_points else math.ceil((last - first + 1) / max_points)

            def rate(delta: str) -> str:
                return f"MAX(CASE WHEN {delta} >= 0 THEN {delta} * 1000.0 / dt END)"

            rows = self._conn.execute(
                f"SELECT (ts_ms - {int(first)}) / {int(width)} AS b, MIN(ts_ms),"
                f" {rate('d_in')}, {rate('d_out')}, {rate('d_bytes')}, {rate('d_bytes_out')}"
                f" FROM ({rates}) WHERE dt > 0 GROUP BY b ORDER BY b",
                args,
            ).fetchall()
        return RateHistory(
            timestamps=[r[1] for r in rows],
            records_in=[r[2] for r in rows],
            records_out=[r[3] for r in rows],
            bytes_in=[r[4] for r in rows],
            bytes_out=[r[5] for r in rows],
        )

    # -- ids ----------------------------------------------------------------------------------------

    def _group_id(self, name: str) -> int:
        gid = self._group_ids.get(name)
        if gid is None:
            self._conn.execute("INSERT OR IGNORE INTO groups (name) VALUES (?)", (name,))
            gid = self._conn.execute("SELECT id FROM groups WHERE name = ?", (name,)).fetchone()[0]
            self._group_ids[name] = gid
        return gid

    def _tp_id(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        tid = self._tp_ids.get(key)
        if tid is None:
            self._conn.execute(
                "INSERT OR IGNORE INTO partitions (topic, partition) VALUES (?, ?)", (topic, partition)
            )
            tid = self._conn.execute(
                "SELECT id FROM partitions WHERE topic = ? AND partition = ?", key
            ).fetchone()[0]
            self._tp_ids[key] = tid
        return tid

    def _forget_ids(self) -> None:
        self._group_ids.clear()
        self._tp_ids.clear()
