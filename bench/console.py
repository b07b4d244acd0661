"""The console suite: what the web console's pages cost with 2,000 partitions and 200 groups, and
what its lag sampler costs the broker, each beside the bundled client doing the same, same run.

One broker, 100 topics x 20 partitions (2,000) with ``RECORDS`` records each, and 200 groups
that only commit offsets (no members): ``bench-wide`` on 200 partitions (10 topics), the others
on 3 each. The console runs as a subprocess (``python -m console``, ``--sample-interval 10``).

1. Server time of /topics (first page, by name), /topics?sort=size&dir=desc, /brokers, /groups
   and /groups/bench-wide: time to the full body of a GET over a keep-alive connection. The console
   keeps its cluster snapshot (what /topics shows) and the group list for 3 s
   (``Gateway.max_age``); the group pages fetch their offsets on every request. So each of
   ``ROUNDS`` rounds pauses ``CACHE_S`` + 0.2 s, then makes one *cold* GET, then *cached* GETs
   while the snapshot is under 2.5 s old (``REQUESTS`` in all, after ``WARMUP``). Baseline: the
   same data fetched by the bundled client's `AIOAdminClient` in this process, once per round
   right beside the cold GET (which goes first alternates) and once after each cached GET --
   /topics: what the snapshot reads (DescribeCluster, Metadata, ListOffsets earliest and latest
   of 2,000 partitions, DescribeLogDirs) plus DescribeConfigs of the 50 topics shown; /brokers:
   the same snapshot plus ListPartitionReassignments (the controller's configs it also shows are
   kept for a minute, so not fetched here); /groups:
   ListGroups, then describe_groups, committed and end offsets of the 50 groups shown; a group:
   describe_groups + consumer_group_lag. The console's own sampler runs every 10 s meanwhile
   (it shows in the p95s).
2. Browser time: headless Chromium (Selenium) loads /topics and /groups/bench-wide
   ``BROWSER_LOADS`` times each, in rounds after one warm-up round (which caches plotly.min.js),
   each round right after a GET that refreshed the console's snapshot (so /topics is a cached
   hit; add figure 1's cold - cached for a cold one): Navigation Timing's
   responseEnd, domContentLoadedEventEnd and loadEventEnd, and for the group page the time
   until console.js marks the Plotly lag plot drawn (``data-points`` on ``#lag-plot``).
   Baseline: a 404 page (the same layout, CSS and JS, no data, no Plotly).
3. Sampler cost: ``SAMPLES`` calls of `LagSampler.sample_once` (after one warm-up) in this
   process, before the console starts (so only it talks to the broker), counting the requests
   per API (`BrokerConnection.request` wrapped) and the broker's CPU seconds (/proc). Baseline:
   the broker's capacity, ApiVersions requests/s from ``CAPACITY_TASKS`` concurrent loops for
   ``CAPACITY_S`` s, so the sampler's requests/s at a 10 s interval is a share of it; the
   broker CPU per sample / 10 s is the other share (the sampler's requests are not cheap ones).

Median and p95 of each series (latencies: medians, not best of N); shared, noisy machines: the
ratios are the result.
"""

from __future__ import annotations

import asyncio
import collections
import http.client
import math
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvloop
from confluent_kafka import Producer

from client.admin import TOPIC, AdminClient, AIOAdminClient, NewTopic
from client.connection import BrokerConnection
from client.types import OffsetAndTimestamp, TopicPartition
from console.lag_store import LagStore
from console.sampler import LagSampler
from protocol.messages import API_NAMES
from tests.broker_process import BrokerProcess
from tests.console.browser import ConsoleProcess, chrome, missing_browser

TOPICS, PARTITIONS = 100, 20
RECORDS = 5  # per partition
GROUPS = 200
WIDE, WIDE_TOPICS = "bench-wide", 10  # 10 topics x 20 partitions = 200
SHOWN = 50  # rows per list page (console.web.PAGE_SIZE)
REQUESTS, WARMUP = 20, 2
CACHE_S = 3.0  # console.gateway.Gateway.max_age
ROUNDS = 6  # cold fetches per page
BROWSER_LOADS = 5
SAMPLES = 3
INTERVAL_S = 10.0
CAPACITY_S = 3.0
CAPACITY_TASKS = 4
API_VERSIONS = 18


