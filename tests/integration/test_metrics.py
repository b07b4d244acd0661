"""The Prometheus endpoint, scraped while real clients produce and consume."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess, free_port


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def any_version(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    """The sum of a metric over every API version, for the other ``labels`` given."""
    wanted = set(labels.items())
    return sum(
        v for (n, got), v in samples.items() if n == name and wanted <= {x for x in got if x[0] != "version"}
    )


def test_metrics_move_with_traffic(tmp_path: Path) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    mport = free_port()
    proc = BrokerProcess(tmp_path / "data", env={"MINIKAFKA_METRICS_PORT": str(mport)}).start()
    try:
        # BrokerProcess.start() probes the port with a connection of its own; the broker may not
        # have seen it close yet.
        deadline = time.monotonic() + 5
        while value(before := scrape(mport), "minikafka_connections") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert value(before, "minikafka_connections") == 0
        producer = KafkaProducer(bootstrap_servers=proc.bootstrap, linger_ms=5)
        for i in range(50):
            producer.send("metered", key=b"k%d" % i, value=b"x" * 100)
        producer.flush(20)
        consumer = KafkaConsumer(
            "metered",
            bootstrap_servers=proc.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            consumer_timeout_ms=5000,
        )
        got = sum(1 for _ in consumer)
        during = scrape(mport)
        consumer.close()
        producer.close()
        assert got == 50
        assert value(during, "minikafka_topic_records_in_total", topic="metered") == 50
        assert value(during, "minikafka_topic_records_out_total", topic="metered") >= 50
        assert value(during, "minikafka_topic_bytes_in_total", topic="metered") > 5000
        # at whatever versions kafka-python negotiated
        assert any_version(during, "minikafka_requests_total", api="Produce") >= 1
        assert any_version(during, "minikafka_requests_total", api="Fetch") >= 1
        assert value(during, "minikafka_request_latency_seconds_count", api="Produce") >= 1
        assert value(during, "minikafka_log_end_offset", topic="metered", partition="0") == 50
        assert value(during, "minikafka_log_size_bytes", topic="metered", partition="0") > 5000
        assert value(during, "minikafka_connections") >= 1
        # an error answer is counted with its code: Fetch of an offset past the end
        from tests.integration.test_wire import fetch
        from tests.wire import RawClient

        with RawClient(proc.port) as c:
            assert fetch(c, "metered", 999).error_code == 1
        after = scrape(mport)
        assert any_version(after, "minikafka_request_errors_total", api="Fetch", error="1") == 1
        # large Produce frames, one after another: their receive buffers are reused, not made anew
        big = KafkaProducer(bootstrap_servers=proc.bootstrap, linger_ms=0, max_request_size=2_000_000)
        for i in range(6):
            big.send("metered", value=bytes([i]) * 300_000).get(20)
        big.close()
        frames = scrape(mport)
        made = value(frames, "minikafka_frame_buffers_allocated_total")
        assert 1 <= made <= 2 and value(frames, "minikafka_frame_buffers_reused_total") >= 6 - made
    finally:
        assert proc.stop() == 0, proc.log()


def test_metrics_off_by_default(broker: BrokerProcess) -> None:
    assert "metrics on" not in broker.log()


def test_retention_and_group_metrics(tmp_path: Path) -> None:
    from kafka import KafkaConsumer

    from protocol.records import Record, build_batch
    from tests.integration.test_wire import create, produce
    from tests.wire import RawClient

    mport = free_port()
    env = {
        "MINIKAFKA_METRICS_PORT": str(mport),
        "MINIKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS": "200",
        "MINIKAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    proc = BrokerProcess(tmp_path / "data", env=env).start()
    try:
        with RawClient(proc.port) as c:
            create(c, "aging", configs={"retention.ms": "100", "segment.bytes": "1024"})
            for _ in range(6):
                produce(c, "aging", build_batch([Record(0, 0, None, b"x" * 600)], base_timestamp=1000))
        consumer = KafkaConsumer(
            "aging",
            bootstrap_servers=proc.bootstrap,
            group_id="metered-group",
            auto_offset_reset="earliest",
            consumer_timeout_ms=3000,
        )
        list(consumer)
        consumer.commit()
        deadline = time.monotonic() + 10
        while True:  # retention runs in the background every 200 ms
            samples = scrape(mport)
            if value(samples, "minikafka_log_segments_deleted_total") >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        consumer.close()
        assert value(samples, "minikafka_log_segments_deleted_total") >= 1
        assert value(samples, "minikafka_consumer_groups") >= 1
        assert ("minikafka_group_members", (("group", "metered-group"),)) in samples
    finally:
        assert proc.stop() == 0, proc.log()
