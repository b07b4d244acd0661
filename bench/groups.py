"""Consumer-group benchmarks: rebalance latency of a 10-member group (classic and KIP-848), OffsetCommit throughput.

Raw protocol clients (our own codec over asyncio streams on uvloop, as the
broker) against a broker subprocess, so the figures are the broker's, not a
client library's. The client shares the machine's two cores with the broker,
so its codec is kept cheap: ConsumerGroupHeartbeat goes through the fast twin
of its schema (`protocol.heartbeat_fast`, ~8 us a heartbeat and its answer,
against ~24 us through the schema), the classic requests through their schemas
(~30 us per member for a heartbeat, a JoinGroup and a SyncGroup and their
answers):

1. rebalance: a Stable group of ``--members`` members all rejoin with changed
   metadata (as after a subscription change); measured from the moment the
   last JoinGroup is written to the moment the last member holds its SyncGroup
   answer (Stable). Median and max over ``--rounds`` rounds. Baseline: the
   median round trip of ``--members`` parallel Heartbeats on the same
   connections, so the ratio reads as "rebalance = N heartbeat round trips".
2. consumer protocol (KIP-848): a member joins a Stable group of ``--members``
   consumer-protocol members, every member heartbeating as soon as it has its
   answer, until the group is Stable again (one epoch, every partition of a
   60-partition topic owned once). The joiner's first heartbeat goes out first
   (its arrival is the event; the others learn of it from their next
   heartbeats), its later ones last (a real joiner's next heartbeat comes at
   its interval, while members told to revoke acknowledge at once): two rounds
   of heartbeats. (Until this ordering the joiner's first heartbeat went out
   last, and the others learned of it a round later: three rounds.) Compared
   with 1.'s classic rebalance, which leaves out how members learn of it (a
   Heartbeat answered REBALANCE_IN_PROGRESS), so that ratio favours the classic
   protocol. What KIP-848 saves is consumption: only the partitions that move
   have no owner for a while, so the run also sums partition-milliseconds
   without an owner, against 60 x the classic round (an eager classic group
   revokes everything).
3. classic join: the event of 2. in a classic group: a member joins a Stable group of
   ``--members``, its JoinGroup first, the others heartbeating back to back until told
   REBALANCE_IN_PROGRESS, then JoinGroup and SyncGroup, until every member holds its
   SyncGroup answer. This is the like-for-like comparison for 2. The KIP-848 members
   heartbeat in rounds, all at once; driving them each on its own measured no faster
   (7.5 against 6.6 ms). 2. and 3. run in alternating chunks, so the machine's drift
   (which moved the classic median between 2.7 and 5.2 ms from run to run) weighs on both.
4. commit: ``--committers`` connections each send OffsetCommit requests of 8
   partitions back to back for ``--seconds``; every commit is answered only
   after its __consumer_offsets batch is fsynced (the acks=all rule).
   Baseline: the same connections sending acks=all Produce requests of one
   small record to each of 8 partitions, which pays the same fsync.

``run()`` returns ``[(name, value, unit), ...]`` and prints a small table;
``python -m bench.groups`` runs it with quick defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from protocol.headers import encode_request_header, skip_response_header  # noqa: E402
from protocol.messages import decode_response, encode_request  # noqa: E402
from protocol.records import Record, build_batch  # noqa: E402
from tests.broker_process import BrokerProcess  # noqa: E402

Row = tuple[str, float, str]
KIP848_PARTITIONS = 60  # the topic of the KIP-848 run; the classic comparison assumes as many
_SIZE = struct.Struct(">i")


class Conn:
    """One pipelined connection: requests are answered in order, so a FIFO of futures matches them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0
        self.pending: list[tuple[int, int, asyncio.Future[Any]]] = []
        self.task = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, port: int) -> Conn:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> asyncio.Future[Any]:
        self.correlation += 1
        payload = encode_request_header(api_key, version, self.correlation, "bench") + encode_request(
            api_key, version, body
        )
        self.writer.write(_SIZE.pack(len(payload)) + payload)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append((api_key, version, fut))
        return fut

    async def _read(self) -> None:
        while True:
            (size,) = _SIZE.unpack(await self.reader.readexactly(4))
            frame = await self.reader.readexactly(size)
            api_key, version, fut = self.pending.pop(0)
            body = frame[skip_response_header(frame, api_key, version) :]
            fut.set_result(decode_response(api_key, version, body))

    async def close(self) -> None:
        self.task.cancel()
        self.writer.close()


def _join(group: str, member_id: str, metadata: bytes) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 30_000,
        "rebalance_timeout_ms": 60_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
    }


