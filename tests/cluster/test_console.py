"""The web console's brokers and reassignments pages on a real cluster (ZooKeeper and brokers in
racks), over HTTP (aiohttp's test server, the console in this process, as in
tests/console/test_pages.py).

One cluster for the module, the tests in order: the brokers page against Metadata,
DescribeCluster and the segment files on disk; a broker stopped (offline while it still holds
replicas) and restarted, whose leaderships stay elsewhere until a preferred election (the
imbalance against the controller's ``leader.imbalance.per.broker.percentage``, set to 20 here
so that it must be read); a reassignment kept in progress by a paused broker, then cancelled.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from confluent_kafka.admin import AdminClient as ConfluentAdmin

from broker.dev_cluster import INSTALL_HINT
from client.admin import AIOAdminClient
from client.admin_leaders import PREFERRED
from client.producer import AIOProducer
from client.types import TopicPartition
from console.app import make_app
from console.settings import ConsoleSettings
from tests.cluster.helpers import broker_racks, create_topic, partition_metadata, wait_for
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess, zookeeper_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}  # broker 4 joins in the last test
TOPIC = "console-moving"
PARTITIONS = 4
IMBALANCE_PERCENTAGE = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not zookeeper_available():
        pytest.skip(INSTALL_HINT)
    root = tmp_path_factory.mktemp("console-cluster")
    with (
        ZooKeeperProcess(root / "zookeeper") as zk,
        Cluster(
            root,
            zk,
            racks=RACKS,
            auto_leader_rebalance_enable="false",
            leader_imbalance_per_broker_percentage=str(IMBALANCE_PERCENTAGE),
        ) as c,
    ):
        create_topic(c.bootstrap, TOPIC, PARTITIONS, 2)
        yield c


@pytest.fixture
async def web(cluster: Cluster, tmp_path: Path) -> AsyncIterator[TestClient]:
    settings = ConsoleSettings(
        bootstrap_servers=cluster.bootstrap, history_path=str(tmp_path / "lag.sqlite3")
    )
    async with TestClient(TestServer(make_app(settings, sample=False))) as client:
        yield client


def rows_with(page: str, attribute: str) -> dict[int, dict[str, str]]:
    """{data-broker or data-partition: the row's data-* attributes} of the table rows of ``page``
    that have ``data-<attribute>``."""
    out = {}
    for m in re.finditer(r"<tr ([^>]*)>", page):
        attrs = dict(re.findall(r'data-([\w-]+)="([^"]*)"', m.group(1)))
        if attribute in attrs:
            out[int(attrs.get("broker", attrs.get("partition", "-1")))] = attrs
    return out


async def until(web: TestClient, path: str, check: Callable[[str], bool], timeout: float, what: str) -> str:
    """GET ``path`` until ``check(page)`` holds (the console keeps its snapshot for 3 s)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        r = await web.get(path)
        page = await r.text()
        assert r.status == 200 and "Traceback" not in page, page[:3000]
        if check(page):
            return page
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}; {path} shows:\n{page[:6000]}")
        await asyncio.sleep(0.5)


def assignment(cluster: Cluster) -> tuple[int, dict[int, tuple[int, int, int]]]:
    """The controller, and {broker: (partitions it leads, replicas it holds, partitions it is the
    preferred leader of)} over every topic, from confluent-kafka's Metadata."""
    md = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET}).list_topics(timeout=10)
    counts: dict[int, list[int]] = {}
    for t in md.topics.values():
        for p in t.partitions.values():
            if p.leader >= 0:
                counts.setdefault(p.leader, [0, 0, 0])[0] += 1
            for r in p.replicas:
                counts.setdefault(r, [0, 0, 0])[1] += 1
            if p.replicas:
                counts.setdefault(p.replicas[0], [0, 0, 0])[2] += 1
    return md.controller_id, {n: (c[0], c[1], c[2]) for n, c in counts.items()}


def bytes_on_disk(cluster: Cluster, node: int) -> int:
    """The `.log` files of every partition on ``node`` (what DescribeLogDirs sums)."""
    data = cluster.brokers[node].data_dir
    return sum(f.stat().st_size for f in data.glob("*-*/*.log"))


async def test_brokers_show_racks_leaders_replicas_bytes_and_the_controller(
    cluster: Cluster, web: TestClient
) -> None:
    async with AIOProducer({"bootstrap.servers": cluster.bootstrap, "acks": "all"}) as producer:
        for i in range(400):
            await producer.send(TOPIC, b"v" * 500, partition=i % PARTITIONS)
        await producer.flush()
    controller, counts = assignment(cluster)
    racks = broker_racks(cluster.bootstrap)
    assert racks == {1: "a", 2: "b", 3: "c"}
    disk = {n: bytes_on_disk(cluster, n) for n in (1, 2, 3)}
    assert all(size > 0 for size in disk.values()), disk

    def shown(page: str) -> bool:
        rows = rows_with(page, "leaders")
        return sorted(rows) == [1, 2, 3] and all(int(rows[n]["bytes"]) == disk[n] for n in rows)

    page = await until(web, "/brokers", shown, 30, "every broker's bytes on disk")
    rows = rows_with(page, "leaders")
    for node in (1, 2, 3):
        row = rows[node]
        assert row["status"] == "online"
        assert (int(row["leaders"]), int(row["replicas"])) == counts[node][:2], (node, row, counts)
        assert row.get("controller") == ("yes" if node == controller else None), row
        address = cluster.brokers[node].bootstrap
        assert re.search(
            rf'<tr data-broker="{node}"[^>]*>\s*<th scope="row">{node}.*?</th>\s*<td>{address}</td>\s*<td>{racks[node]}</td>',
            page,
            re.S,
        ), page
    assert "No reassignments in progress." in page


