"""Tiered storage on a real three-broker cluster (ZooKeeper) with a real SeaweedFS (issue 44's proofs).

- A replica added by reassignment finds its leader's local log starting far past 0: it rebuilds its
  state from the object store (Kafka's TierStateMachine: leader epochs and producer state from the
  remote segment below the leader's local start), copies only the local part, joins the ISR, and as
  leader serves every record from offset 0.
- The leader SIGKILLed while it uploads a segment: a new leader finishes the copies; nothing
  acknowledged is lost or duplicated; the bucket and ``__remote_log_metadata`` agree (nothing copied
  twice, nothing orphaned); the restarted broker follows, rebuilding from remote when its log ends
  below the new leader's local start.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from broker.tiered.metadata_records import SegmentState
from broker.tiered.segment_store import IndexType
from client.admin import AdminClient
from client.types import TopicPartition as BundledTopicPartition
from storage import naming
from storage.leader_epoch import parse_epoch_checkpoint
from tests.cluster.helpers import partition_metadata, replica_batches, wait_for, wait_for_leaders
from tests.cluster_process import QUIET, Cluster, ZooKeeperProcess
from tests.support.seaweed import SeaweedFS
from tests.tiered.helpers import (
    SegmentStory,
    bucket_segments,
    list_offset,
    remote_segments,
    segment_indexes,
    try_list_offset,
    value_of,
)

ELECTION_NOT_NEEDED = 84

pytestmark = [pytest.mark.tiered, pytest.mark.timeout(240)]

TOPIC = "tiered"
SEGMENT_BYTES = 128 << 10
VALUE_BYTES = 1000
LOCAL_RETENTION = 2 * SEGMENT_BYTES
EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -2, -4, -5


def broker_config(seaweed: SeaweedFS, key_prefix: str, **more: str) -> dict[int, dict[str, str]]:
    """The three brokers' tiered-storage keys (objects under ``key_prefix`` in the bucket), and ``more``."""
    keys = {
        "remote.log.storage.system.enable": "true",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "3",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
        **seaweed.rsm_properties(key_prefix),
        **more,
    }
    return {node: dict(keys) for node in (1, 2, 3)}


def topic_configs(**more: str) -> dict[str, str]:
    return {
        "remote.storage.enable": "true",
        "segment.bytes": str(SEGMENT_BYTES),
        "local.retention.bytes": str(LOCAL_RETENTION),
        "retention.ms": "-1",
        **more,
    }


def numbered_producer(bootstrap: str, **settings: object) -> Producer:
    """An idempotent acks=all confluent-kafka producer for `send_numbered`."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "logger": QUIET,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            **settings,
        }
    )


def send_numbered(
    producer: Producer, n: int, on_delivery: Callable[[KafkaError | None, Message], object]
) -> None:
    """Record ``n`` (key: its number, value: `value_of`) to partition 0, waiting for room in the queue."""
    while True:
        try:
            producer.produce(
                TOPIC,
                key=str(n).encode(),
                value=value_of(n, VALUE_BYTES),
                partition=0,
                on_delivery=on_delivery,
            )
            return
        except BufferError:
            producer.poll(0.05)


def produce(bootstrap: str, numbers: range) -> None:
    """Records ``numbers``, every one acknowledged."""
    producer = numbered_producer(bootstrap)
    failed: list[KafkaError] = []
    for n in numbers:
        send_numbered(producer, n, lambda err, _msg: err is not None and failed.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]


def read_from_zero(bootstrap: str, end: int) -> dict[int, list[int]]:
    """{record number: [offsets]} of what a consumer reads from offset 0 up to ``end``; every value
    is checked byte for byte against its number."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.time()}",
            "enable.auto.commit": False,
            "logger": QUIET,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: dict[int, list[int]] = {}
    offset = 0
    deadline = time.monotonic() + 90
    try:
        while offset < end:
            assert time.monotonic() < deadline, f"read up to {offset} of {end}"
            for msg in consumer.consume(500, timeout=1.0):
                assert msg.error() is None, msg.error()
                n = int(msg.key())
                assert msg.value() == value_of(n, VALUE_BYTES), f"record {n} at {msg.offset()} differs"
                seen.setdefault(n, []).append(msg.offset())
                offset = msg.offset() + 1
    finally:
        consumer.close()
    return seen


def leader_of(cluster: Cluster) -> int:
    return partition_metadata(cluster.bootstrap, TOPIC)[0][0]


def segment_bases(data_dir: Path) -> list[int]:
    """Base offsets of the ``.log`` files of one replica's directory, ascending."""
    return sorted(int(p.name.split(".")[0]) for p in (data_dir / f"{TOPIC}-0").glob("*.log"))


