"""Example Spark job: JSON events from one topic, totals per user and minute, written to another topic.

Each input record has the user as its key and a JSON value such as
``{"amount": 12.5}``; its Kafka timestamp is the event time. The job reads
the whole input topic through the minikafka data source (one Spark task per
topic partition), groups by user and one-minute window, and writes one
record per (user, minute) to the output topic: key = user, value =
``{"user": "u3", "minute": "2026-01-01T10:04:00", "count": 12, "total": 150.0}``.

Run it against a broker (``make run`` in another shell)::

    python -m client.spark.example_job --bootstrap 127.0.0.1:9092 --seed 10000

``--seed N`` first writes N sample events to the input topic with the
bundled producer, so the job has something to read. With spark-submit, ship
the package to the executors and point them at the same Python::

    PYSPARK_PYTHON=$(which python) spark-submit --master 'local[2]' \
        --py-files dist/minikafka.zip client/spark/example_job.py --bootstrap 127.0.0.1:9092

(``dist/minikafka.zip``: ``zip -r dist/minikafka.zip broker client protocol storage``.)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence

SEED_BASE_TS = 1_767_261_600_000  # 2026-01-01T10:00:00Z
USERS = 7


def sample_events(n: int) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp ms) of ``n`` deterministic events over five minutes."""
    for i in range(n):
        user = f"u{i % USERS}"
        amount = round((i * 37 % 1000) / 10, 1)
        yield user.encode(), json.dumps({"amount": amount}).encode(), SEED_BASE_TS + (i * 7919) % 300_000


def seed(bootstrap: str, topic: str, n: int, partitions: int, replication_factor: int = -1) -> None:
    """Create ``topic`` if needed (replication -1: the broker's default) and write ``n`` sample events."""
    from client.admin import AdminClient, NewTopic
    from client.producer import Producer

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        if topic not in admin.list_topics():
            admin.create_topics([NewTopic(topic, partitions, replication_factor)])
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 20}) as producer:
        for key, value, ts in sample_events(n):
            producer.send(topic, value=value, key=key, timestamp_ms=ts)
        producer.flush()


def run(spark: object, bootstrap: str, input_topic: str, output_topic: str) -> int:
    """Aggregate ``input_topic`` into ``output_topic``; returns the number of records written."""
    from pyspark.sql import functions as F

    from client.spark import MiniKafkaDataSource

    spark.dataSource.register(MiniKafkaDataSource)  # type: ignore[attr-defined]
    events = (
        spark.read.format("minikafka")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", input_topic)
        .load()
    )
    totals = (
        events.select(
            F.col("key").cast("string").alias("user"),
            F.from_json(F.col("value").cast("string"), "amount double").amount.alias("amount"),
            F.col("timestamp"),
        )
        .groupBy("user", F.window("timestamp", "1 minute").start.alias("minute"))
        .agg(F.count("*").alias("count"), F.round(F.sum("amount"), 2).alias("total"))
    )
    out = totals.select(
        F.col("user").cast("binary").alias("key"),
        F.to_json(
            F.struct(
                "user",
                F.date_format("minute", "yyyy-MM-dd'T'HH:mm:ss").alias("minute"),
                "count",
                "total",
            )
        )
        .cast("binary")
        .alias("value"),
    ).cache()
    out.write.format("minikafka").mode("append").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", output_topic
    ).save()
    written = out.count()
    out.unpersist()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m client.spark.example_job", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--bootstrap", default="127.0.0.1:9092", help="broker host:port (default %(default)s)"
    )
    parser.add_argument("--input", default="events", help="topic of JSON events (default %(default)s)")
    parser.add_argument(
        "--output", default="events-per-minute", help="topic for the totals (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="first write N sample events")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of a seeded input topic")
    parser.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        help="replicas of a seeded input topic (default: the broker's default.replication.factor)",
    )
    parser.add_argument("--master", default="local[2]", help="Spark master (default %(default)s)")
    args = parser.parse_args(argv)

    from client.spark.session import local_session

    if args.seed:
        seed(args.bootstrap, args.input, args.seed, args.partitions, args.replication_factor)
    spark = local_session("minikafka-example", args.master, loopback=args.master.startswith("local"))
    try:
        written = run(spark, args.bootstrap, args.input, args.output)
    finally:
        spark.stop()
    print(f"wrote {written} per-user, per-minute totals from {args.input} to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