async def _round(conns: list[Conn], group: str, ids: list[str], tag: bytes) -> tuple[float, list[str], int]:
    """All members (re)join and sync once; returns (seconds from last join sent to last sync answered, ids, gen)."""
    joins = [c.send(11, 3, _join(group, mid, tag)) for c, mid in zip(conns, ids, strict=True)]
    last_join_sent = time.perf_counter()
    results = await asyncio.gather(*joins)
    assert all(r.error_code == 0 for r in results), [r.error_code for r in results]
    leader = next(r for r in results if r.members)
    assignments = [{"member_id": m.member_id, "assignment": b"a"} for m in leader.members]
    syncs = [
        c.send(
            14,
            3,
            {
                "group_id": group,
                "generation_id": r.generation_id,
                "member_id": r.member_id,
                "group_instance_id": None,
                "assignments": assignments if r is leader else [],
            },
        )
        for c, r in zip(conns, results, strict=True)
    ]
    answers = await asyncio.gather(*syncs)
    done = time.perf_counter()
    assert all(a.error_code == 0 for a in answers), [a.error_code for a in answers]
    return done - last_join_sent, [r.member_id for r in results], results[0].generation_id


async def bench_rebalance(port: int, members: int, rounds: int) -> list[Row]:
    conns = [await Conn.open(port) for _ in range(members)]
    group = "bench-rebalance"
    try:
        _, ids, generation = await _round(conns, group, [""] * members, b"r0")  # forms the group
        times = []
        for i in range(1, rounds + 1):
            elapsed, ids, generation = await _round(conns, group, ids, b"r%d" % i)
            times.append(elapsed)
        hb_times = []
        for _ in range(rounds):
            start = time.perf_counter()
            beats = [
                c.send(12, 3, _classic_heartbeat(group, generation, m))
                for c, m in zip(conns, ids, strict=True)
            ]
            await asyncio.gather(*beats)
            hb_times.append(time.perf_counter() - start)
    finally:
        for c in conns:
            await c.close()
    median, hb = statistics.median(times), statistics.median(hb_times)
    return [
        (f"rebalance of {members} members: last JoinGroup -> all Stable (median)", median * 1000, "ms"),
        (f"rebalance of {members} members (max of {rounds})", max(times) * 1000, "ms"),
        (f"  baseline: {members} parallel Heartbeats (median)", hb * 1000, "ms"),
        ("  rebalance / heartbeat round trip", median / hb if hb else 0.0, "x"),
    ]


def _classic_heartbeat(group: str, generation: int, member_id: str) -> dict[str, Any]:
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": None}


async def _classic_member(conn: Conn, group: str, member_id: str, generation: int | None) -> tuple[str, Any]:
    """One member's part in a classic rebalance: heartbeat back to back until told
    REBALANCE_IN_PROGRESS (skipped for a joining member, ``generation`` None), JoinGroup,
    SyncGroup (the leader hands everyone an assignment). Returns (member id, JoinGroup answer)."""
    if generation is not None:
        while True:
            beat = await conn.send(12, 3, _classic_heartbeat(group, generation, member_id))
            if beat.error_code == 27:  # REBALANCE_IN_PROGRESS
                break
            assert beat.error_code == 0, beat.error_code
    joined = await conn.send(11, 3, _join(group, member_id, b"j"))
    assert joined.error_code == 0, joined.error_code
    assignments = [{"member_id": m.member_id, "assignment": b"a"} for m in joined.members]
    synced = await conn.send(
        14,
        3,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": None,
            "assignments": assignments,
        },
    )
    assert synced.error_code == 0, synced.error_code
    return joined.member_id, joined


async def classic_join_times(port: int, members: int, rounds: int) -> list[float]:
    """Classic: a member joins a Stable group of ``members``, the others heartbeating back to
    back, until every member holds its SyncGroup answer; then it leaves (not timed). The
    joiner's JoinGroup goes out first (it is the event); the others learn of it from their
    next heartbeats. Returns the seconds of each round; a fresh group per call."""
    group = f"bench-classic-join-{time.monotonic_ns()}"
    conns = [await Conn.open(port) for _ in range(members + 1)]
    times = []
    try:
        _, ids, generation = await _round(conns[:members], group, [""] * members, b"j")
        for _ in range(rounds):
            start = time.perf_counter()
            joiner, *done = await asyncio.gather(
                _classic_member(conns[members], group, "", None),
                *(_classic_member(c, group, m, generation) for c, m in zip(conns, ids, strict=False)),
            )
            times.append(time.perf_counter() - start)
            ids = [member_id for member_id, _ in done]
            generation = done[0][1].generation_id
            left = await conns[members].send(
                13, 3, {"group_id": group, "members": [{"member_id": joiner[0], "group_instance_id": None}]}
            )
            assert left.error_code == 0, left.error_code
            done = await asyncio.gather(
                *(_classic_member(c, group, m, generation) for c, m in zip(conns, ids, strict=False))
            )
            generation = done[0][1].generation_id
    finally:
        for c in conns:
            await c.close()
    return times