def test_a_new_replica_rebuilds_from_remote_and_serves_everything(
    seaweed: SeaweedFS, tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    count = 4000  # ~4 MB: ~30 segments, of which local retention keeps two
    with Cluster(tmp_path, zookeeper, broker_config=broker_config(seaweed, "rebuild/")) as cluster:
        admin = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
        new = NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1, 2]], config=topic_configs())
        admin.create_topics([new])[TOPIC].result(30)
        wait_for_leaders(cluster.bootstrap, TOPIC, 1, 2)
        produce(cluster.bootstrap, range(count))
        leader = cluster.brokers[1]
        assert list_offset(leader.port, TOPIC, -1) == count
        # every closed segment copied, the local log start far past 0 on both replicas
        per_segment = SEGMENT_BYTES // VALUE_BYTES
        wait_for(
            lambda: list_offset(leader.port, TOPIC, LATEST_TIERED) >= count - 3 * per_segment,
            60,
            "the copies",
        )
        wait_for(lambda: list_offset(leader.port, TOPIC, EARLIEST_LOCAL) > count // 2, 30, "local retention")
        leader_local_start = list_offset(leader.port, TOPIC, EARLIEST_LOCAL)

        # broker 3 joins the replicas, first in the list so that it can be elected preferred leader
        with AdminClient(bootstrap_servers=cluster.bootstrap) as bundled:
            started = bundled.alter_partition_reassignments({BundledTopicPartition(TOPIC, 0): [3, 1, 2]})
            assert started == {BundledTopicPartition(TOPIC, 0): None}
        wait_for(
            lambda: sorted(partition_metadata(cluster.bootstrap, TOPIC)[0][2]) == [1, 2, 3],
            60,
            "broker 3 in the ISR",
        )
        # broker 3's disk holds the local part only: it started at the end of a remote segment
        bases = segment_bases(cluster.brokers[3].data_dir)
        assert bases and bases[0] >= leader_local_start - per_segment - 1, (bases, leader_local_start)
        assert "rebuilt from remote storage" in cluster.log(3)

        tp = TopicPartition(TOPIC, 0)
        answers: list[object] = []

        def elected() -> bool:
            # the ISR in Metadata may show broker 3 a moment before the controller completes the
            # reassignment; until then the election is refused, and asked again
            answer = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)[tp]
            answers.append(answer)
            return answer is None or answer.code() == ELECTION_NOT_NEEDED

        try:
            wait_for(elected, 30, "broker 3 elected preferred leader")
        except AssertionError:
            raise AssertionError(f"broker 3 not elected; the last answers: {answers[-3:]}") from None
        wait_for(lambda: leader_of(cluster) == 3, 20, "broker 3 leading")
        new_leader = cluster.brokers[3]
        wait_for(lambda: list_offset(new_leader.port, TOPIC, -1) == count, 20, "broker 3's high watermark")
        assert list_offset(new_leader.port, TOPIC, EARLIEST) == 0
        assert list_offset(new_leader.port, TOPIC, EARLIEST_LOCAL) > 0

        # every record from offset 0, read from broker 3: most from the object store, the rest from its disk
        seen = read_from_zero(new_leader.bootstrap, count)
        assert sorted(seen) == list(range(count))
        assert all(offsets == [n] for n, offsets in seen.items())

        # and broker 3 leads: acks=all writes, then its own copies continue the remote log
        produce(cluster.bootstrap, range(count, count + 500))
        assert list_offset(new_leader.port, TOPIC, -1) == count + 500


class SteadyProducer(threading.Thread):
    """An idempotent acks=all confluent-kafka producer sending numbered records (`value_of`) at
    ``rate`` records per second from its own thread until `finish`; remembers where each landed."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.rate = rate
        self.acked: dict[int, int] = {}  # record number -> offset
        self.failed: list[KafkaError] = []
        self._stopping = threading.Event()

    def _report(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.failed.append(err)
        else:
            self.acked[int(msg.key())] = msg.offset()  # type: ignore[attr-defined]

    def run(self) -> None:
        producer = numbered_producer(self.bootstrap, **{"message.timeout.ms": 120000})
        started, n = time.monotonic(), 0
        while not self._stopping.is_set():
            ahead = started + n / self.rate - time.monotonic()
            if ahead > 0:
                producer.poll(min(ahead, 0.05))
                continue
            send_numbered(producer, n, self._report)
            n += 1
            producer.poll(0)
        assert producer.flush(120) == 0

    def highest_acked(self) -> int:
        return max(self.acked.values(), default=-1)

    def finish(self) -> None:
        self._stopping.set()
        self.join(150)
        assert not self.is_alive()


def _leader_among(cluster: Cluster, nodes: list[int]) -> int:
    bootstrap = ",".join(cluster.brokers[n].bootstrap for n in nodes)
    return partition_metadata(bootstrap, TOPIC)[0][0]


def _epochs(data_dir: Path) -> list[tuple[int, int]]:
    path = data_dir / f"{TOPIC}-0" / naming.LEADER_EPOCH_CHECKPOINT
    return parse_epoch_checkpoint(path.read_bytes(), str(path))


def _in_lineage(story: SegmentStory, epochs: list[tuple[int, int]]) -> bool:
    """Every (epoch, first offset) of the segment is where the leader's epoch cache has that epoch."""

    def epoch_of(offset: int) -> int:
        return max((e for e, start in epochs if start <= offset), default=-1)

    return all(epoch_of(offset) == epoch for epoch, offset in story.metadata.segment_leader_epochs)


