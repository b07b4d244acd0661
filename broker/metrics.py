"""Prometheus metrics (the `prometheus_client` library), served on `metrics.port` when it is set.

Off by default: with `metrics.port=0` nothing here is created and the request
path pays one `is None` check. Exposed families (all prefixed `minikafka_`):

- requests_total{api,version}, request_errors_total{api,version,error}
  (every non-zero error code in a response, top level or per partition),
  request_latency_seconds{api} (histogram, decode to response queued);
- topic_bytes_in_total / topic_records_in_total{topic} (appended batches),
  topic_bytes_out_total / topic_records_out_total{topic} (fetched batches;
  records counted from batch headers, never by decoding records; follower
  fetches included);
- consumer_fetch_bytes_total{topic,served_as}: the record bytes of consumer
  fetches only, by whether this broker served them as the partition's
  ``leader`` or as a ``follower`` (KIP-392 follower fetching: a consumer with
  client.rack reading from a replica in its rack);
- log_size_bytes / log_end_offset / log_start_offset{topic,partition},
  connections, parked_fetches, consumer_groups, group_members{group},
  group_lag{group,topic,partition} (high watermark minus committed offset),
  read at scrape time from the broker's own state;
- storage_errors_total{topic,partition,op}: failed file operations
  (storage/io_health.py: each is also logged once per partition and errno);
- log_segments_deleted_total, log_cleaner_runs_total: retention and cleaner
  activity, counted by the background log tasks;
- frame_buffers_allocated_total / frame_buffers_reused_total: receive buffers
  for large request frames made new and reused (broker/frame_pool.py); a
  steady stream of large Produce requests should mostly reuse.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sized
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from protocol.messages import API_NAMES

if TYPE_CHECKING:
    from broker.frame_pool import FramePool
    from broker.groups.coordinator import GroupCoordinator
    from broker.log_tasks import LogTasks
    from broker.replica import ReplicaManager
    from storage.log_manager import LogManager


class MetricsSource(Protocol):
    """The parts of the broker whose state is read at scrape time (the `Broker` has them)."""

    logs: LogManager
    replicas: ReplicaManager
    log_tasks: LogTasks
    frames: FramePool
    connections: Sized
    groups: GroupCoordinator


def _error_codes(obj: Any) -> Iterator[int]:
    """Every non-zero `error_code` anywhere in a response dict."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "error_code":
                if value:
                    yield int(value)
            elif isinstance(value, list | dict):
                yield from _error_codes(value)
    elif isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict | list):
                yield from _error_codes(item)


