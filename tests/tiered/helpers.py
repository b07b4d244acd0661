"""Helpers of the tiered-storage tests: checkable record values, ListOffsets, the bucket's keys and
the remote segments as ``__remote_log_metadata`` tells their story."""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from dataclasses import dataclass, field

from confluent_kafka import Consumer, TopicPartition

from broker.tiered.metadata_records import (
    SegmentMetadata,
    SegmentMetadataUpdate,
    SegmentState,
    decode_metadata,
)
from broker.tiered.metadata_topic import METADATA_TOPIC
from broker.tiered.reader import segment_ref
from broker.tiered.rsm_config import make_object_store, parse_rsm_config
from broker.tiered.segment_store import IndexType, RemoteSegmentRef, RemoteSegmentStore
from tests.cluster.helpers import records_to_end
from tests.cluster_process import QUIET
from tests.support.seaweed import SeaweedFS
from tests.wire import RawClient


def value_of(i: int, size: int) -> bytes:
    """Record i's value of ``size`` bytes: its number and bytes derived from it, so every byte read
    back is checked."""
    head = f"{i:012d}".encode()
    digest = hashlib.sha256(head).digest()
    return head + (digest * ((size - len(head)) // len(digest) + 1))[: size - len(head)]


def list_offset(port: int, topic: str, timestamp: int, version: int = 9, partition: int = 0) -> int:
    """ListOffsets of one partition at the broker on ``port`` (which must lead it); AssertionError on
    an error code."""
    offset = try_list_offset(port, topic, timestamp, version, partition)
    assert offset is not None, f"ListOffsets({timestamp}) of {topic}-{partition} at port {port} failed"
    return offset


def try_list_offset(
    port: int, topic: str, timestamp: int, version: int = 9, partition: int = 0
) -> int | None:
    """`list_offset`, or None when the broker answers an error (it does not lead the partition yet)."""
    with RawClient(port) as raw:
        answer = raw.request(
            2,
            version,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}
                        ],
                    }
                ],
            },
        )
    part = answer.topics[0].partitions[0]
    return None if part.error_code else int(part.offset)


def bucket_keys(seaweed: SeaweedFS, prefix: str = "") -> list[str]:
    """Every key of the bucket under ``prefix``."""
    store = make_object_store(parse_rsm_config(seaweed.rsm_properties()))
    try:
        return asyncio.run(store.list(prefix))
    finally:
        store.close()


def segment_indexes(seaweed: SeaweedFS, key_prefix: str, md: SegmentMetadata, kind: IndexType) -> bytes:
    """One index of a remote segment, as uploaded (read back through the segment layout)."""
    store = make_object_store(parse_rsm_config(seaweed.rsm_properties()))
    try:
        return asyncio.run(RemoteSegmentStore(store, key_prefix).fetch_index(segment_ref(md), kind))
    finally:
        store.close()


def bucket_segments(
    seaweed: SeaweedFS, key_prefix: str
) -> dict[uuid.UUID, tuple[RemoteSegmentRef, set[str]]]:
    """{segment id: (its ref, the suffixes of its objects)} of every segment object under ``key_prefix``
    (the brokers' ``rsm.config.key.prefix``); AssertionError for a key our layout did not make."""
    layout = RemoteSegmentStore(store=None, key_prefix=key_prefix)  # type: ignore[arg-type]  # naming only
    out: dict[uuid.UUID, tuple[RemoteSegmentRef, set[str]]] = {}
    for key in bucket_keys(seaweed, key_prefix):
        parsed = layout.parse_key(key)
        assert parsed is not None, f"a key no segment layout made: {key}"
        ref, suffix = parsed
        out.setdefault(ref.segment_id, (ref, set()))[1].add(suffix)
    return out


@dataclass
class SegmentStory:
    """One remote segment as ``__remote_log_metadata`` tells it: its metadata with every update
    applied, each state it went through in topic order, and the broker that copied it (the one
    that published COPY_SEGMENT_STARTED; updates name the broker that wrote them)."""

    metadata: SegmentMetadata
    copier: int
    states: list[SegmentState] = field(default_factory=list)

    @property
    def state(self) -> SegmentState:
        return self.states[-1]


def remote_segments(bootstrap: str, topic: str, partition: int = 0) -> dict[uuid.UUID, SegmentStory]:
    """{segment id: its story} of every segment of ``topic``-``partition`` ever written to
    ``__remote_log_metadata`` (deleted ones included), read from the beginning with a consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"metadata-{time.time()}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "logger": QUIET,
        }
    )
    meta = consumer.list_topics(METADATA_TOPIC, timeout=10).topics[METADATA_TOPIC]
    partitions = sorted(meta.partitions)
    consumer.assign([TopicPartition(METADATA_TOPIC, p, 0) for p in partitions])
    stories: dict[uuid.UUID, SegmentStory] = {}
    try:
        for msg in records_to_end(consumer, len(partitions), 60):
            rec = decode_metadata(msg.value())
            if rec.tip.topic != topic or rec.tip.partition != partition:
                continue
            if isinstance(rec, SegmentMetadata):
                story = stories.setdefault(rec.segment_id, SegmentStory(rec, rec.broker_id))
                story.states.append(rec.state)
            elif isinstance(rec, SegmentMetadataUpdate):
                story = stories[rec.segment_id]
                story.metadata = story.metadata.with_update(rec)
                story.states.append(rec.state)
    finally:
        consumer.close()
    return stories
