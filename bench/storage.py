"""Storage engine benchmark: lookups at two log sizes, unclean-restart recovery, cleaner throughput.

Measures, directly on `storage` objects (no network):

1. offset lookup and timestamp lookup latency (mean over random targets) in a
   partition of ``small`` and ``large`` records (defaults 1M and 50M), and the
   ratio large/small, which must stay near 1 (<= 1.5): lookups are binary
   searches (segment list, sparse index) plus a bounded scan, never linear in the
   log. The logs are built fast by appending pre-encoded compressed batches of
   `RECORDS_PER_BATCH` records straight into `PartitionLog` (each copy gets its
   own timestamps and CRC).
2. recovery time of an unclean restart of a ``recovery_bytes`` log (default 1 GiB,
   in segments of ``recovery_segment_bytes``, default 128 MiB) whose recovery point
   is near the end (the last few MB unflushed), against a full CRC rescan of the
   same log (recovery point 0) as the baseline: recovery starts at the segment
   holding the recovery point (as Kafka's), so it must not grow with the log.
3. cleaner throughput: MB/s read by one `LogCleaner` pass over ``cleaner_bytes`` of
   a compacted log (``cleaner_keys`` keys, many versions each).

`run()` returns ``[(name, value, unit), ...]``; ``python -m bench.storage`` prints
them. Sizes are parameters: the defaults are the real benchmark (a few GB of
disk and minutes); use ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import Record, build_batch, crc32c, validate_batches  # noqa: E402
from storage.cleaner import LogCleaner  # noqa: E402
from storage.config import LogConfig  # noqa: E402
from storage.partition_log import PartitionLog  # noqa: E402

RECORDS_PER_BATCH = 100
BATCHES_PER_APPEND = 64
T0 = 1_700_000_000_000
_TS = struct.Struct(">qq")
_CRC = struct.Struct(">I")

Row = tuple[str, float, str]


def _template(records: int, value: bytes, codec: int) -> bytearray:
    recs = [Record(i, i, None, value) for i in range(records)]
    return bytearray(build_batch(recs, base_timestamp=0, codec=codec))


def _fill(log: PartitionLog, total_records: int, template: bytearray, ts_step: int) -> None:
    """Append copies of ``template`` until ``total_records`` records are in, timestamps increasing."""
    per_batch = validate_batches(template)[0].record_count
    size = len(template)
    span = per_batch - 1
    written = 0
    ts = T0
    while written < total_records:
        n = min(BATCHES_PER_APPEND, -(-(total_records - written) // per_batch))
        buf = bytearray(template * n)
        for i in range(n):
            pos = i * size
            _TS.pack_into(buf, pos + 27, ts, ts + span)
            _CRC.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + 21 : pos + size]))
            ts += ts_step
        headers = validate_batches(buf, check_crc=False)
        result = log.append(buf, headers, leader_epoch=0, now_ms=0)
        log.advance_high_watermark(result.last_offset + 1)
        written += n * per_batch


def _lookups(log: PartitionLog, n: int, rng: random.Random) -> tuple[float, float]:
    """Mean offset-lookup and timestamp-lookup latency in microseconds."""
    leo = log.log_end_offset
    first_ts = T0
    last_ts = log.active_segment.largest_timestamp
    offsets = [rng.randrange(leo) for _ in range(n)]
    stamps = [rng.randrange(first_ts, last_ts) for _ in range(n)]
    for o in offsets[:50]:  # warm the code paths, not the targets
        log.read(o, 1)
    start = time.perf_counter()
    for o in offsets:
        log.read(o, 1)
    offset_us = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for t in stamps:
        log.offset_for_timestamp(t)
    ts_us = (time.perf_counter() - start) / n * 1e6
    return offset_us, ts_us


def bench_lookups(base: Path, small: int, large: int, lookups: int, segment_bytes: int) -> list[Row]:
    rng = random.Random(1)
    config = LogConfig(segment_bytes=segment_bytes)
    template = _template(RECORDS_PER_BATCH, b"value-%08d" % 0, codec=4)
    results = {}
    for label, count in (("small", small), ("large", large)):
        d = base / f"lookup-{label}"
        log = PartitionLog(str(d / "t-0"), config, now_ms=0)
        started = time.perf_counter()
        _fill(log, count, template, ts_step=RECORDS_PER_BATCH)
        build_s = time.perf_counter() - started
        results[label] = (*_lookups(log, lookups, rng), build_s, len(log.segments))
        log.close()
        shutil.rmtree(d)
    (so, st, _, sseg), (lo, lt, lb, lseg) = results["small"], results["large"]
    tag_s, tag_l = f"{small:,} records", f"{large:,} records"
    return [
        (f"offset lookup, {tag_s} ({sseg} segments)", so, "us"),
        (f"offset lookup, {tag_l} ({lseg} segments)", lo, "us"),
        ("offset lookup ratio large/small", lo / so, "x (<= 1.5)"),
        (f"timestamp lookup, {tag_s}", st, "us"),
        (f"timestamp lookup, {tag_l}", lt, "us"),
        ("timestamp lookup ratio large/small", lt / st, "x (<= 1.5)"),
        (f"log build, {tag_l} (append of pre-built batches)", large / lb / 1e6, "M records/s"),
    ]


def bench_recovery(
    base: Path, total_bytes: int, tail_bytes: int, segment_bytes: int, full_scan: bool
) -> list[Row]:
    d = str(base / "recovery" / "t-0")
    config = LogConfig(segment_bytes=segment_bytes)
    template = _template(50, os.urandom(1000), codec=0)  # ~51 KB batches, incompressible
    per_batch_bytes = len(template)
    log = PartitionLog(d, config, now_ms=0)
    _fill(log, (total_bytes - tail_bytes) // per_batch_bytes * 50, template, ts_step=50)
    recovery_point = log.flush()
    _fill(log, max(1, tail_bytes // per_batch_bytes) * 50, template, ts_step=50)
    size, leo, segments = log.size, log.log_end_offset, len(log.segments)
    log.abandon()  # crash: no trimming, no fsync, no clean-shutdown marker
    started = time.perf_counter()
    reopened = PartitionLog(d, config, recover=True, recovery_point=recovery_point)
    near_end_s = time.perf_counter() - started
    assert reopened.log_end_offset == leo
    reopened.abandon()
    rows: list[Row] = [
        (
            f"unclean restart, {size / 2**20:,.0f} MiB log in {segments} segments, recovery point near the end",
            near_end_s,
            "s",
        ),
    ]
    if full_scan:
        started = time.perf_counter()
        reopened = PartitionLog(d, config, recover=True, recovery_point=0)
        full_s = time.perf_counter() - started
        assert reopened.log_end_offset == leo
        reopened.close()
        rows.append(("unclean restart, same log, recovery point 0 (full CRC rescan: baseline)", full_s, "s"))
        rows.append(("recovery near end / full rescan", near_end_s / full_s, "x"))
    shutil.rmtree(base / "recovery")
    return rows


def bench_cleaner(base: Path, total_bytes: int, keys: int) -> list[Row]:
    rng = random.Random(2)
    d = base / "cleaner"
    config = LogConfig(segment_bytes=64 * 2**20, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
    log = PartitionLog(str(d / "t-0"), config, now_ms=0)
    value = b"v" * 100
    written = 0
    while written < total_bytes:
        recs = [Record(i, 0, b"key-%d" % rng.randrange(keys), value) for i in range(100)]
        buf = bytearray(build_batch(recs, base_timestamp=T0))
        written += len(buf)
        result = log.append(buf, validate_batches(buf), leader_epoch=0, now_ms=0)
        log.advance_high_watermark(result.last_offset + 1)
    log.roll(now_ms=0)
    cleaner = LogCleaner(log.fs, str(d))
    started = time.perf_counter()
    passes = 0
    read = 0
    while (res := cleaner.clean_once([(("t", 0), log)], T0)) is not None:
        read += res.stats.bytes_read
        passes += 1
    elapsed = time.perf_counter() - started
    after = log.size
    log.close()
    shutil.rmtree(d)
    return [
        (
            f"cleaner throughput ({written / 2**20:,.0f} MiB, {keys:,} keys, {passes} pass(es))",
            read / 2**20 / elapsed,
            "MB/s",
        ),
        ("cleaner output / input", after / written, "x"),
    ]


def run(
    small: int = 1_000_000,
    large: int = 50_000_000,
    lookups: int = 2000,
    segment_bytes: int = 256 * 2**20,
    recovery_bytes: int = 2**30,
    recovery_tail_bytes: int = 4 * 2**20,
    recovery_segment_bytes: int = 128 * 2**20,
    full_scan_baseline: bool = True,
    cleaner_bytes: int = 64 * 2**20,
    cleaner_keys: int = 100_000,
    data_dir: str | None = None,
) -> list[Row]:
    """Run the three storage benchmarks, print a table; returns ``[(name, value, unit), ...]``."""
    base = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=data_dir))
    try:
        rows = bench_lookups(base, small, large, lookups, segment_bytes)
        rows += bench_recovery(
            base, recovery_bytes, recovery_tail_bytes, recovery_segment_bytes, full_scan_baseline
        )
        rows += bench_cleaner(base, cleaner_bytes, cleaner_keys)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    width = max(len(name) for name, _, _ in rows)
    for name, value, unit in rows:
        print(f"{name:<{width}}  {value:>12,.3f} {unit}")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of a few seconds")
    p.add_argument("--small", type=int, default=1_000_000)
    p.add_argument("--large", type=int, default=50_000_000)
    p.add_argument("--recovery-mb", type=int, default=1024)
    p.add_argument("--cleaner-mb", type=int, default=64)
    args = p.parse_args(argv)
    if args.quick:
        run(
            small=20_000,
            large=1_000_000,
            lookups=500,
            segment_bytes=2**20,
            recovery_bytes=64 * 2**20,
            recovery_tail_bytes=2**20,
            recovery_segment_bytes=8 * 2**20,
            cleaner_bytes=4 * 2**20,
            cleaner_keys=5_000,
        )
    else:
        run(
            small=args.small,
            large=args.large,
            recovery_bytes=args.recovery_mb * 2**20,
            cleaner_bytes=args.cleaner_mb * 2**20,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
