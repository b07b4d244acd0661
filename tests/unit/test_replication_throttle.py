"""Replication throttles without a broker: the quota's rate, Kafka's throttled-replicas lists, and a
throttled copy's writeback."""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from pathlib import Path

import pytest

from broker.cluster import BrokerNode, LocalCluster
from broker.replica import ReplicaManager
from broker.replica.manager import COPY_WRITEBACK_BYTES
from broker.replica.throttle import ALL, Quota, ReplicationThrottles, throttled_partitions
from protocol.records import Record, build_batch
from storage.log_manager import LogManager
from tests.unit.test_storage_support import record_set


def test_a_quota_admits_its_rate_with_one_seconds_burst() -> None:
    quota = Quota(rate=1000.0)
    quota.record(0, now=100.0)
    assert not quota.exceeded(now=100.0)  # a full bucket: one second's worth
    quota.record(1500, now=100.0)  # a response is never cut short: the bucket goes below zero
    assert quota.exceeded(now=100.0) and quota.exceeded(now=100.4)
    assert not quota.exceeded(now=100.6)  # refilled at 1000 B/s
    # over a long copy the bytes admitted follow the rate
    sent, now = 0, 200.0
    while now < 260.0:
        if not quota.exceeded(now=now):
            quota.record(300, now=now)
            sent += 300
        now += 0.01
    assert 0.95 * 60_000 < sent < 1.05 * 60_000 + 1300
    assert not Quota().exceeded()  # no rate: never


def test_throttled_replicas_lists_name_partitions_per_broker() -> None:
    assert throttled_partitions("0:101,1:102, 2:101", 101) == frozenset({0, 2})
    assert throttled_partitions("0:101", 102) == frozenset()
    assert throttled_partitions("*", 7) is ALL
    assert throttled_partitions("", 7) == frozenset() and throttled_partitions(None, 7) == frozenset()
    assert throttled_partitions("x:1,3:y,4:1", 1) == frozenset({4})  # what does not parse is ignored


def test_only_listed_partitions_over_the_rate_are_throttled() -> None:
    throttles = ReplicationThrottles(1)
    configs = {"leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "*"}
    assert not throttles.leader_throttled(configs, 0)  # no rate set
    throttles.set_rates(10.0, 10.0)
    assert throttles.leader_counts(configs, 0) and not throttles.leader_counts(configs, 1)
    assert not throttles.leader_throttled(configs, 0)
    throttles.leader.record(1000)
    assert throttles.leader_throttled(configs, 0) and not throttles.leader_throttled(configs, 1)
    assert throttles.follower_counts(configs, 5) and not throttles.follower_throttled(configs, 5)
    throttles.follower.record(1000)
    assert throttles.follower_throttled(configs, 5)
    throttles.set_rates(None, None)
    assert not throttles.leader_throttled(configs, 0) and not throttles.follower_throttled(configs, 5)


# -- a throttled copy's bytes on their way to disk ------------------------------------------------------

_CACHESTAT = 451  # Linux 6.5+, x86-64 and arm64


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recent")]


def _dirty_bytes(path: Path) -> int | None:
    """Bytes of ``path`` dirty in the page cache (cachestat(2)); None where the call is missing."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    stat = _Stat()
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syscall(_CACHESTAT, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(stat), 0) != 0:
            return None
    finally:
        os.close(fd)
    return stat.dirty * os.sysconf("SC_PAGE_SIZE")


def _copy(replicas: ReplicaManager, topic: str, megabytes: int, *, throttled: bool) -> Path:
    """``megabytes`` of 64 KB batches appended as a follower of broker 8; the partition's `.log`."""
    part = replicas.partition(topic, 0)
    part.become_follower(8, 1, [7, 8], [8], 3)
    value = b"v" * (64 << 10)
    for offset in range(megabytes * 16):
        buf, headers = record_set(build_batch([Record(0, 0, None, value)], base_offset=offset))
        replicas.follower_append(part, buf, headers, leader_hw=0, now_ms=1_000, throttled=throttled)
    (log,) = Path(part.log.directory).glob("*.log")
    return log


def test_a_throttled_copy_does_not_pile_up_in_the_page_cache(tmp_path: Path) -> None:
    """The kernel would write a copy's dirty pages 30 s after the first, all at once, and every fsync on
    the filesystem (acks=all produces) would wait behind that burst: a throttled copy starts the
    writeback of each megabyte as it arrives."""
    logs = LogManager(str(tmp_path / "data"), node_id=7)
    replicas = ReplicaManager(logs, 7, producer_expiration_ms=86_400_000)
    try:
        LocalCluster(replicas, BrokerNode(7, "broker.example", 9092)).create_topic("copied", 1)
        LocalCluster(replicas, BrokerNode(7, "broker.example", 9092)).create_topic("fetched", 1)
        left = _dirty_bytes(_copy(replicas, "fetched", 8, throttled=False))
        if left is None or left < 4 << 20:
            pytest.skip("no cachestat(2), or a filesystem that keeps no dirty pages (tmpfs)")
        copied = _dirty_bytes(_copy(replicas, "copied", 8, throttled=True))
        assert copied is not None and copied <= COPY_WRITEBACK_BYTES + (64 << 10)
    finally:
        replicas.close()
