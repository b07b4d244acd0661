"""Our consumer in groups with confluent-kafka (librdkafka) and kafka-python members, each in its own process.

What each member's rebalance listener saw is in its event file
(tests/client/member.py); ownership is rebuilt from those events.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from client import AdminClient, NewTopic, Producer
from tests.broker_process import REPO, BrokerProcess

pytestmark = pytest.mark.timeout(180)

PARTITIONS = 6


class Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, assignor: str, out: Path) -> None:
        self.client = client
        self.out = out
        with open(str(out) + ".stderr", "ab") as err:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.client.member",
                    "--client",
                    client,
                    "--bootstrap",
                    bootstrap,
                    "--group",
                    group,
                    "--topic",
                    topic,
                    "--assignor",
                    assignor,
                    "--out",
                    str(out),
                ],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    def __repr__(self) -> str:
        return f"Member({self.client})"

    def events(self) -> list[dict[str, Any]]:
        out = []
        try:
            text = self.out.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return out

    def owned(self) -> set[int]:
        """Owned partitions per the listener: assigned adds (eager: replaces after a revoke), revoked/lost remove."""
        current: set[int] = set()
        for e in self.events():
            if e["e"] == "assigned":
                current |= set(e["tps"])
            elif e["e"] in ("revoked", "lost"):
                current -= set(e["tps"])
            elif e["e"] == "closed":
                current = set()
        return current

    def revocations(self) -> list[set[int]]:
        return [set(e["tps"]) for e in self.events() if e["e"] == "revoked"]

    def consumed(self) -> set[tuple[int, int]]:
        return {(p, o) for e in self.events() if e["e"] == "records" for p, o in e["recs"]}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def stderr(self) -> str:
        return Path(str(self.out) + ".stderr").read_text(errors="replace")[-3000:]


def wait_for(cond: Callable[[], object], timeout: float, what: str, members: list[Member]) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            state = {repr(m): (sorted(m.owned()), m.proc.poll()) for m in members}
            logs = {repr(m): m.stderr() for m in members if m.stderr()}
            raise AssertionError(f"timed out waiting for {what}: {state}\n{logs}")
        time.sleep(0.1)


def balanced(members: list[Member], sizes: list[int]) -> bool:
    """Every partition owned by exactly one member, with these ownership counts."""
    owned = [m.owned() for m in members]
    every = [p for o in owned for p in o]
    return sorted(every) == list(range(PARTITIONS)) and sorted(len(o) for o in owned) == sorted(sizes)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    try:
        yield started
    finally:
        for m in started:
            m.kill()


def produce(bootstrap: str, topic: str, per_partition: int) -> int:
    with Producer(bootstrap_servers=bootstrap, linger_ms=5) as p:
        for n in range(per_partition):
            for part in range(PARTITIONS):
                p.send(topic, f"{part}-{n}".encode(), partition=part)
    return per_partition * PARTITIONS


def all_consumed(members: list[Member], bootstrap: str, topic: str) -> set[tuple[int, int]]:
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        from client import TopicPartition

        ends = admin.list_offsets({TopicPartition(topic, p): "latest" for p in range(PARTITIONS)})
    return {(tp.partition, o) for tp, e in ends.items() for o in range(e.offset)}  # type: ignore[union-attr]


def setup_topic(bootstrap: str, topic: str) -> None:
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        assert admin.create_topics([NewTopic(topic, PARTITIONS)]) == {topic: None}


@pytest.mark.parametrize(
    "assignor, order",
    [
        ("range", ("minikafka", "confluent-kafka", "kafka-python")),
        ("roundrobin", ("confluent-kafka", "minikafka", "kafka-python")),
        # librdkafka has only the cooperative sticky assignor: two of ours with kafka-python leading.
        ("sticky", ("kafka-python", "minikafka", "minikafka")),
    ],
)
def test_mixed_eager_group_balances_and_survives_a_crash(
    kafka: BrokerProcess, tmp_path: Path, members: list[Member], assignor: str, order: tuple[str, ...]
) -> None:
    """minikafka + librdkafka + kafka-python: 2 partitions each; kill -9 the last, the others take over.

    The first member started leads the group, so each assignor runs once in
    our client and the others in theirs, all reading each other's encoding.
    """
    boot, topic, group = kafka.bootstrap, f"mixed-{assignor}", f"mixed-{assignor}-g"
    setup_topic(boot, topic)
    produce(boot, topic, 20)
    for i, client in enumerate(order):
        members.append(Member(client, boot, group, topic, assignor, tmp_path / f"{i}-{client}.jsonl"))
        wait_for(lambda: any(m.owned() for m in members), 60, "a first assignment", members)
    wait_for(lambda: balanced(members, [2, 2, 2]), 60, "three members owning two partitions each", members)
    wait_for(
        lambda: set().union(*(m.consumed() for m in members)) >= all_consumed(members, boot, topic),
        30,
        "every record consumed",
        members,
    )
    victim = members[2]
    victim.kill()  # no LeaveGroup: the coordinator notices when its session times out
    survivors = members[:2]
    wait_for(
        lambda: balanced(survivors, [3, 3]),
        60,
        "the survivors taking over the dead member's partitions",
        members,
    )
    produce(boot, topic, 10)
    wait_for(
        lambda: (
            set().union(*(m.consumed() for m in survivors))
            >= all_consumed(members, boot, topic) - victim.consumed()
        ),
        30,
        "records after the crash consumed by the survivors",
        members,
    )


def test_cooperative_sticky_never_revokes_unaffected_partitions(
    kafka: BrokerProcess, tmp_path: Path, members: list[Member]
) -> None:
    """minikafka + librdkafka, then kafka-python joins, then librdkafka crashes: only moving partitions are revoked."""
    boot, topic, group = kafka.bootstrap, "mixed-coop", "mixed-coop-g"
    setup_topic(boot, topic)
    produce(boot, topic, 10)
    ours = Member("minikafka", boot, group, topic, "cooperative-sticky", tmp_path / "ours.jsonl")
    members.append(ours)
    wait_for(lambda: balanced([ours], [6]), 60, "our member owning everything", members)
    rd = Member("confluent-kafka", boot, group, topic, "cooperative-sticky", tmp_path / "rdkafka.jsonl")
    members.append(rd)
    wait_for(lambda: balanced([ours, rd], [3, 3]), 60, "a 3/3 split", members)
    # Our member gave up exactly the 3 partitions that moved, in one revocation, and nothing else.
    assert ours.revocations() == [set(range(PARTITIONS)) - ours.owned()]
    kept_ours, kept_rd = ours.owned(), rd.owned()
    kp = Member("kafka-python", boot, group, topic, "cooperative-sticky", tmp_path / "kp.jsonl")
    members.append(kp)
    wait_for(lambda: balanced([ours, rd, kp], [2, 2, 2]), 60, "a 2/2/2 split", members)
    for m, kept in ((ours, kept_ours), (rd, kept_rd)):
        moved = kept - m.owned()
        assert len(moved) == 1, (m, kept, m.owned())
        later = m.revocations()[len(m.revocations()) - 1]
        assert later == moved, f"{m} revoked {later}, but only {moved} moved"
        assert all(not (r & m.owned()) for r in m.revocations()), f"{m} revoked a partition it kept"
    before = {m: (m.owned(), len(m.revocations())) for m in (ours, kp)}
    rd.kill()
    wait_for(
        lambda: balanced([ours, kp], [3, 3]),
        60,
        "the survivors taking over the crashed member's partitions",
        members,
    )
    for m in (ours, kp):
        owned_before, revocations_before = before[m]
        assert owned_before <= m.owned(), f"{m} lost a partition it had"
        assert len(m.revocations()) == revocations_before, f"{m} revoked something when a peer died"
    produce(boot, topic, 5)
    wait_for(
        lambda: (
            set().union(*(m.consumed() for m in (ours, kp)))
            >= all_consumed(members, boot, topic) - rd.consumed()
        ),
        30,
        "records after the crash consumed",
        members,
    )
