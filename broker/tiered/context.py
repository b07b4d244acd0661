"""`RemoteLog`: what the remote log manager's tasks use of it, and its counters (`TieredMetrics`).

The copier (`broker.tiered.copier`), remote retention (`broker.tiered.expiration`)
and a follower's rebuild (`broker.tiered.rebuild`) are handed the remote log
manager (`broker.tiered.manager.RemoteLogManager`, which runs them) and type it
with this protocol, so that they do not import the module that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.replica import ReplicaManager
    from broker.replica.partition import Partition
    from broker.tiered.metadata_cache import RemoteLogMetadataCache
    from broker.tiered.metadata_records import SegmentMetadata, TopicIdPartition
    from broker.tiered.metadata_topic import MetadataTopic
    from broker.tiered.segment_store import RemoteSegmentStore
    from broker.txn.broker_links import BrokerLinks


@dataclass
class TieredMetrics:
    """Counters of the remote log manager (Kafka's RemoteCopy*/RemoteFetch*/RemoteDelete* meters)."""

    copy_requests: int = 0
    copy_errors: int = 0
    copy_bytes: int = 0
    fetch_requests: int = 0
    fetch_errors: int = 0
    fetch_bytes: int = 0
    delete_requests: int = 0
    delete_errors: int = 0
    rebuild_requests: int = 0  # Kafka's BuildRemoteLogAuxStateRequestsPerSec
    rebuild_errors: int = 0  # Kafka's BuildRemoteLogAuxStateErrorsPerSec
    store_available: bool = True


class RemoteLog(Protocol):
    """The remote log manager, as its tasks see it."""

    node_id: int
    replicas: ReplicaManager
    metadata: MetadataTopic  # __remote_log_metadata: publish, load, catch_up
    segments: RemoteSegmentStore  # the object store, in the segment layout
    metrics: TieredMetrics
    leader_links: BrokerLinks  # a follower's requests to its leader

    def cache(self, tip: TopicIdPartition) -> RemoteLogMetadataCache:
        """The partition's remote segments as read from the metadata topic (empty if none)."""
        ...

    def tip(self, part: Partition) -> TopicIdPartition:
        """The partition with its topic id; KafkaError if the topic is unknown."""
        ...

    async def delete_segment(self, md: SegmentMetadata, *, best_effort: bool = False) -> None:
        """DELETE_SEGMENT_STARTED, the objects, DELETE_SEGMENT_FINISHED."""
        ...