def _topic(i: int) -> str:
    return f"bench-{i:03d}"


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stats(ms: list[float]) -> tuple[float, float]:
    """(median, p95) of ``ms``."""
    ordered = sorted(ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


# -- setup -------------------------------------------------------------------------------------------


def populate(bootstrap: str) -> None:
    """2,000 partitions with ``RECORDS`` records each, and 200 groups' committed offsets."""
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        for start in range(0, TOPICS, 20):
            made = admin.create_topics([NewTopic(_topic(i), PARTITIONS, 1) for i in range(start, start + 20)])
            failed = {name: err for name, err in made.items() if err is not None}
            if failed:
                raise RuntimeError(f"topics not created: {failed}")
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1})
        for i in range(TOPICS):
            for p in range(PARTITIONS):
                for _ in range(RECORDS):
                    producer.produce(_topic(i), b"v" * 100, partition=p)
        if producer.flush(60):
            raise RuntimeError("records not delivered")
        wide = {TopicPartition(_topic(t), p): 1 for t in range(WIDE_TOPICS) for p in range(PARTITIONS)}
        admin.alter_consumer_group_offsets(WIDE, wide)
        for g in range(GROUPS - 1):
            offsets = {TopicPartition(_topic(g % TOPICS), p): 2 for p in range(3)}
            admin.alter_consumer_group_offsets(f"bench-g{g:03d}", offsets)


class Console:
    """The console subprocess (the browser tests' `ConsoleProcess`) and a keep-alive HTTP connection."""

    def __init__(self, bootstrap: str, root: Path) -> None:
        self.process = ConsoleProcess(bootstrap, root, sample_interval=INTERVAL_S).start()
        self.port = self.process.port
        self.proc = self.process.proc
        self.log_path = self.process.log_path
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            self.conn.request("GET", path)
            resp = self.conn.getresponse()
            return resp.status, resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # reconnect on the next request
            raise

    def timed(self, path: str) -> float:
        """ms until the full body of ``GET path`` is in."""
        start = time.perf_counter()
        status, _ = self.get(path)
        elapsed = (time.perf_counter() - start) * 1000
        if status != 200:
            raise RuntimeError(f"GET {path}: status {status}; log:\n{self.log_path.read_text()[-2000:]}")
        return elapsed

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until the console serves pages and its sampler has stored bench-wide's lag once."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"console exited: {self.log_path.read_text()[-2000:]}")
            try:
                status, body = self.get(f"/api/groups/{WIDE}/lag")
                if status == 200 and b'"x": []' not in body and b'"x":[]' not in body:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"console not ready: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> None:
        self.conn.close()
        self.process.stop()


# -- 1. server time -----------------------------------------------------------------------------------


async def _topics_data(admin: AIOAdminClient) -> None:
    """What /topics needs fetched: the console's snapshot, then the configs of the topics shown."""
    await admin.describe_cluster()
    topics = await admin.list_topics(internal=True)
    tps = [TopicPartition(t.name, p) for t in topics.values() for p in sorted(t.partitions)]
    await asyncio.gather(
        admin.list_offsets(dict.fromkeys(tps, "earliest")), admin.list_offsets(dict.fromkeys(tps, "latest"))
    )
    await admin.describe_log_dirs()
    shown = sorted(name for name, t in topics.items() if not t.internal)[:SHOWN]
    await admin.describe_configs([(TOPIC, n) for n in shown], ("retention.ms", "cleanup.policy"))


async def _brokers_data(admin: AIOAdminClient) -> None:
    """What /brokers needs fetched: the console's snapshot (one DescribeLogDirs per broker) and
    the reassignments in progress."""
    await admin.describe_cluster()
    topics = await admin.list_topics(internal=True)
    tps = [TopicPartition(t.name, p) for t in topics.values() for p in sorted(t.partitions)]
    await asyncio.gather(
        admin.list_offsets(dict.fromkeys(tps, "earliest")),
        admin.list_offsets(dict.fromkeys(tps, "latest")),
        admin.describe_log_dirs_by_broker(),
        admin.list_partition_reassignments(),
    )