def _heartbeat(
    group: str, topic: str, member_id: str, epoch: int, owned: dict[Any, list[int]]
) -> dict[str, Any]:
    joining = epoch == 0
    return {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 60_000 if joining else -1,
        "subscribed_topic_names": [topic] if joining else None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [{"topic_id": t, "partitions": ps} for t, ps in owned.items()],
    }


class _Member848:
    def __init__(self, conn: Conn, member_id: str) -> None:
        self.conn, self.member_id = conn, member_id
        self.epoch = 0
        self.owned: dict[Any, list[int]] = {}


async def _until_stable(
    members: list[_Member848], group: str, topic: str, partitions: int, joiner: _Member848 | None = None
) -> tuple[int, float]:
    """Every member heartbeats at once, again and again, until all share one epoch and own every
    partition exactly once (what a Stable group is). Returns the heartbeat rounds it took and the
    partition-seconds during which a partition had no owner (nobody could consume it).

    ``joiner`` (one of ``members``): its heartbeat goes out first in the first round (its
    arrival is the event), last in the others: a real joiner's next heartbeat comes at its
    interval, while members told to revoke acknowledge at once."""
    rounds = 0
    orphaned: dict[int, float] = {}
    idle = 0.0
    others = [m for m in members if m is not joiner]
    while True:
        rounds += 1
        if joiner is not None:
            members = [joiner, *others] if rounds == 1 else [*others, joiner]
        answers = await asyncio.gather(
            *(m.conn.send(68, 1, _heartbeat(group, topic, m.member_id, m.epoch, m.owned)) for m in members)
        )
        now = time.perf_counter()
        for m, a in zip(members, answers, strict=True):
            assert a.error_code == 0, (a.error_code, a.error_message)
            m.epoch = a.member_epoch
            if a.assignment is not None:
                m.owned = {tp.topic_id: list(tp.partitions) for tp in a.assignment.topic_partitions}
        owned = [p for m in members for ps in m.owned.values() for p in ps]
        for p in set(range(partitions)) - set(owned):
            orphaned.setdefault(p, now)
        for p in [p for p in orphaned if p in owned]:
            idle += now - orphaned.pop(p)
        if len({m.epoch for m in members}) == 1 and sorted(owned) == list(range(partitions)):
            return rounds, idle


