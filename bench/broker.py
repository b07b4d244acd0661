"""The broker suite: every figure beside a baseline measured in the same run.

In order, on this machine:
1. physical limits: loopback TCP (iperf3) and sequential write + fsync (fio/dd);
2. generator ceilings, no broker of ours: confluent-kafka `produce()` calls/s
   (Python), kcat -P into librdkafka's mock cluster (C), and bench.replay's
   pre-encoded 1 MB Produce requests into a socket that only reads;
3. the peer: Redis Streams (pipelined XADD with redis-benchmark, XRANGE pages);
4. one broker, RSS sampled all along, then:
   - the produce matrix with kcat (C generator): 100 B and 1 KB records,
     acks=1 and acks=all, 1/8/64 partitions, 1 and 16 producer connections
     (processes); each figure x the kcat ceiling;
   - consume with kcat -C per (size, partitions), and with confluent-kafka;
   - produce with confluent-kafka (Python generator) x its ceiling;
   - produce with 1 MB batches (1 MB records), MB/s x loopback bandwidth,
     from confluent-kafka and from bench.replay (librdkafka's own copies cost
     as much CPU as the broker's; see bench/replay.py); replay's records are
     counted afterwards by librdkafka;
   - end-to-end latency at 10,000 records/s;
   - py-spy profiles of the produce and fetch paths (bench/results/profile-*.txt);
5. the goals of issue 9 as ratios.

Every cell that writes to the page cache (each produce cell, and the socket ->
file baseline) runs right after `limits.warm_memory` of 3x its bytes: this VM's
first touch of a page costs more than the rest of the write (bench/limits.py).

`run(quick=False)` prints the tables; `--quick` uses fewer records per cell.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench import limits, loadgen, profile, redis_peer, replay
from tests.broker_process import BrokerProcess, rss_mb


@dataclass
class Sizes:
    """Records per cell; the whole suite stays within a few minutes."""

    small: int  # 100-byte records per produce cell
    large: int  # 1 KB records per produce cell
    big_mb: int  # 1 MB records for the big-batch cell
    latency_s: float  # seconds at 10k records/s
    profile_s: float  # seconds per profile
    consume_rounds: int  # consume cells read this many produce cells' worth (kcat start-up stays small)


FULL = Sizes(small=1_000_000, large=300_000, big_mb=1000, latency_s=5, profile_s=8, consume_rounds=3)
QUICK = Sizes(small=300_000, large=100_000, big_mb=300, latency_s=3, profile_s=4, consume_rounds=2)
BIG_RUNS = 3
"""The 1 MB cells take about a second each: best of this many, as the loopback baseline is."""
BIG_RECORDS = {"message.max.bytes": 1_048_576}  # one 1 MB record per batch: record plus batch framing


OWN_MEMORY = ("RssAnon", "RssShmem")
"""What the memory goal judges: the broker's own memory, not the `.log` pages it maps to serve
fetches (page cache, which VmRSS also counts)."""


class RssSampler(threading.Thread):
    """Samples a process's own resident memory and its VmRSS (MB) every 0.25 s until stop_event is set."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[float] = []
        self.vm_rss: list[float] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.wait(0.25):
            try:
                self.samples.append(rss_mb(self.pid, OWN_MEMORY))
                self.vm_rss.append(rss_mb(self.pid))
            except OSError:
                return


