"""Drive consumer-group members (tests/compat/group_member.py processes) and read what happened.

`Member` wraps one member process and its JSON-lines event file; `GroupView`
reads the broker's own record of the group: the group metadata and offset
commit records in `__consumer_offsets`, straight from the segment files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.groups.hashing import partition_for
from broker.groups.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from protocol.records import decode_batch, scan_valid_prefix
from tests.broker_process import REPO

CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka")


def wait_for(cond: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Member:
    """One member process. Events are re-read from its file on every query."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        out: Path,
        *,
        instance_id: str | None = None,
        session_ms: int = 6000,
    ) -> None:
        self.client = client
        self.out = out
        self.instance_id = instance_id
        stderr = open(str(out) + ".stderr", "ab")  # noqa: SIM115 - closed right after the child inherits it
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.compat.group_member",
                "--client",
                client,
                "--bootstrap",
                bootstrap,
                "--group",
                group,
                "--topic",
                topic,
                "--out",
                str(out),
                "--session-ms",
                str(session_ms),
                *(["--instance-id", instance_id] if instance_id else []),
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        stderr.close()

    def __repr__(self) -> str:
        return f"Member({self.client}, {self.out.name}, pid={self.proc.pid})"

    def events(self) -> list[dict[str, Any]]:
        try:
            lines = self.out.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by SIGKILL
                break
        return out

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def assignment(self) -> set[int]:
        """Partitions owned now: the last "assigned" unless a "revoked" came after it."""
        current: set[int] = set()
        for e in self.events():
            if e["e"] == "assigned":
                current = {p for _, p in e["tps"]}
            elif e["e"] in ("revoked", "closed"):
                current = set()
        return current

    def records(self) -> list[tuple[int, int]]:
        return [(p, o) for e in self.events() if e["e"] == "records" for p, o, _ in e["recs"]]

    def commits(self) -> list[tuple[float, int, int]]:
        """(time, partition, next offset) of every acknowledged commit."""
        return [
            (e["t"], int(p), o) for e in self.events() if e["e"] == "commit" for p, o in e["offsets"].items()
        ]

    def count(self, event: str) -> int:
        return sum(1 for e in self.events() if e["e"] == event)

    def report_committed(self, timeout: float = 20) -> dict[int, int | None]:
        """Ask the client for committed() of its assignment (SIGUSR1) and return the answer."""
        before = self.count("committed")
        self.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: self.count("committed") > before, timeout, f"{self} to report committed offsets")
        last = [e for e in self.events() if e["e"] == "committed"][-1]
        return {int(p): o for p, o in last["offsets"].items()}

    def close(self, timeout: float = 30) -> None:
        """SIGTERM: the client closes (a dynamic member leaves the group) and exits."""
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self} did not close within {timeout}s") from None

    def kill(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def ownership(members: list[Member]) -> dict[int, list[Member]]:
    owners: dict[int, list[Member]] = {}
    for m in members:
        if m.alive:
            for p in m.assignment():
                owners.setdefault(p, []).append(m)
    return owners


def owned_exactly_once(members: list[Member], partitions: int, expect_owners: int | None = None) -> bool:
    """Every partition owned by exactly one live member (and, if given, that many members own some)."""
    owners = ownership(members)
    if sorted(owners) != list(range(partitions)) or any(len(v) != 1 for v in owners.values()):
        return False
    if expect_owners is not None:
        return len({id(v[0]) for v in owners.values()}) == expect_owners
    return True


def all_committed(members: list[Member], partitions: int, offset: int) -> bool:
    """Some member has an acknowledged commit of ``offset`` for every partition."""
    return {p for m in members for _, p, o in m.commits() if o == offset} == set(range(partitions))


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    """``per_partition`` records to each partition, values ``"<partition>-<n>"`` counting from ``start``."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    errors: list[object] = []
    for n in range(start, start + per_partition):
        for p in range(partitions):
            producer.produce(
                topic, f"{p}-{n}".encode(), partition=p, on_delivery=lambda e, _m: e and errors.append(e)
            )
    assert producer.flush(30) == 0 and not errors, errors


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


@dataclass(frozen=True)
class CommitRecord:
    topic: str
    partition: int
    offset: int


class GroupView:
    """The broker's own record of one group, read from its `__consumer_offsets` partition files."""

    def __init__(self, data_dir: Path, group: str, partitions: int = 50) -> None:
        self.dir = data_dir / f"__consumer_offsets-{partition_for(group, partitions)}"
        self.group = group

    def _records(self) -> list[tuple[bytes, bytes | None]]:
        out = []
        for seg in sorted(self.dir.glob("*.log")):
            data = seg.read_bytes()
            headers, _ = scan_valid_prefix(data)
            for h in headers:
                for rec in decode_batch(data, h.position)[1]:
                    assert rec.key is not None
                    out.append((rec.key, rec.value))
        return out

    def generations(self) -> list[GroupValue]:
        """Every group metadata record of the group, in log order (one per completed generation, plus re-writes)."""
        return [
            decode_group_value(v)
            for k, v in self._records()
            if v is not None and decode_key(k) == GroupKey(self.group)
        ]

    def commits(self) -> list[CommitRecord]:
        out = []
        for k, v in self._records():
            key = decode_key(k)
            if isinstance(key, OffsetKey) and key.group == self.group and v is not None:
                out.append(CommitRecord(key.topic, key.partition, decode_offset_value(v).offset))
        return out


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """The consumer protocol's Assignment: version INT16, [topic STRING, [partition INT32]], user data BYTES."""
    import struct

    if not data:
        return {}
    pos = 2
    (n,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, list[int]] = {}
    for _ in range(n):
        (ln,) = struct.unpack_from(">h", data, pos)
        topic = data[pos + 2 : pos + 2 + ln].decode()
        pos += 2 + ln
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out[topic] = list(struct.unpack_from(f">{count}i", data, pos))
        pos += 4 * count
    return out