async def test_an_offline_broker_and_the_leader_imbalance_it_leaves(
    cluster: Cluster, web: TestClient
) -> None:
    controller, counts = assignment(cluster)
    node = next(n for n in (1, 2, 3) if n != controller and counts[n][2] > 0)
    preferred = counts[node][2]
    held = counts[node][1]

    cluster.brokers[node].stop()  # SIGTERM: its leaderships move away, it leaves ZooKeeper
    try:
        page = await until(
            web,
            "/brokers",
            lambda p: rows_with(p, "leaders").get(node, {}).get("status") == "offline",
            30,
            f"broker {node} offline",
        )
        row = rows_with(page, "leaders")[node]
        assert (row["leaders"], row["replicas"], row["bytes"]) == ("0", str(held), ""), row
        assert re.search(rf"Broker {node}: bytes on disk unknown \(offline\)", page)
    finally:
        cluster.restart(node)
    wait_for(
        lambda: all(
            node in isr
            for t in (TOPIC, "__consumer_offsets")
            for _, r, isr in partition_metadata(cluster.bootstrap, t).values()
            if node in r
        ),
        60,
        f"broker {node} back in its ISRs",
    )

    def imbalanced(page: str) -> bool:
        row = rows_with(page, "preferred").get(node, {})
        return row.get("elsewhere") == str(preferred)

    page = await until(web, "/brokers", imbalanced, 30, f"broker {node}'s leaderships elsewhere")
    row = rows_with(page, "preferred")[node]
    assert row == {
        "broker": str(node),
        "preferred": str(preferred),
        "elsewhere": str(preferred),
        "above": "yes",
    }
    assert f"100 % (above {IMBALANCE_PERCENTAGE} %)" in page
    threshold = re.search(r'id="imbalance-threshold">(.*?)</p>', page, re.S)
    assert threshold, page
    text = re.sub(r"\s+", " ", threshold.group(1))
    assert f"<strong>{IMBALANCE_PERCENTAGE} %</strong>" in text, text
    assert f"of the controller, broker {controller}" in text and "Automatic rebalancing is off" in text, text
    assert rows_with(page, "leaders")[node]["leaders"] == "0"

    async with AIOAdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        await admin.elect_leaders(PREFERRED)
    page = await until(
        web,
        "/brokers",
        lambda p: all(r["elsewhere"] == "0" for r in rows_with(p, "preferred").values()),
        30,
        "every partition led by its preferred replica",
    )
    assert all(r["above"] == "no" for r in rows_with(page, "preferred").values())
    assert rows_with(page, "leaders")[node]["leaders"] == str(preferred)


async def test_a_reassignment_in_progress_then_cancelled(cluster: Cluster, web: TestClient) -> None:
    """A move onto a broker that stops answering at once cannot complete (as in
    tests/cluster/test_reassignment.py): the page shows it, with the live new replica caught up,
    the paused one unknown and, once its ZooKeeper session expires, offline; then none."""
    cluster.add_broker(4)
    cluster.pause(4)
    tp = TopicPartition(TOPIC, 0)
    try:
        _, original, _ = partition_metadata(cluster.bootstrap, TOPIC)[0]
        (free,) = {1, 2, 3} - set(original)
        target = [free, 4]
        async with AIOAdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
            assert await admin.alter_partition_reassignments({tp: target}) == {tp: None}

            def shown(page: str) -> bool:
                row = rows_with(page, "adding").get(0)
                return row is not None and f'data-replica="{free}" data-percent="100.0"' in page

            page = await until(
                web, "/reassignments", shown, 60, f"the move of {tp} with broker {free} caught up"
            )
            (row,) = rows_with(page, "adding").values()
            assert (row["topic"], row["target"]) == (TOPIC, f"{free},4"), row
            assert sorted(map(int, row["adding"].split(","))) == sorted(target), row
            assert sorted(map(int, row["removing"].split(","))) == sorted(original), row
            assert re.search(
                rf'data-replica="{free}" data-percent="100.0">.*?broker {free}:\s*in sync', page, re.S
            )
            assert re.search(r'data-replica="4" data-percent="">\s*broker 4:\s*unknown \(', page), page

            # broker 4's ZooKeeper session expires: offline, still named by the partition's replicas
            page = await until(
                web,
                "/brokers",
                lambda p: rows_with(p, "leaders").get(4, {}).get("status") == "offline",
                60,
                "broker 4 offline",
            )
            row4 = rows_with(page, "leaders")[4]
            assert (row4["replicas"], row4["leaders"], row4["bytes"]) == ("1", "0", ""), row4
            assert "1 partition reassignment in progress" in page
            page = await until(
                web,
                "/reassignments",
                lambda p: "broker 4: unknown (broker 4 is offline)" in p,
                30,
                "4 offline",
            )

            assert await admin.alter_partition_reassignments({tp: None}) == {tp: None}
        await until(
            web, "/reassignments", lambda p: "No reassignments in progress." in p, 30, "no reassignment"
        )
        page = await until(
            web, "/brokers", lambda p: 4 not in rows_with(p, "leaders"), 30, "broker 4 gone from the table"
        )
        assert "No reassignments in progress." in page
    finally:
        cluster.resume(4)
