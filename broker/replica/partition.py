"""One partition hosted on this broker: its log, role, leader epoch, replica set and ISR.

State, all on the event loop thread:

- ``log``: the `PartitionLog` (log start offset, high watermark, log end offset).
- ``leader_id`` / ``leader_epoch``: who leads and since which epoch; this broker
  is the leader when ``leader_id`` is its own id (`is_leader`).
- ``replicas`` (assignment order, first = preferred leader) and ``isr``.
- ``producers``: the idempotent-producer state, rebuilt from snapshots and the
  log at start (see broker/producer_state.py); ``snapshot_offset`` is the offset
  of its newest snapshot.
- ``waiters``: fetches parked until data arrives (`wake`).

A single broker leads every partition with replicas = ISR = [itself]; with
replication, the cluster side changes the role with `become_leader`.
"""

from __future__ import annotations

import asyncio

from broker.producer_state import PartitionProducers
from storage.partition_log import PartitionLog


class Partition:
    __slots__ = (
        "topic",
        "index",
        "log",
        "local_id",
        "leader_id",
        "leader_epoch",
        "replicas",
        "isr",
        "producers",
        "snapshot_offset",
        "waiters",
    )

    def __init__(self, topic: str, index: int, log: PartitionLog, local_id: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.local_id = local_id
        self.leader_id = -1
        self.leader_epoch = -1
        self.replicas: list[int] = [local_id]
        self.isr: list[int] = []
        self.producers: PartitionProducers | None = None
        self.snapshot_offset = -1
        self.waiters: set[asyncio.Future[None]] = set()

    @property
    def tp(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def become_leader(self, leader_epoch: int, replicas: list[int], isr: list[int]) -> None:
        """Lead from ``leader_epoch`` on: the epoch's start offset is recorded at the LEO (Kafka's makeLeader)."""
        self.log.become_leader(leader_epoch)
        self.leader_id = self.local_id
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)

    def producer_state(self) -> PartitionProducers:
        if self.producers is None:
            self.producers = PartitionProducers()
        return self.producers

    def wake(self) -> None:
        """Resolve every fetch parked on this partition (new data, or the partition went away)."""
        waiters, self.waiters = self.waiters, set()
        for f in waiters:
            if not f.done():
                f.set_result(None)

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={self.isr}, hw={self.log.high_watermark}, leo={self.log.log_end_offset})"
        )
