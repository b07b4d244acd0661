"""Real-client helpers for the cluster tests: topics, numbered records, reading everything back,
brokers' racks and metrics."""

from __future__ import annotations

import glob
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.records import scan_valid_prefix
from tests.cluster_process import QUIET, Cluster


def create_topic(bootstrap: str, name: str, partitions: int, rf: int, **configs: str) -> None:
    """Create the topic, then wait until every broker of ``bootstrap`` (comma-separated, all
    running) lists it with leaders and ``rf`` in-sync replicas: brokers learn of new leaders a
    moment apart, and a test's next Metadata request may go to any of them."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    for future in admin.create_topics([NewTopic(name, partitions, rf, config=configs)]).values():
        future.result(15)
    for address in bootstrap.split(","):
        wait_for_leaders(address, name, partitions, rf)


def partition_metadata(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """{partition: (leader, replicas, isr)} as the cluster answers Metadata."""
    md = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET}).list_topics(topic, timeout=10)
    t = md.topics[topic]
    return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in t.partitions.values()}


def broker_racks(bootstrap: str) -> dict[int, str | None]:
    """{broker id: its rack} as the cluster answers DescribeCluster (confluent-kafka's admin)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    described = admin.describe_cluster(request_timeout=10).result(15)
    return {node.id: node.rack for node in described.nodes}


def scrape(url: str, metric: str) -> dict[tuple[tuple[str, str], ...], float]:
    """{sorted label pairs: value} of every sample named ``metric`` at a Prometheus endpoint."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == metric
    }


def wait_for(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Until ``check()`` is true. A check reading a partition the metadata does not list yet
    (KeyError, IndexError: a topic created a moment ago) counts as not yet."""
    deadline = time.monotonic() + timeout
    missing: LookupError | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except LookupError as exc:
            missing = exc
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last: {missing!r})" if missing else ""))


def wait_for_leaders(bootstrap: str, topic: str, partitions: int, isr: int, timeout: float = 30) -> None:
    def ready() -> bool:
        try:
            md = partition_metadata(bootstrap, topic)
        except Exception:
            return False
        return len(md) == partitions and all(leader >= 0 and len(i) >= isr for leader, _, i in md.values())

    wait_for(ready, timeout, f"{topic}: {partitions} partitions with leaders and {isr} in-sync replicas")


class Sender:
    """An idempotent acks=all confluent-kafka producer remembering where each numbered record landed."""

    def __init__(self, bootstrap: str, topic: str, **settings: object) -> None:
        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "logger": QUIET,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 60000,
                **settings,
            }
        )
        self.acked: dict[int, tuple[int, int]] = {}
        self.errors: list[KafkaError] = []

    def _report(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked[int(msg.key())] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

    def send(self, numbers: range) -> None:
        for n in numbers:
            while True:
                try:
                    self.producer.produce(
                        self.topic, key=str(n).encode(), value=b"v%d" % n, on_delivery=self._report
                    )
                    break
                except BufferError:
                    self.producer.poll(0.05)
            self.producer.poll(0)

    def flush(self, timeout: float = 90) -> None:
        assert self.producer.flush(timeout) == 0


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    """{record number: [(partition, offset), ...]} of everything a fresh consumer reads up to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-all-{time.time()}",
            "enable.partition.eof": True,
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: dict[int, list[tuple[int, int]]] = {}
    try:
        for msg in records_to_end(consumer, partitions, 90):
            seen.setdefault(int(msg.key()), []).append((msg.partition(), msg.offset()))
    finally:
        consumer.close()
    return seen


def records_to_end(consumer: Consumer, partitions: int, timeout: float) -> Iterator[Message]:
    """The records ``consumer`` (assigned ``partitions`` partitions, ``enable.partition.eof`` on)
    reads until every partition is at its end; AssertionError if that takes over ``timeout`` s."""
    ended: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(ended) < partitions:
        assert time.monotonic() < deadline, "did not reach the end of every partition"
        msg = consumer.poll(1)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition())
            continue
        ended.discard(msg.partition())
        yield msg


def check_exactly_once(acked: dict[int, tuple[int, int]], seen: dict[int, list[tuple[int, int]]]) -> None:
    """Every acknowledged record read once, where it was acknowledged; numbers in order within a partition."""
    missing = [n for n in acked if n not in seen]
    duplicated = [n for n, where in seen.items() if len(where) > 1]
    moved = [n for n, where in acked.items() if n in seen and seen[n][0] != where]
    assert (missing[:5], duplicated[:5], moved[:5]) == ([], [], [])
    last: dict[int, tuple[int, int]] = {}
    for n in sorted(seen):
        partition, offset = seen[n][0]
        before = last.get(partition)
        assert before is None or before[1] < offset, f"record {n} at {offset} precedes record {before[0]}"
        last[partition] = (n, offset)


def controller_of(cluster: Cluster, nodes: list[int] | None = None) -> int:
    """The controller id in the Metadata answer of the first of ``nodes`` that answers (-1: none does)."""
    for node in nodes or list(cluster.brokers):
        try:
            md = AdminClient(
                {"bootstrap.servers": cluster.brokers[node].bootstrap, "logger": QUIET}
            ).list_topics(timeout=5)
            return md.controller_id
        except Exception:
            continue
    return -1


def replica_batches(data_dir: Path, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, CRC) of every CRC-valid batch in one replica's segment files."""
    out = []
    for path in sorted(glob.glob(str(data_dir / f"{topic}-{partition}" / "*.log"))):
        headers, _ = scan_valid_prefix(Path(path).read_bytes())
        out += [
            (h.base_offset, h.base_offset + h.last_offset_delta, h.partition_leader_epoch, h.crc)
            for h in headers
        ]
    return out


def replicas_agree(cluster: Cluster, topic: str, partitions: int) -> bool:
    """Every broker's replica of each partition holds the same batches (offsets, epochs, CRCs)."""
    for p in range(partitions):
        logs = [replica_batches(b.data_dir, topic, p) for b in cluster.brokers.values()]
        held = [batches for batches in logs if batches]
        if len(held) < len(logs) or any(batches != held[0] for batches in held):
            return False
    return True
