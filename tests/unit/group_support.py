"""Test doubles for the group coordinator: an in-memory `__consumer_offsets` and a member driver."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

from broker.groups.clock import FakeClock
from broker.groups.coordinator import CoordinatorConfig, Done, GroupCoordinator, OffsetCommit, RecordKV
from broker.groups.model import JoinRequest, JoinResult, Protocols, SyncResult, TopicPartition
from protocol.errors import ErrorCode


class MemoryOffsetsLog:
    """`OffsetsLog` in memory. Appends land at once; ``done`` runs on the fake clock's next tick
    (``clock.run_due()``), unless ``hold`` is set, when `release` completes them; ``fail_with``
    makes the next completions report that error."""

    def __init__(self, clock: FakeClock, num_partitions: int = 50) -> None:
        self.clock = clock
        self._num_partitions = num_partitions
        self.partitions: dict[int, list[RecordKV]] = defaultdict(list)
        self.hold = False
        self.held: list[Done] = []
        self.fail_with: ErrorCode | None = None
        self.open_transactions: dict[int, dict[int, list[RecordKV]]] = {}
        self.transactional: dict[int, dict[int, list[RecordKV]]] = defaultdict(dict)

    @property
    def num_partitions(self) -> int:
        return self._num_partitions

    def append(
        self,
        partition: int,
        records: Sequence[RecordKV],
        done: Done | None,
        producer: tuple[int, int] | None = None,
    ) -> None:
        if producer is None:
            self.partitions[partition].extend(records)
        else:
            self.transactional[partition].setdefault(producer[0], []).extend(records)
        if done is None:
            return
        if self.hold:
            self.held.append(done)
        else:
            self.clock.call_later(0, lambda: done(self._outcome()))

    def when_committed(self, partition: int, done: Done) -> None:
        """At once unless writes are held: then with them, at `release`."""
        if self.hold and self.held:
            self.held.append(done)
        else:
            done(self._outcome())

    def release(self) -> None:
        held, self.held = self.held, []
        for done in held:
            done(self._outcome())

    def _outcome(self) -> ErrorCode:
        return self.fail_with if self.fail_with is not None else ErrorCode.NONE

    def marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker: the producer's records count from here (COMMIT) or never (ABORT)."""
        records = self.transactional[partition].pop(producer_id, [])
        if commit:
            self.partitions[partition].extend(records)

    def read(self, partition: int) -> Iterator[RecordKV]:
        yield from list(self.partitions[partition])
        self.open_transactions[partition] = {pid: list(r) for pid, r in self.transactional[partition].items()}

    def all_records(self) -> list[RecordKV]:
        return [r for p in sorted(self.partitions) for r in self.partitions[p]]


class Box:
    """Collects the single answer of a callback-style coordinator call."""

    def __init__(self) -> None:
        self.values: list[object] = []

    def __call__(self, value: object) -> None:
        self.values.append(value)

    @property
    def done(self) -> bool:
        return bool(self.values)

    @property
    def value(self) -> object:
        assert len(self.values) == 1, self.values
        return self.values[0]


RANGE: Protocols = (("range", b"sub-range"),)


def make(
    clock: FakeClock | None = None, log: MemoryOffsetsLog | None = None, **config: int
) -> tuple[GroupCoordinator, FakeClock, MemoryOffsetsLog]:
    clock = clock or FakeClock()
    log = log or MemoryOffsetsLog(clock)
    settings = {"initial_rebalance_delay_ms": 3000, **config}
    coordinator = GroupCoordinator(CoordinatorConfig(**settings), log, clock)
    coordinator.load()
    return coordinator, clock, log


def join(
    c: GroupCoordinator,
    group: str = "g",
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: Protocols = RANGE,
    protocol_type: str = "consumer",
    session: int = 10_000,
    rebalance: int = 30_000,
    client_id: str = "client",
    require_known: bool = False,
) -> Box:
    box = Box()
    c.join_group(
        JoinRequest(
            group,
            member_id,
            instance,
            client_id,
            "/127.0.0.1",
            session,
            rebalance,
            protocol_type,
            protocols,
            require_known,
        ),
        box,
    )
    return box


def joined(box: Box) -> JoinResult:
    result = box.value
    assert isinstance(result, JoinResult)
    return result


def sync(
    c: GroupCoordinator,
    result: JoinResult,
    assignments: dict[str, bytes] | None = None,
    group: str = "g",
    instance: str | None = None,
) -> Box:
    box = Box()
    c.sync_group(group, result.generation_id, result.member_id, instance, assignments or {}, box)
    return box


def synced(box: Box) -> SyncResult:
    result = box.value
    assert isinstance(result, SyncResult)
    return result


def commit(
    c: GroupCoordinator,
    offsets: dict[TopicPartition, int],
    *,
    group: str = "g",
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
    metadata: str | None = "",
    retention: int = -1,
) -> Box:
    box = Box()
    c.commit_offsets(
        group,
        generation,
        member_id,
        instance,
        retention,
        {tp: OffsetCommit(o, metadata) for tp, o in offsets.items()},
        box,
    )
    return box