class Table:
    """Rows of (benchmark, figure, unit, ratio, baseline name), printed aligned."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[tuple[str, float, str, float | None, str]] = []

    def add(
        self, name: str, value: float, unit: str, base: float | None = None, base_name: str = ""
    ) -> float:
        self.rows.append((name, value, unit, (value / base) if base else None, base_name))
        print(f"  {name}: {value:,.1f} {unit}", flush=True)
        return value

    def print(self) -> None:
        print(f"\n{self.title}")
        print(f"{'benchmark':<58} {'figure':>14} {'unit':<10} {'ratio':>7}  baseline")
        for name, value, unit, ratio, base in self.rows:
            r = f"{ratio:7.2f}" if ratio is not None else " " * 7
            print(f"{name:<58} {value:>14,.1f} {unit:<10} {r}  {base}")


def run(quick: bool = False) -> dict[str, float]:
    """Run the broker suite, print its tables; returns the headline figures by name."""
    sz = QUICK if quick else FULL
    t = Table("== bench.broker (ratios are figure / baseline, both from this run)")
    fig: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp_s:
        tmp = Path(tmp_s)
        print("physical limits", flush=True)
        fig["loopback"], how = limits.loopback_bandwidth(3.0)
        t.add(f"loopback TCP ({how})", fig["loopback"] / 1e6, "MB/s")
        fig["disk"], how = limits.disk_write_fsync(256 if quick else 512, tmp_s)
        t.add(f"disk sequential write ({how})", fig["disk"] / 1e6, "MB/s")
        _warm_for(sz.big_mb << 20)
        fig["sock_file"], how = limits.socket_to_file(sz.big_mb, tmp_s)
        t.add(
            f"loopback socket -> file ({how})",
            fig["sock_file"] / 1e6,
            "MB/s",
            fig["loopback"] / 1e6,
            "loopback",
        )

        print("generator ceilings", flush=True)
        files = {s: loadgen.record_file(tmp, n, s) for s, n in ((100, sz.small), (1000, sz.large))}
        fig["py_ceiling"] = loadgen.py_ceiling(sz.small, os.urandom(100))
        t.add("ceiling: confluent-kafka produce() loop, no broker", fig["py_ceiling"], "rec/s")
        fig["kcat_ceiling_100"] = loadgen.kcat_ceiling(files[100], sz.small)
        t.add("ceiling: kcat -P 100 B into librdkafka mock cluster", fig["kcat_ceiling_100"], "rec/s")
        fig["kcat_ceiling_1000"] = loadgen.kcat_ceiling(files[1000], sz.large)
        t.add("ceiling: kcat -P 1 KB into librdkafka mock cluster", fig["kcat_ceiling_1000"], "rec/s")
        big = os.urandom(1_000_000)
        fig["big_ceiling"] = len(big) * max(
            loadgen.py_big_ceiling(sz.big_mb, big, **BIG_RECORDS) for _ in range(BIG_RUNS)
        )
        t.add(
            f"ceiling: confluent-kafka 1 MB records into librdkafka mock cluster, best of {BIG_RUNS}",
            fig["big_ceiling"] / 1e6,
            "MB/s",
            fig["loopback"] / 1e6,
            "loopback",
        )
        fig["replay_ceiling"] = max(replay.ceiling(sz.big_mb, len(big)) for _ in range(BIG_RUNS))
        t.add(
            f"ceiling: replay of pre-encoded 1 MB Produce requests, acks=0, into a reading socket, best of {BIG_RUNS}",
            fig["replay_ceiling"] / 1e6,
            "MB/s",
            fig["loopback"] / 1e6,
            "loopback",
        )

        print("peer: Redis Streams", flush=True)
        rdir = tmp / "redis"
        rdir.mkdir()
        server = redis_peer.RedisServer(rdir).start()
        try:
            fig["xadd"] = redis_peer.xadd_rate(server, sz.small)
            t.add(f"redis XADD {sz.small:,} x 100 B (redis-benchmark -P 64)", fig["xadd"], "rec/s")
            fig["xrange"] = redis_peer.xrange_rate(server, sz.small)
            t.add("redis XRANGE pages of 10,000 (redis-py + hiredis)", fig["xrange"], "rec/s")
        finally:
            server.stop()

        broker = BrokerProcess(tmp / "data", extra=["--log-level", "WARNING"]).start()
        assert broker.proc is not None
        sampler = RssSampler(broker.proc.pid)
        sampler.start()
        try:
            _broker_figures(broker, sz, files, tmp, t, fig)
        finally:
            sampler.stop_event.set()
            broker.stop()
    t.print()
    _print_memory(sampler.samples, sampler.vm_rss)
    _print_goals(fig)
    return fig


def _create(admin: AdminClient, topic: str, partitions: int) -> str:
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def _warm_for(nbytes: int) -> None:
    """Before a cell that writes ``nbytes`` to the page cache: the same start for every cell.

    First the dirty pages earlier cells left are written back (``sync``), so no
    cell pays for its predecessor's writeback; then 3x ``nbytes`` of memory is
    warmed (see limits.warm_memory).
    """
    os.sync()
    limits.warm_memory(max(64, 3 * nbytes >> 20))


def _delete(admin: AdminClient, topic: str) -> None:
    admin.delete_topics([topic])[topic].result(30)


def _broker_figures(
    broker: BrokerProcess, sz: Sizes, files: dict[int, Path], tmp: Path, t: Table, fig: dict[str, float]
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 2})
    bs = broker.bootstrap
    n_of = {100: sz.small, 1000: sz.large}
    consume_topics: dict[tuple[int, int], str] = {}
    print("produce matrix (kcat -P)", flush=True)
    for size in (100, 1000):
        ceiling = fig[f"kcat_ceiling_{size}"]
        for parts in (1, 8, 64):
            for conns in (1, 16):
                for acks in ("1", "all"):
                    topic = _create(admin, f"p-{size}-{parts}-{conns}-{acks}", parts)
                    _warm_for(n_of[size] * size)
                    r = loadgen.kcat_produce(bs, topic, loadgen.split(files[size], conns), n_of[size], acks)
                    key = f"produce_{size}_{parts}_{conns}_{acks}"
                    fig[key] = r
                    t.add(
                        f"produce kcat {size} B acks={acks} {parts}p {conns}conn",
                        r,
                        "rec/s",
                        ceiling,
                        "kcat ceiling",
                    )
                    if acks == "1" and conns == 1:
                        consume_topics[(size, parts)] = topic

    print("consume (kcat -C, confluent-kafka)", flush=True)
    assert broker.proc is not None
    for (size, parts), topic in consume_topics.items():
        for _ in range(sz.consume_rounds - 1):  # more records, so kcat's start-up weighs little
            loadgen.kcat_produce(bs, topic, [files[size]], n_of[size], "1")
        run = loadgen.kcat_consume(bs, topic, n_of[size] * sz.consume_rounds, broker.proc.pid)
        fig[f"consume_{size}_{parts}"] = run.rate
        t.add(
            f"consume kcat -C {size} B {parts}p (start-up {run.startup:.2f} s apart)",
            run.rate,
            "rec/s",
            fig["xrange"],
            "redis XRANGE",
        )
        # Who was busy: CPU seconds over the read's wall time (2.0 = both cores).
        t.add(
            f"  broker CPU / wall (kcat: {run.consumer_cpu / run.seconds:.2f})",
            run.broker_cpu / run.seconds,
            "cores",
        )
    r, startup = loadgen.py_consume(bs, consume_topics[(100, 8)], sz.small, 8)
    fig["consume_py"] = r
    t.add(
        f"consume confluent-kafka 100 B 8p (start-up {startup:.2f} s apart)",
        r,
        "rec/s",
        fig["xrange"],
        "redis XRANGE",
    )

    print("produce (confluent-kafka Python loop)", flush=True)
    payload = os.urandom(100)
    for acks in ("1", "all"):
        topic = _create(admin, f"py-{acks}", 8)
        _warm_for(sz.small * len(payload))
        r = loadgen.py_produce(bs, topic, sz.small, payload, 8, acks)
        fig[f"produce_py_{acks}"] = r
        t.add(f"produce confluent-kafka 100 B acks={acks} 8p", r, "rec/s", fig["py_ceiling"], "py ceiling")

    print("produce 1 MB batches", flush=True)
    big = os.urandom(1_000_000)
    # Loopback again, right before the cells it judges: on this VM it has moved by 2x within a run.
    again, how = limits.loopback_bandwidth(3.0)
    t.add(f"loopback TCP again, before the 1 MB cells ({how})", again / 1e6, "MB/s")
    fig["loopback"] = max(fig["loopback"], again)
    t.add("  loopback baseline for the 1 MB cells: the higher of the two", fig["loopback"] / 1e6, "MB/s")
    baselines = (("loopback", "loopback"), ("sock_file", "socket -> file"))
    assert broker.proc is not None
    pid = broker.proc.pid

    def confluent_run(topic: str) -> tuple[float, float]:
        return loadgen.py_produce(bs, topic, sz.big_mb, big, 8, "1", **BIG_RECORDS) * len(big), 0.0

    def replay_run(topic: str) -> tuple[float, float]:
        cpu = loadgen.cpu_seconds(pid)
        run = replay.run(bs, topic, sz.big_mb, len(big), 8, 1)
        cpu = loadgen.cpu_seconds(pid) - cpu
        stored = loadgen.stored_records(bs, topic, 8)
        if stored != sz.big_mb:
            raise RuntimeError(f"replay: {stored} records stored of {sz.big_mb} acknowledged")
        return run["bytes"] / run["seconds"], cpu / run["seconds"]

    for key, label, ceiling, cell in (
        ("big_mbs", "1 MB records acks=1 8p, confluent-kafka", "big_ceiling", confluent_run),
        ("big_replay_mbs", "1 MB batches acks=1 8p, pre-encoded replay", "replay_ceiling", replay_run),
    ):
        runs = []
        for i in range(BIG_RUNS):
            topic = _create(admin, f"{key}-{i}", 8)
            _warm_for(sz.big_mb * len(big))
            runs.append(cell(topic))
            _delete(admin, topic)  # its page cache goes back to the free pool for the next run
        r, cores = max(runs)
        fig[key] = r
        spread = ", ".join(f"{x / 1e6:,.0f}" for x, _ in runs)
        for base, name in (*baselines, (ceiling, "generator ceiling")):
            t.add(f"produce {label}, best of {BIG_RUNS}", r / 1e6, "MB/s", fig[base] / 1e6, name)
        worst = min(x for x, _ in runs)
        t.add(f"  worst of the runs (all: {spread})", worst / 1e6, "MB/s", fig["loopback"] / 1e6, "loopback")
        if cores:
            t.add("  broker CPU / wall in the best run", cores, "cores")

    print("end-to-end latency at 10,000 rec/s", flush=True)
    # linger.ms=1 lets librdkafka put the records of one millisecond in one request (the goal's
    # figure); linger.ms=0 sends one request per record, so it shows the broker's per-request cost.
    for linger, tag in ((1, ""), (0, "_linger0")):
        lat = loadgen.latency(bs, _create(admin, f"latency{tag}", 1), 10_000, sz.latency_s, linger)
        for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")):
            fig[f"lat_{name}{tag}"] = loadgen.percentile(lat, q)
            t.add(
                f"e2e latency {name} at 10k rec/s, linger.ms={linger} ({len(lat):,} rec)",
                fig[f"lat_{name}{tag}"],
                "ms",
            )

    _profiles(broker, sz, files, tmp, admin)


def _profiles(
    broker: BrokerProcess, sz: Sizes, files: dict[int, Path], tmp: Path, admin: AdminClient
) -> None:
    """py-spy on the broker while kcat produces, then while kcat consumes, 100 B records, 8 partitions."""
    assert broker.proc is not None
    print("profiles (py-spy)", flush=True)
    topic = _create(admin, "profile", 8)
    prof = profile.Profiler(broker.proc.pid, sz.profile_s, tmp / "produce.raw").start()
    time.sleep(0.5)
    end = time.monotonic() + sz.profile_s
    rounds = 0
    while time.monotonic() < end:
        loadgen.kcat_produce(broker.bootstrap, topic, [files[100]], sz.small, "1")
        rounds += 1
    path = profile.save(
        "profile-produce.txt", profile.summarise(prof.wait(), "produce: kcat -P 100 B, acks=1, 8p")
    )
    print(f"  {path}")
    prof = profile.Profiler(broker.proc.pid, sz.profile_s, tmp / "fetch.raw").start()
    time.sleep(0.5)
    end = time.monotonic() + sz.profile_s
    while time.monotonic() < end:
        loadgen.kcat_consume(broker.bootstrap, topic, sz.small * rounds)
    path = profile.save("profile-fetch.txt", profile.summarise(prof.wait(), "fetch: kcat -C 100 B, 8p"))
    print(f"  {path}")


def _print_memory(s: list[float], vm_rss: list[float]) -> None:
    s = s or [0.0]
    third = max(1, len(s) // 3)
    print(
        f"\nbroker own memory (RssAnon + RssShmem) MB over the run: start {s[0]:.0f}, max {max(s):.0f}, "
        f"mean of first third {sum(s[:third]) / third:.0f}, mean of last third {sum(s[-third:]) / third:.0f} "
        f"({len(s)} samples; flat memory: last third / first third = {sum(s[-third:]) / max(sum(s[:third]), 1e-9):.2f}); "
        f"VmRSS, which adds the mapped .log pages fetches were served from: max {max(vm_rss or [0.0]):.0f}"
    )


def _print_goals(f: dict[str, float]) -> None:
    """Issue 9's goals, each as a figure over its baseline from this run."""
    best = max(f["produce_100_8_1_1"], f["produce_100_8_16_1"], f["produce_py_1"])
    consume = max(f["consume_100_1"], f["consume_100_8"], f["consume_100_64"], f["consume_py"])
    big = max(f["big_mbs"], f["big_replay_mbs"])
    goals = [
        ("produce 100 B acks=1 (best generator, 8p) >= 1,000,000 rec/s", best, 1_000_000),
        ("produce 100 B acks=1 / redis XADD >= 1.5", best / f["xadd"], 1.5),
        ("consume 100 B (best of kcat 1/8/64p, confluent-kafka) >= 2,000,000 rec/s", consume, 2_000_000),
        ("1 MB-batch produce (best generator) / loopback >= 0.5", big / f["loopback"], 0.5),
        (
            "acks=all / acks=1 (kcat 100 B 8p 1conn) >= 0.5",
            f["produce_100_8_1_all"] / f["produce_100_8_1_1"],
            0.5,
        ),
        ("e2e p99 at 10k rec/s (linger.ms=1) <= 5 ms", f["lat_p99"], -5),
        (
            "64 partitions / 8 partitions (kcat 100 B acks=1 1conn) >= 0.9",
            f["produce_100_64_1_1"] / f["produce_100_8_1_1"],
            0.9,
        ),
    ]
    print("\nissue 9 goals")
    for name, value, target in goals:
        met = value <= -target if target < 0 else value >= target
        print(f"  {'MET ' if met else 'not '} {name}: {value:,.2f}")
    print(
        "  context for the 1 MB goal: confluent-kafka / its ceiling "
        f"{f['big_mbs'] / f['big_ceiling']:.2f}, replay / its ceiling {f['big_replay_mbs'] / f['replay_ceiling']:.2f}, "
        f"best / bare Python socket -> file loop {big / f['sock_file']:.2f}; over loopback, the ceilings are "
        f"{f['big_ceiling'] / f['loopback']:.2f} and {f['replay_ceiling'] / f['loopback']:.2f}, the loop "
        f"{f['sock_file'] / f['loopback']:.2f}"
    )