def test_b_leader_killed_in_the_middle_of_an_upload(
    seaweed: SeaweedFS, tmp_path: Path, zookeeper: ZooKeeperProcess
) -> None:
    """Kafka's rules for what a dead leader leaves behind (RemoteLogManager): a segment it had in
    COPY_SEGMENT_STARTED is never finished by anyone; the new leader copies those offsets again
    under a new id (from the highest offset FINISHED in its lineage). The dead leader's segment
    stays listed, with whatever objects its upload left, until retention deletes it like any
    other segment: here when the log start offset passes it."""
    prefix = "failover/"
    per_segment = SEGMENT_BYTES // VALUE_BYTES
    # the restarted broker stays a follower: no preferred-leader election brings leadership back to it
    keys = broker_config(seaweed, prefix, **{"auto.leader.rebalance.enable": "false"})
    with Cluster(tmp_path, zookeeper, broker_config=keys) as cluster:
        admin = ConfluentAdmin({"bootstrap.servers": cluster.bootstrap, "logger": QUIET})
        configs = topic_configs(**{"min.insync.replicas": "2"})
        new = NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1, 2, 3]], config=configs)
        admin.create_topics([new])[TOPIC].result(30)
        wait_for_leaders(cluster.bootstrap, TOPIC, 1, 3)
        first = leader_of(cluster)
        assert first == 1

        producer = SteadyProducer(cluster.bootstrap, rate=150)  # ~150 KB/s: a segment a second
        producer.start()
        try:

            def copied() -> list[SegmentStory]:
                stories = remote_segments(cluster.bootstrap, TOPIC).values()
                return [s for s in stories if s.copier == first]

            wait_for(
                lambda: sum(s.state == SegmentState.COPY_SEGMENT_FINISHED for s in copied()) >= 3,
                60,
                "copies",
            )

            # the object store hangs: the leader's next copy is published STARTED and waits on its upload
            seaweed.pause()
            try:

                def dangling() -> list[SegmentStory]:
                    return [s for s in copied() if s.states == [SegmentState.COPY_SEGMENT_STARTED]]

                wait_for(dangling, 30, "a copy in the middle of its upload")
                (started,) = dangling()
                killed_at = producer.highest_acked()
                cluster.kill(first)
            finally:
                seaweed.resume()

            survivors = [n for n in cluster.brokers if n != first]
            wait_for(lambda: _leader_among(cluster, survivors) in survivors, 30, "a new leader")
            second = _leader_among(cluster, survivors)
            leader = cluster.brokers[second]
            # the new leader copies on, and local retention passes the killed broker's log end
            wait_for(
                lambda: (
                    (try_list_offset(leader.port, TOPIC, EARLIEST_LOCAL) or 0) > killed_at + 2 * per_segment
                ),
                90,
                "the new leader's copies and local retention",
            )
        finally:
            producer.finish()
        assert not producer.failed, producer.failed[:3]
        end = list_offset(leader.port, TOPIC, -1)
        wait_for(  # every closed segment is remote: the active one starts right after the highest remote offset
            lambda: list_offset(leader.port, TOPIC, LATEST_TIERED) + 1 == segment_bases(leader.data_dir)[-1],
            60,
            "the last copies",
        )

        # the killed broker comes back as a follower; its log ends below the leader's local log start, so
        # it rebuilds from remote storage, then catches up
        logged = len(cluster.log(first))
        cluster.restart(first)
        wait_for(
            lambda: sorted(partition_metadata(cluster.bootstrap, TOPIC)[0][2]) == [1, 2, 3], 60, "a full ISR"
        )
        assert leader_of(cluster) == second
        assert "rebuilt from remote storage" in cluster.log(first)[logged:]

        # nothing acknowledged is lost, nothing is there twice, every value intact
        seen = read_from_zero(leader.bootstrap, end)
        assert [n for n in producer.acked if n not in seen] == []
        assert [n for n, offsets in seen.items() if len(offsets) > 1] == []
        assert {n: seen[n][0] for n in producer.acked} == producer.acked

        # the metadata: the dead leader's upload is still STARTED, the new leader copied its offsets again
        stories = remote_segments(cluster.bootstrap, TOPIC)
        dead = stories[started.metadata.segment_id]
        assert dead.states == [SegmentState.COPY_SEGMENT_STARTED] and dead.copier == first
        assert [s for s in stories.values() if s.state == SegmentState.COPY_SEGMENT_STARTED] == [dead]
        finished = sorted(
            (s for s in stories.values() if s.state == SegmentState.COPY_SEGMENT_FINISHED),
            key=lambda s: (s.metadata.start_offset, s.metadata.end_offset),
        )
        epochs = _epochs(leader.data_dir)
        assert all(_in_lineage(s, epochs) for s in finished)
        _check_copied_once(finished, log_start=0, highest=list_offset(leader.port, TOPIC, LATEST_TIERED))
        assert any(
            s.copier == second
            and s.metadata.start_offset <= dead.metadata.start_offset <= s.metadata.end_offset
            for s in finished
        )
        assert not [
            s
            for s in stories.values()
            if s.copier == first
            and s.metadata.event_timestamp_ms > dead.metadata.event_timestamp_ms
            and s is not dead
        ]

        # the bucket: each FINISHED segment's three objects; the dead leader's upload, if anything of it
        # landed; nothing else
        _check_bucket(seaweed, prefix, stories, allowed_started={dead.metadata.segment_id})
        # each copied with the producer snapshot at its end (a follower rebuilding from it needs it)
        without = [
            s.metadata
            for s in finished
            if not segment_indexes(seaweed, prefix, s.metadata, IndexType.PRODUCER_SNAPSHOT)
        ]
        assert without == []

        # the restarted broker holds the leader's batches at the same offsets
        ours = {b[0]: b for b in replica_batches(cluster.brokers[first].data_dir, TOPIC, 0)}
        theirs = {b[0]: b for b in replica_batches(leader.data_dir, TOPIC, 0)}
        common = ours.keys() & theirs.keys()
        assert common and all(ours[o] == theirs[o] for o in common)

        # retention: once the log start passes the dead leader's segment, it goes like any other
        resource = ConfigResource(
            ConfigResource.Type.TOPIC,
            TOPIC,
            incremental_configs=[
                ConfigEntry(
                    "retention.bytes", str(4 * SEGMENT_BYTES), incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        admin.incremental_alter_configs([resource])[resource].result(30)
        wait_for(
            lambda: list_offset(leader.port, TOPIC, EARLIEST) > dead.metadata.end_offset,
            60,
            "remote retention",
        )
        wait_for(
            lambda: (
                remote_segments(cluster.bootstrap, TOPIC)[dead.metadata.segment_id].state
                == SegmentState.DELETE_SEGMENT_FINISHED
            ),
            30,
            "the dead leader's segment deleted",
        )
        stories = remote_segments(cluster.bootstrap, TOPIC)
        _check_bucket(seaweed, prefix, stories, allowed_started=set())


def _check_copied_once(finished: list[SegmentStory], log_start: int, highest: int) -> None:
    """The FINISHED segments, by start offset, cover [log_start, highest] with no gap, and none
    holds another (nothing copied twice). Two may overlap only where leadership moved: a new leader
    copies whole segments of its own log, whose boundaries differ from the old leader's (as Kafka)."""
    assert finished and finished[0].metadata.start_offset <= log_start
    assert max(s.metadata.end_offset for s in finished) == highest
    for before, after in zip(finished, finished[1:], strict=False):
        a, b = before.metadata, after.metadata
        assert a.start_offset < b.start_offset and a.end_offset < b.end_offset, (a, b)
        assert b.start_offset <= a.end_offset + 1, f"gap between {a} and {b}"
        if b.start_offset <= a.end_offset:
            assert before.copier != after.copier, f"{a} and {b} overlap"


def _check_bucket(
    seaweed: SeaweedFS, prefix: str, stories: dict[uuid.UUID, SegmentStory], allowed_started: set[uuid.UUID]
) -> None:
    """The bucket holds the three objects of each FINISHED segment, anything of a segment being
    deleted or of ``allowed_started`` (a dead leader's upload), and nothing else."""
    held = bucket_segments(seaweed, prefix)
    for segment_id, story in stories.items():
        suffixes = held.get(segment_id, (None, set()))[1]
        if story.state == SegmentState.COPY_SEGMENT_FINISHED:
            assert suffixes == {"log", "indexes", "rsm-manifest"}, (story, suffixes)
        elif story.state == SegmentState.DELETE_SEGMENT_FINISHED:
            assert not suffixes, (story, suffixes)
    orphans = [
        (segment_id, suffixes)
        for segment_id, (_, suffixes) in held.items()
        if segment_id not in stories
        or stories[segment_id].state == SegmentState.DELETE_SEGMENT_FINISHED
        or (
            stories[segment_id].state == SegmentState.COPY_SEGMENT_STARTED
            and segment_id not in allowed_started
        )
    ]
    assert orphans == []