async def consumer_join_times(
    port: int, members: int, rounds: int, partitions: int = KIP848_PARTITIONS
) -> tuple[list[float], list[int], list[float]]:
    """KIP-848: a member joins a Stable group of ``members`` (every member heartbeating at once,
    the joiner first) until the group is Stable again; then it leaves (not timed). Returns, per
    round, the seconds, the heartbeat rounds and the partition-seconds without an owner; a fresh
    group per call."""
    group, topic = f"bench-848-{time.monotonic_ns()}", "bench-848"
    conns = [await Conn.open(port) for _ in range(members + 1)]
    created = await conns[0].send(
        19,
        4,
        {
            "topics": [
                {
                    "name": topic,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout_ms": 10_000,
            "validate_only": False,
        },
    )
    assert all(t.error_code in (0, 36) for t in created.topics)
    group_members = [_Member848(c, f"m{i}") for i, c in enumerate(conns[:members])]
    times: list[float] = []
    beats: list[int] = []
    idles: list[float] = []
    try:
        await _until_stable(group_members, group, topic, partitions)
        for i in range(rounds):
            extra = _Member848(conns[members], f"extra-{i}")
            start = time.perf_counter()
            took, idle = await _until_stable([*group_members, extra], group, topic, partitions, extra)
            times.append(time.perf_counter() - start)
            beats.append(took)
            idles.append(idle)
            left = await extra.conn.send(68, 1, _heartbeat(group, topic, extra.member_id, -1, {}))
            assert left.error_code == 0
            await _until_stable(group_members, group, topic, partitions)
    finally:
        for c in conns:
            await c.close()
    return times, beats, idles


async def bench_joins(port: int, members: int, rounds: int, chunks: int = 4) -> list[Row]:
    """2. and 3.: ``rounds`` of each, in ``chunks`` alternating runs (which goes first
    alternates too), so the machine's drift weighs on both alike."""
    classic: list[float] = []
    modern: list[float] = []
    beats: list[int] = []
    idles: list[float] = []
    per_chunk = max(1, rounds // chunks)
    for chunk in range(chunks):
        for kind in ("classic", "consumer") if chunk % 2 == 0 else ("consumer", "classic"):
            if kind == "classic":
                classic += await classic_join_times(port, members, per_chunk)
            else:
                t, b, i = await consumer_join_times(port, members, per_chunk)
                modern, beats, idles = modern + t, beats + b, idles + i
    n = len(classic)
    return [
        (
            f"classic: a member joins {members} members until Stable (median)",
            statistics.median(classic) * 1000,
            "ms",
        ),
        (f"classic: the same (max of {n})", max(classic) * 1000, "ms"),
        (
            f"KIP-848: a member joins {members} members until Stable (median)",
            statistics.median(modern) * 1000,
            "ms",
        ),
        (f"KIP-848: the same (max of {n})", max(modern) * 1000, "ms"),
        ("  heartbeat rounds it takes (median)", statistics.median(beats), "rounds"),
        (
            f"  partition-ms without an owner, {KIP848_PARTITIONS} partitions (median)",
            statistics.median(idles) * 1000,
            "ms",
        ),
        (
            "  KIP-848 join / classic join (medians, the same event)",
            statistics.median(modern) / statistics.median(classic),
            "x",
        ),
    ]


async def _loop(conn: Conn, make: Any, seconds: float, check: Any) -> int:
    done = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        resp = await conn.send(*make(done))
        check(resp)
        done += 1
    return done


async def bench_commits(port: int, committers: int, seconds: float) -> list[Row]:
    conns = [await Conn.open(port) for _ in range(committers)]
    setup = conns[0]
    created = await setup.send(
        19,
        4,
        {
            "topics": [
                {"name": n, "num_partitions": 8, "replication_factor": 1, "assignments": [], "configs": []}
                for n in ("bench-commit", "bench-produce")
            ],
            "timeout_ms": 10_000,
            "validate_only": False,
        },
    )
    assert all(t.error_code in (0, 36) for t in created.topics)

    def commit(i: int) -> Any:
        return lambda n: (
            8,
            3,
            {
                "group_id": f"bench-commit-{i}",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": "bench-commit",
                        "partitions": [
                            {"partition_index": p, "committed_offset": n, "committed_metadata": ""}
                            for p in range(8)
                        ],
                    }
                ],
            },
        )

    def commit_ok(resp: Any) -> None:
        assert all(p.error_code == 0 for t in resp.topics for p in t.partitions)

    batch = build_batch([Record(0, 0, None, b"x" * 16)])

    def produce(_i: int) -> Any:
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {
                    "name": "bench-produce",
                    "partition_data": [{"index": p, "records": batch} for p in range(8)],
                }
            ],
        }
        return lambda _n: (0, 7, body)

    def produce_ok(resp: Any) -> None:
        assert all(p.error_code == 0 for t in resp.responses for p in t.partition_responses)

    try:
        start = time.perf_counter()
        counts = await asyncio.gather(*(_loop(c, commit(i), seconds, commit_ok) for i, c in enumerate(conns)))
        commit_rate = sum(counts) / (time.perf_counter() - start)
        start = time.perf_counter()
        counts = await asyncio.gather(
            *(_loop(c, produce(i), seconds, produce_ok) for i, c in enumerate(conns))
        )
        produce_rate = sum(counts) / (time.perf_counter() - start)
    finally:
        for c in conns:
            await c.close()
    return [
        (f"OffsetCommit of 8 partitions, {committers} connections, fsynced", commit_rate, "commits/s"),
        ("  baseline: acks=all Produce to 8 partitions, same connections", produce_rate, "requests/s"),
        ("  commit / produce", commit_rate / produce_rate if produce_rate else 0.0, "x"),
    ]


def run(members: int = 10, rounds: int = 20, committers: int = 16, seconds: float = 5.0) -> list[Row]:
    """Start a broker, run both benchmarks, print a table and return its rows."""
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data",
            extra=["--log-level", "WARNING"],
            env={"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "300"},  # forming the group only
        ).start()
        try:

            async def both() -> list[Row]:
                rows = await bench_rebalance(broker.port, members, rounds)
                joins = await bench_joins(broker.port, members, rounds)
                # classic (eager): every partition has no owner from the JoinGroups to the SyncGroup answers
                classic_idle = KIP848_PARTITIONS * rows[0][1]
                rows += [
                    *joins,
                    ("  KIP-848 join / classic rebalance (medians)", joins[2][1] / rows[0][1], "x"),
                    (
                        f"  classic partition-ms without an owner ({KIP848_PARTITIONS} x median rebalance)",
                        classic_idle,
                        "ms",
                    ),
                    ("  KIP-848 / classic partition-ms without an owner", joins[5][1] / classic_idle, "x"),
                ]
                return rows + await bench_commits(broker.port, committers, seconds)

            rows = uvloop.run(both())
        finally:
            broker.stop()
    print()
    print(f"{'consumer groups':<70} {'value':>12} unit")
    for name, value, unit in rows:
        print(f"{name:<70} {value:>12,.1f} {unit}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.groups")
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--committers", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    run(args.members, args.rounds, args.committers, args.seconds)


if __name__ == "__main__":
    main()