async def _groups_data(admin: AIOAdminClient) -> None:
    """What /groups needs: the group list, and for the groups shown their state, offsets and ends."""
    names = sorted(await admin.list_groups())[:SHOWN]

    async def lags() -> None:
        committed = await admin.list_consumer_groups_offsets(names)
        tps = sorted({tp for o in committed.values() if isinstance(o, dict) for tp in o})
        ends = await admin.list_offsets(dict.fromkeys(tps, "latest"))
        assert all(isinstance(e, OffsetAndTimestamp) for e in ends.values())

    await asyncio.gather(admin.describe_groups(names), lags())


async def _group_data(admin: AIOAdminClient) -> None:
    """What /groups/bench-wide needs: the group's description and its lag per partition."""
    _, lag = await asyncio.gather(admin.describe_groups([WIDE]), admin.consumer_group_lag(WIDE))
    assert len(lag) == WIDE_TOPICS * PARTITIONS, len(lag)


PAGES: list[tuple[str, Callable[[AIOAdminClient], Awaitable[None]]]] = [
    ("/topics", _topics_data),
    ("/topics?sort=size&dir=desc", _topics_data),
    ("/brokers", _brokers_data),
    ("/groups", _groups_data),
    (f"/groups/{WIDE}", _group_data),
]


def server_times(console: Console, runner: asyncio.Runner, admin: AIOAdminClient) -> list[tuple[Any, ...]]:
    """Per page: (path, cold, cached, client after a pause, client back to back), lists of ms.

    Each of ``ROUNDS`` rounds: a pause of ``CACHE_S`` + 0.2 s (the console's caches expire), then
    one cold GET and one client fetch (which goes first alternates: the second finds the broker
    warm), then cached GETs, each followed by a client fetch, while the snapshot is < 2.5 s old.
    """
    out = []
    for path, fetch in PAGES:

        def client_ms(fetch: Callable[[AIOAdminClient], Awaitable[None]] = fetch) -> float:
            start = time.perf_counter()
            runner.run(fetch(admin))
            return (time.perf_counter() - start) * 1000

        for _ in range(WARMUP):
            console.timed(path)
            client_ms()
        cold: list[float] = []
        cached: list[float] = []
        client_cold: list[float] = []
        client_hot: list[float] = []
        per_round = -(-REQUESTS // ROUNDS)
        for r in range(ROUNDS):
            time.sleep(CACHE_S + 0.2)
            if r % 2:
                client_cold.append(client_ms())
            fetched = time.perf_counter()
            cold.append(console.timed(path))
            if r % 2 == 0:
                client_cold.append(client_ms())
            for _ in range(min(per_round, REQUESTS - len(cached))):
                if time.perf_counter() - fetched > CACHE_S - 0.5:
                    break
                cached.append(console.timed(path))
                client_hot.append(client_ms())
        out.append((path, cold, cached, client_cold, client_hot))
    return out


# -- 2. browser time ----------------------------------------------------------------------------------

NAV_JS = """
const n = performance.getEntriesByType('navigation')[0];
return [n.responseEnd, n.domContentLoadedEventEnd, n.loadEventEnd];
"""
# Resolves with performance.now() once console.js has drawn the lag plot (data-points set).
PLOT_JS = """
const done = arguments[arguments.length - 1];
const el = document.getElementById('lag-plot');
if (el.dataset.points !== undefined) { done(performance.now()); return; }
new MutationObserver((_, obs) => {
  if (el.dataset.points !== undefined) { obs.disconnect(); done(performance.now()); }
}).observe(el, {attributes: true});
"""


def browser_times(console: Console) -> list[tuple[str, list[list[float]]]] | None:
    """Per page: [[responseEnd, DOMContentLoaded, load, plot drawn or nan] per load], in ms."""
    missing = missing_browser()
    if missing:
        print(f"{missing}: browser figures skipped")
        return None
    driver = chrome()
    base = f"http://127.0.0.1:{console.port}"
    paths = ("/no-such-page", "/topics", f"/groups/{WIDE}")
    loads: dict[str, list[list[float]]] = {path: [] for path in paths}
    try:
        driver.set_script_timeout(30)
        for n in range(BROWSER_LOADS + 1):  # the first round caches plotly.min.js and console.js
            time.sleep(CACHE_S + 0.2)
            console.timed("/topics")  # a fresh snapshot: the browser's /topics hits the cache
            for path in paths:  # the group page caches nothing; the 404 page fetches nothing
                driver.get(base + path)
                figures = driver.execute_script(NAV_JS)
                plot = path.startswith("/groups/")
                figures.append(driver.execute_async_script(PLOT_JS) if plot else float("nan"))
                if n:
                    loads[path].append(figures)
    finally:
        driver.quit()
    return list(loads.items())


# -- 3. sampler cost ----------------------------------------------------------------------------------


async def _capacity(admin: AIOAdminClient, seconds: float) -> int:
    """ApiVersions requests answered in ``seconds`` by ``CAPACITY_TASKS`` concurrent loops."""
    body = {"client_software_name": "bench", "client_software_version": "1", "tagged_fields": {}}
    conn = await admin.cluster.any_connection()
    deadline = time.perf_counter() + seconds
    done = 0

    async def loop() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await conn.send(API_VERSIONS, body, version=3)
            done += 1

    await asyncio.gather(*(loop() for _ in range(CAPACITY_TASKS)))
    return done


def sampler_cost(runner: asyncio.Runner, bootstrap: str, pid: int) -> dict[str, Any]:
    admin = AIOAdminClient({"bootstrap.servers": bootstrap})
    runner.run(admin.start())
    store = LagStore(":memory:")
    counts: collections.Counter[str] = collections.Counter()
    original = BrokerConnection.request

    def counting(self: BrokerConnection, api_key: int, *args: Any, **kwargs: Any) -> Any:
        counts[API_NAMES.get(api_key, str(api_key))] += 1
        return original(self, api_key, *args, **kwargs)

    try:
        sampler = LagSampler(admin, store, INTERVAL_S)
        runner.run(sampler.sample_once())  # connections, ApiVersions, metadata: not the steady state
        stats = []
        cpu = _cpu_s(pid)
        BrokerConnection.request = counting  # type: ignore[method-assign]
        try:
            for _ in range(SAMPLES):
                stats.append(runner.run(sampler.sample_once()))
        finally:
            BrokerConnection.request = original  # type: ignore[method-assign]
        sample_cpu = (_cpu_s(pid) - cpu) / SAMPLES
        cpu, start = _cpu_s(pid), time.perf_counter()
        answered = runner.run(_capacity(admin, CAPACITY_S))
        elapsed = time.perf_counter() - start
        capacity_cpu = (_cpu_s(pid) - cpu) / elapsed
    finally:
        runner.run(admin.close())
        store.close()
    per_sample = {name: n / SAMPLES for name, n in sorted(counts.items())}
    if stats[-1].groups != GROUPS:
        raise RuntimeError(f"the sampler saw {stats[-1].groups} groups, not {GROUPS}")
    return {
        "per_sample": per_sample,
        "requests": sum(per_sample.values()),
        "duration_ms": statistics.median(s.duration_s for s in stats) * 1000,
        "groups": stats[-1].groups,
        "rows": stats[-1].partitions,
        "sample_cpu_s": sample_cpu,
        "capacity": answered / elapsed,
        "capacity_cpu": capacity_cpu,
    }


# -- report -------------------------------------------------------------------------------------------


def report(
    server: list[tuple[Any, ...]], browser: list[tuple[str, list[list[float]]]] | None, cost: dict[str, Any]
) -> None:
    print(f"\n1. server time, ms: median / p95 (n)     {'page':>20} {'client only':>20} {'page/client':>11}")
    for path, cold, cached, client_cold, client_hot in server:
        for label, series, client in (("cold", cold, client_cold), ("cached", cached, client_hot)):
            (med, p95), (c_med, c_p95) = _stats(series), _stats(client)
            name = f"{path} [{label}]"
            print(
                f"  {name:<38} {med:>7.1f} / {p95:>6.1f} ({len(series):>2})"
                f" {c_med:>7.1f} / {c_p95:>6.1f} ({len(client):>2}) {med / c_med:>11.2f}"
            )
    served = {}
    for path, cold, cached, client_cold, _ in server:
        served[path] = statistics.median(cached)
        print(
            f"{path}: {statistics.median(cold):.0f} ms cold, {served[path]:.0f} ms cached;"
            f" the client alone fetches its data in {statistics.median(client_cold):.0f} ms"
        )

    if browser is not None:
        print(
            f"\n2. browser time, ms (median of {BROWSER_LOADS})    {'server':>7} {'responseEnd':>11}"
            f" {'DOMContentLoaded':>16} {'load':>6} {'plot drawn':>10}"
        )
        medians = {
            path: [statistics.median(col) for col in zip(*loads, strict=True)] for path, loads in browser
        }
        for path, cols in medians.items():
            name = path + (" (baseline: 404)" if path == "/no-such-page" else "")
            srv = f"{served[path]:.0f}" if path in served else ""
            plot = "" if math.isnan(cols[3]) else f"{cols[3]:.0f}"
            print(f"  {name:<36} {srv:>7} {cols[0]:>11.0f} {cols[1]:>16.0f} {cols[2]:>6.0f} {plot:>10}")
        for path, cols in list(medians.items())[1:]:
            plot = "" if math.isnan(cols[3]) else f", lag plot drawn at {cols[3]:.0f} ms"
            print(
                f"{path} in Chromium: loaded at {cols[2]:.0f} ms{plot}"
                f" (the 404 page with no data: {medians['/no-such-page'][2]:.0f} ms)"
            )

    rate = cost["requests"] / INTERVAL_S
    per_cpu = cost["capacity"] / cost["capacity_cpu"]
    per = ", ".join(f"{name} {n:g}" for name, n in cost["per_sample"].items())
    rows = [
        ("requests per sample", f"{cost['requests']:g}", per),
        (f"sample duration (median of {SAMPLES})", f"{cost['duration_ms']:.0f} ms", ""),
        (f"requests/s at a {INTERVAL_S:g} s interval", f"{rate:.2f}", ""),
        (
            "broker capacity, ApiVersions",
            f"{cost['capacity']:,.0f} req/s",
            f"broker at {cost['capacity_cpu']:.0%} of a core: {per_cpu:,.0f} per broker CPU second",
        ),
        (
            "sampler share of that capacity",
            f"{rate / cost['capacity']:.3%}",
            f"{rate / per_cpu:.3%} per CPU second",
        ),
        ("broker CPU per sample", f"{cost['sample_cpu_s'] * 1000:.0f} ms", ""),
        (f"broker CPU share at {INTERVAL_S:g} s", f"{cost['sample_cpu_s'] / INTERVAL_S:.2%}", "of one core"),
    ]
    print(
        f"\n3. lag sampler: {cost['groups']} groups, {cost['rows']} (group, partition) rows, 2,000 partitions"
    )
    for name, value, note in rows:
        print(f"  {name:<36} {value:>14}   {note}")
    print(
        f"sampler: {cost['requests']:g} requests per sample, {rate:.1f} req/s at {INTERVAL_S:g} s"
        f" ({rate / cost['capacity']:.3%} of the broker's ApiVersions capacity), yet"
        f" {cost['sample_cpu_s'] / INTERVAL_S:.2%} of a broker core: its requests are big ones"
    )


def run() -> None:
    env = {"MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"}
    with (
        tempfile.TemporaryDirectory(prefix="bench-console-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        root = Path(tmp)
        broker = BrokerProcess(root / "data", env=env).start()
        console: Console | None = None
        admin = AIOAdminClient({"bootstrap.servers": broker.bootstrap})
        try:
            start = time.perf_counter()
            populate(broker.bootstrap)
            print(
                f"setup: {TOPICS * PARTITIONS:,} partitions, {GROUPS} groups in {time.perf_counter() - start:.1f} s"
            )
            assert broker.proc is not None
            cost = sampler_cost(runner, broker.bootstrap, broker.proc.pid)
            console = Console(broker.bootstrap, root)
            console.wait_ready()
            runner.run(admin.start())
            server = server_times(console, runner, admin)
            browser = browser_times(console)
        finally:
            runner.run(admin.close())
            if console is not None:
                console.stop()
            broker.stop()
        report(server, browser, cost)


if __name__ == "__main__":
    run()
