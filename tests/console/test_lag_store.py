"""LagStore: lag history, downsampling that keeps spikes, missing partitions, retention, rates."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.lag_store import DAY_MS, LagStore

T0 = 1_700_000_000_000


@pytest.fixture
def store() -> Iterator[LagStore]:
    s = LagStore(":memory:", retention_days=1)
    yield s
    s.close()


def test_history_per_partition_and_total(store: LagStore) -> None:
    store.add_lag(T0, [("g", "t", 0, 5, 10), ("g", "t", 1, 0, 3), ("other", "t", 0, 0, 100)])
    store.add_lag(T0 + 1000, [("g", "t", 0, 10, 12), ("g", "t", 1, 9, 3)])  # committed > end: lag 0
    h = store.group_history("g", T0, T0 + 1000)
    assert h.timestamps == [T0, T0 + 1000]
    assert h.partitions == {"t-0": [5, 2], "t-1": [3, 0]}
    assert h.total == [8, 2]
    assert store.group_history("g", T0 + 1, T0 + 1000).timestamps == [T0 + 1000]
    assert store.group_history("nobody", 0, T0 * 2).timestamps == []
    assert store.group_history("g", 0, T0 - 1).partitions == {}
    assert store.group_names() == ["g", "other"]


def test_missing_partition_is_none(store: LagStore) -> None:
    store.add_lag(T0, [("g", "a", 0, 0, 4)])
    store.add_lag(T0 + 10, [("g", "a", 0, 0, 5), ("g", "b", 2, 1, 2)])
    store.add_lag(T0 + 20, [("g", "b", 2, 1, 7)])
    h = store.group_history("g", T0, T0 + 20)
    assert h.partitions == {"a-0": [4, 5, None], "b-2": [None, 1, 6]}
    assert h.total == [4, 6, 6]


def test_topic_and_partition_filters(store: LagStore) -> None:
    store.add_lag(T0, [("g", "a", 0, 0, 4), ("g", "a", 1, 0, 1), ("g", "b", 0, 0, 100)])
    h = store.group_history("g", T0, T0, topic="a")
    assert h.partitions == {"a-0": [4], "a-1": [1]} and h.total == [5]
    h = store.group_history("g", T0, T0, topic="a", partition=1)
    assert h.partitions == {"a-1": [1]} and h.total == [1]
    assert store.group_history("g", T0, T0, topic="zzz").timestamps == []
    with pytest.raises(ValueError):
        store.group_history("g", T0, T0, partition=1)


def test_downsampling_keeps_the_maximum(store: LagStore) -> None:
    n = 1000
    for i in range(n):
        end = 1_000_000 if i == 537 else i % 7
        store.add_lag(T0 + i * 1000, [("g", "t", 0, 0, end), ("g", "t", 1, 0, 1)])
    h = store.group_history("g", T0, T0 + n * 1000, max_points=50)
    assert 1 < len(h.timestamps) <= 50
    assert h.timestamps == sorted(h.timestamps) and h.timestamps[0] == T0
    assert len(h.total) == len(h.timestamps) == len(h.partitions["t-0"]) == len(h.partitions["t-1"])
    assert max(h.partitions["t-0"]) == 1_000_000
    assert h.partitions["t-0"].count(1_000_000) == 1
    assert max(h.total) == 1_000_001  # the spike sample's sum, not a sum of maxima
    assert set(h.partitions["t-1"]) == {1}
    assert all(v == 7 for v in h.total if v != 1_000_001)  # each bucket's max i % 7 (6) + 1
    assert len(store.group_history("g", T0, T0 + n * 1000, max_points=1).timestamps) == 1


def test_purge_applies_retention(store: LagStore) -> None:
    store.add_lag(T0, [("old", "t", 0, 0, 1), ("g", "t", 0, 0, 1)])
    store.add_cluster(T0, 1, 0, None)
    store.add_lag(T0 + DAY_MS, [("g", "t", 0, 0, 2)])
    store.add_cluster(T0 + DAY_MS, 2, 0, None)
    assert store.purge(T0 + DAY_MS) == 0  # exactly one day old: kept
    assert store.purge(T0 + DAY_MS + 1) == 3
    assert store.group_history("g", 0, T0 * 2).timestamps == [T0 + DAY_MS]
    assert store.group_history("old", 0, T0 * 2).timestamps == []
    assert store.group_names() == ["g"]
    store.add_lag(T0 + DAY_MS + 5, [("old", "t", 0, 3, 4)])  # a purged name comes back
    assert store.group_history("old", 0, T0 * 2).partitions == {"t-0": [1]}


def test_rates(store: LagStore) -> None:
    store.add_cluster(T0, 100, 50, 1000, 0)
    store.add_cluster(T0 + 2000, 300, 60, 5000, 400)  # +100/s in, +5/s out, +2000 B/s in, +200 B/s out
    store.add_cluster(T0 + 4000, 300, 60, 100)  # retention removed segments: size fell
    store.add_cluster(T0 + 5000, 350, 40, None)  # a group deleted: committed fell; size unknown
    store.add_cluster(T0 + 6000, 400, 50, 600)  # size known again, but the previous was not
    store.add_cluster(T0 + 7000, 400, 50, 700)
    r = store.cluster_rates(T0, T0 + 7000)
    assert r.timestamps == [T0 + 2000, T0 + 4000, T0 + 5000, T0 + 6000, T0 + 7000]
    assert r.records_in == [100.0, 0.0, 50.0, 50.0, 0.0]
    assert r.records_out == [5.0, 0.0, None, 10.0, 0.0]
    assert r.bytes_in == [2000.0, None, None, None, 100.0]
    assert r.bytes_out == [200.0, None, None, None, None]  # consumed bytes given for the first two only
    # A range starting after a sample rates its first point against that sample.
    r = store.cluster_rates(T0 + 1, T0 + 2000)
    assert r.timestamps == [T0 + 2000] and r.records_in == [100.0]
    assert store.cluster_rates(T0 + 8000, T0 + 9000).timestamps == []


def test_rates_downsampled_keep_the_maximum(store: LagStore) -> None:
    total = 0
    for i in range(1001):
        total += 5000 if i == 400 else 10
        store.add_cluster(T0 + i * 1000, total, 0, total * 100)
    r = store.cluster_rates(T0, T0 + 1_000_000, max_points=20)
    assert 1 < len(r.timestamps) <= 20
    assert max(v for v in r.records_in if v is not None) == 5000.0
    assert min(v for v in r.records_in if v is not None) == 10.0
    assert max(v for v in r.bytes_in if v is not None) == 500_000.0


def test_concurrent_writers_and_readers(tmp_path: Path) -> None:
    path = str(tmp_path / "h.sqlite3")
    store = LagStore(path, retention_days=1)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(200):
                store.add_lag(T0 + i, [(f"g{w}", "t", p, i, i + p) for p in range(5)])
                store.add_cluster(T0 + i * 10 + w, i, i, None)
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(100):
                store.group_history("g0", T0, T0 + 1000, max_points=20)
                store.cluster_rates(T0, T0 + 10_000)
                store.purge(T0)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for w in range(4):
        h = store.group_history(f"g{w}", T0, T0 + 1000, max_points=1000)
        assert len(h.timestamps) == 200 and h.partitions["t-4"] == [4] * 200
    store.close()
    # WAL on disk, and the file reopens with its history.
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    again = LagStore(path, retention_days=1)
    assert again.group_names() == ["g0", "g1", "g2", "g3"]
    again.add_lag(T0 + 500, [("g0", "t", 9, 0, 1)])
    assert again.group_history("g0", T0 + 500, T0 + 500).partitions == {"t-9": [1]}
    again.close()


def test_rejects_bad_arguments(store: LagStore) -> None:
    with pytest.raises(ValueError):
        LagStore(":memory:", retention_days=0)
    with pytest.raises(ValueError):
        store.group_history("g", 0, 1, max_points=0)
