"""The Flink job of tests/flink: KafkaSource -> a Python map -> KafkaSink (run in build/flink/venv).

This file runs under the apache-flink venv, not the test venv: it imports only PyFlink and the
standard library. It reads ``--input`` from the earliest offsets, appends ``|flink`` to each
value and writes it to ``--output`` with the delivery guarantee asked for. Checkpoints go to
``--checkpoints`` every ``--interval-ms`` and are kept when the process is killed, so a later
run given ``--restore`` (a ``chk-N`` directory) resumes from one.

The source is unbounded: a bounded KafkaSource restored from a checkpoint never finishes in
connector 4.0.1 (its enumerator, finding no new partition after the restore, never tells the
readers that no more splits come: FLINK-33466, FLINK-31006), so the test ends the job instead,
once it has read every record back: it writes ``stop`` on stdin, and the job is stopped with a
draining savepoint into ``--savepoints`` (sources end, the sink commits its last transaction).

Contract with the test: the map sleeps ``--record-ms`` per record (so a run lasts long enough
to be killed in the middle); the process prints ``running <job id>`` once the job is submitted,
exits 0 once the job has finished after ``stop``, 1 if it failed for good (restarts used up),
and 2 (the job cancelled) if stdin ends without ``stop``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.common.job_client import JobClient
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import MapFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from pyflink.java_gateway import get_gateway

TAG = "|flink"


class Tag(MapFunction):
    """Appends TAG to a value, sleeping ``record_ms`` per record on average."""

    def __init__(self, record_ms: float) -> None:
        self.record_ms = record_ms
        self.count = 0

    def map(self, value: str) -> str:
        self.count += 1
        if self.record_ms and self.count % 10 == 0:
            time.sleep(self.record_ms * 10 / 1000)
        return value + TAG


def configuration(args: argparse.Namespace) -> Configuration:
    """Checkpointing, retention and restart settings of the run (Flink 2.0 option names)."""
    config = Configuration()
    settings = {
        "execution.checkpointing.interval": f"{args.interval_ms} ms",
        "execution.checkpointing.mode": "EXACTLY_ONCE",
        "execution.checkpointing.dir": Path(args.checkpoints).resolve().as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": "3",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": str(args.restarts),
        "restart-strategy.fixed-delay.delay": "2 s",
        "pipeline.jars": ";".join(Path(j).resolve().as_uri() for j in args.jars),
        "parallelism.default": str(args.parallelism),
        # The map runs in the TaskManager's embedded interpreter (pemja), record by record: no
        # Python worker processes to start, and no bundles of a thousand records held back.
        "python.execution-mode": "thread",
        # Python for the job's own processes: this venv's interpreter, not whatever is on PATH.
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "taskmanager.numberOfTaskSlots": str(args.parallelism),
    }
    if args.restore:
        settings["execution.state-recovery.path"] = Path(args.restore).resolve().as_uri()
    for key, value in settings.items():
        config.set_string(key, value)
    return config


def build(env: StreamExecutionEnvironment, args: argparse.Namespace) -> None:
    """The pipeline: source, map, sink."""
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_topics(args.input)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .set_property("client.id.prefix", "flink-test-source")
        .build()
    )
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(args.bootstrap)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(args.output)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(getattr(DeliveryGuarantee, args.guarantee))
        .set_property("transaction.timeout.ms", str(args.transaction_timeout_ms))
        .set_property("delivery.timeout.ms", "120000")
        .set_property("request.timeout.ms", "30000")
    )
    if args.guarantee == "EXACTLY_ONCE":
        builder.set_transactional_id_prefix(args.prefix)
        if args.naming:
            # PyFlink 2.0 has no wrapper for the connector's TransactionNamingStrategy (4.0+).
            naming = get_gateway().jvm.org.apache.flink.connector.kafka.sink.TransactionNamingStrategy
            builder._j_builder.setTransactionNamingStrategy(getattr(naming, args.naming))
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "input")
        .map(Tag(args.record_ms), output_type=Types.STRING())
        .name("tag")
        .sink_to(builder.build())
        .name("output")
    )


def watch(client: JobClient) -> None:
    """Exits the process when the job ends: 0 finished, 1 failed."""
    try:
        client.get_job_execution_result().result()
    except Exception as exc:  # the job failed for good
        print(f"failed: {exc}", flush=True)
        os._exit(1)
    print("finished", flush=True)
    os._exit(0)


def stop(client: JobClient, savepoints: Path) -> None:
    """Stop with a draining savepoint (PyFlink 2.0's JobClient.stop_with_savepoint passes two
    arguments to a Java method that takes three, so the Java client is called directly)."""
    formats = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType
    path = client._j_job_client.stopWithSavepoint(True, savepoints.resolve().as_uri(), formats.CANONICAL)
    print(f"stopped with savepoint {path.get()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--guarantee", choices=["EXACTLY_ONCE", "AT_LEAST_ONCE"], default="EXACTLY_ONCE")
    parser.add_argument("--prefix", default="flink-test")
    parser.add_argument("--naming", choices=["INCREMENTING", "POOLING"], default=None)
    parser.add_argument("--checkpoints", required=True)
    parser.add_argument("--savepoints", required=True)
    parser.add_argument("--restore", default=None)
    parser.add_argument("--interval-ms", type=int, default=1500)
    parser.add_argument("--record-ms", type=float, default=0.0)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--transaction-timeout-ms", type=int, default=600_000)
    parser.add_argument("--restarts", type=int, default=30)
    parser.add_argument("--jars", nargs="+", required=True)
    args = parser.parse_args()
    env = StreamExecutionEnvironment.get_execution_environment(configuration(args))
    build(env, args)
    client = env.execute_async("minikafka-exactly-once")
    print(f"running {client.get_job_id()}", flush=True)
    watcher = threading.Thread(target=watch, args=(client,), daemon=True)
    watcher.start()
    if sys.stdin.readline().strip() != "stop":
        client.cancel().result()
        os._exit(2)
    stop(client, Path(args.savepoints))
    watcher.join()


if __name__ == "__main__":
    main()