class _StateCollector(Collector):
    """Gauges computed from the broker's state at scrape time."""

    def __init__(self, broker: MetricsSource) -> None:
        self.broker = broker

    def collect(self) -> Iterable[Metric]:
        b = self.broker
        size = GaugeMetricFamily(
            "minikafka_log_size_bytes", "bytes in a partition's segments", labels=["topic", "partition"]
        )
        end = GaugeMetricFamily("minikafka_log_end_offset", "log end offset", labels=["topic", "partition"])
        start = GaugeMetricFamily(
            "minikafka_log_start_offset", "log start offset", labels=["topic", "partition"]
        )
        for (topic, partition), plog in b.logs.logs():
            labels = [topic, str(partition)]
            size.add_metric(labels, float(plog.size))
            end.add_metric(labels, float(plog.log_end_offset))
            start.add_metric(labels, float(plog.log_start_offset))
        yield from (size, end, start)
        errors = CounterMetricFamily(
            "minikafka_storage_errors",
            "failed file operations on a partition's files (op: append, roll, fsync, truncate, delete, compact, checkpoint)",
            labels=["topic", "partition", "op"],
        )
        for (topic, partition, op), count in sorted(b.logs.health.errors.items()):
            errors.add_metric([topic, str(partition), op], float(count))
        yield errors
        yield GaugeMetricFamily("minikafka_connections", "open client connections", value=len(b.connections))
        tasks = b.log_tasks
        yield CounterMetricFamily(
            "minikafka_log_segments_deleted", "segments removed by retention", value=tasks.segments_deleted
        )
        yield CounterMetricFamily(
            "minikafka_log_cleaner_runs", "partition logs compacted", value=tasks.cleanings
        )
        frames = b.frames
        yield CounterMetricFamily(
            "minikafka_frame_buffers_allocated", "large-frame receive buffers made", value=frames.allocated
        )
        yield CounterMetricFamily(
            "minikafka_frame_buffers_reused", "large-frame receive buffers reused", value=frames.reused
        )
        parked = {id(f) for part in b.replicas.partitions() for f in part.waiters}
        yield GaugeMetricFamily("minikafka_parked_fetches", "fetches waiting for data", value=len(parked))
        snapshot = b.groups.metrics_snapshot()
        yield GaugeMetricFamily("minikafka_consumer_groups", "consumer groups known", value=len(snapshot))
        members = GaugeMetricFamily("minikafka_group_members", "members of a group", labels=["group"])
        lag = GaugeMetricFamily(
            "minikafka_group_lag",
            "high watermark minus committed offset",
            labels=["group", "topic", "partition"],
        )
        for group, (member_count, committed) in snapshot.items():
            members.add_metric([group], float(member_count))
            for (topic, partition), offset in committed.items():
                plog = b.logs.get_log(topic, partition)
                if plog is not None and offset >= 0:
                    lag.add_metric(
                        [group, topic, str(partition)], float(max(0, plog.high_watermark - offset))
                    )
        yield members
        yield lag


class BrokerMetrics:
    def __init__(self, broker: MetricsSource) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("minikafka_requests", "requests handled", ["api", "version"], registry=r)
        self.errors = Counter(
            "minikafka_request_errors", "error codes answered", ["api", "version", "error"], registry=r
        )
        self.latency = Histogram(
            "minikafka_request_latency_seconds",
            "time from decoded request to queued response",
            ["api"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.bytes_in = Counter("minikafka_topic_bytes_in", "bytes appended", ["topic"], registry=r)
        self.records_in = Counter("minikafka_topic_records_in", "records appended", ["topic"], registry=r)
        self.bytes_out = Counter("minikafka_topic_bytes_out", "bytes fetched", ["topic"], registry=r)
        self.records_out = Counter("minikafka_topic_records_out", "records fetched", ["topic"], registry=r)
        self.consumer_bytes = Counter(
            "minikafka_consumer_fetch_bytes",
            "record bytes fetched by consumers, served by this broker as the leader or a follower",
            ["topic", "served_as"],
            registry=r,
        )
        r.register(_StateCollector(broker))
        self._server: Any = None

    def serve(self, host: str, port: int) -> None:
        self._server = start_http_server(port, addr=host, registry=self.registry)

    def close(self) -> None:
        if self._server is not None:
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(5)
            self._server = None

    def observe(self, api_key: int, version: int, started: float, response: dict[str, Any] | None) -> None:
        api = API_NAMES.get(api_key, str(api_key))
        v = str(version)
        self.requests.labels(api, v).inc()
        self.latency.labels(api).observe(time.perf_counter() - started)
        if response is not None:
            for code in _error_codes(response):
                self.errors.labels(api, v, str(code)).inc()

    def appended(self, topic: str, size: int, records: int) -> None:
        self.bytes_in.labels(topic).inc(size)
        self.records_in.labels(topic).inc(records)

    def fetched(self, topic: str, size: int, records: int, served_as: str | None = None) -> None:
        """A fetch answered ``records`` records in ``size`` bytes; ``served_as``: "leader" or
        "follower" for a consumer's fetch, None for a follower's (replication)."""
        self.bytes_out.labels(topic).inc(size)
        self.records_out.labels(topic).inc(records)
        if served_as is not None:
            self.consumer_bytes.labels(topic, served_as).inc(size)
