"""Spark suite: the minikafka data source against Spark's own ceiling for a Python Arrow source.

In one run, on this machine:

1. a broker subprocess gets N records (default 5,000,000) of 100 bytes in 8
   partitions, produced by confluent-kafka (1,000 distinct keys);
2. a local[2] Spark session reads the topic through ``format("minikafka")``
   into ``count()`` and into ``groupBy("key").count()``;
3. the same two queries run over ``format("synthetic-kafka")``: a Python data
   source with the same schema, partitions and rows whose tasks yield
   prebuilt Arrow batches, with no broker and no decoding. That is the most
   any Python data source can give Spark on this machine, the baseline.

Printed: records/s of each query over each source and the minikafka/synthetic
ratio (the goal is >= 0.5). ``python -m bench.spark --records N`` for a
shorter run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PARTITIONS = 8
KEYS = 1000
BATCH_ROWS = 65536


def _fill(bootstrap: str, topic: str, n: int, size: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "enable.idempotence": False,
        }
    )
    value = os.urandom(size)
    keys = [b"k%d" % i for i in range(KEYS)]
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, keys[i % KEYS], partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300):
        raise SystemExit("filling the topic failed")


def synthetic_source(rows: int, size: int) -> type:
    """A data source with the Kafka schema whose tasks yield prebuilt Arrow batches (the ceiling)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from client.spark.schema import kafka_schema

    per_partition = rows // PARTITIONS

    class SyntheticReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(p) for p in range(PARTITIONS)]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            import numpy as np
            import pyarrow as pa

            from client.spark.arrow import TIMESTAMP_TYPE, repeated_string

            p = partition.value
            value = os.urandom(size)
            template = [
                pa.array([b"k%d" % (i % KEYS) for i in range(BATCH_ROWS)], pa.binary()),
                pa.array([value] * BATCH_ROWS, pa.binary()),
                repeated_string("synthetic", BATCH_ROWS),
                pa.array(np.full(BATCH_ROWS, p, dtype=np.int32)),
            ]
            now = pa.array(np.full(BATCH_ROWS, time.time_ns() // 1000, dtype=np.int64), TIMESTAMP_TYPE)
            types = pa.array(np.zeros(BATCH_ROWS, dtype=np.int32))
            names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
            for start in range(0, per_partition, BATCH_ROWS):
                n = min(BATCH_ROWS, per_partition - start)
                offsets = pa.array(np.arange(start, start + n, dtype=np.int64))
                cols = [c.slice(0, n) for c in template] + [offsets, now.slice(0, n), types.slice(0, n)]
                yield pa.RecordBatch.from_arrays(cols, names=names)

    class SyntheticKafka(DataSource):
        @classmethod
        def name(cls) -> str:
            return "synthetic-kafka"

        def schema(self) -> Any:
            return kafka_schema()

        def reader(self, schema: Any) -> DataSourceReader:
            return SyntheticReader()

    return SyntheticKafka


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(records: int = 5_000_000, size: int = 100) -> None:
    from client.spark.session import local_session
    from tests.broker_process import BrokerProcess

    records -= records % PARTITIONS
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data", extra=["--log-level", "WARNING"]).start()
        try:
            t_fill, _ = _timed(lambda: _fill(broker.bootstrap, "spark-bench", records, size))
            spark = local_session("minikafka-bench", shuffle_partitions=PARTITIONS)
            spark.dataSource.register(synthetic_source(records, size))
            sources = {
                "minikafka": spark.read.format("minikafka")
                .option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", "spark-bench")
                .load(),
                "synthetic": spark.read.format("synthetic-kafka").load(),
            }
            results: dict[tuple[str, str], float] = {}
            try:
                # Each query three times over each source, alternating, and the fastest run kept: the
                # first run also starts Spark's Python workers, and the machine is shared.
                for query in ("count()", "groupBy(key).count()"):
                    for name, df in [*sources.items()] * 3:
                        if query == "count()":
                            elapsed, got = _timed(df.count)
                        else:
                            elapsed, groups = _timed(lambda df=df: df.groupBy("key").count().collect())
                            got = sum(r["count"] for r in groups)
                        if got != records:
                            raise SystemExit(f"{name} {query}: {got} rows, expected {records}")
                        results[(name, query)] = max(results.get((name, query), 0.0), records / elapsed)
            finally:
                spark.stop()
        finally:
            broker.stop()

    print(
        f"\ntopic filled by confluent-kafka: {records:,} x {size} B in {PARTITIONS} partitions, {t_fill:.1f} s"
    )
    print(f"{'query':<24} {'minikafka rec/s':>16} {'synthetic rec/s':>16} {'ratio':>7}")
    for query in ("count()", "groupBy(key).count()"):
        mk, syn = results[("minikafka", query)], results[("synthetic", query)]
        print(f"{query:<24} {mk:>16,.0f} {syn:>16,.0f} {mk / syn:>7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.spark")
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args()
    run(args.records, args.size)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
