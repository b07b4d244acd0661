"""What OffsetCommit and TxnOffsetCommit share: which partitions of a commit request are committed.

`commit_requests` applies Kafka's checks in Kafka's order: a request refused
as a whole (``refusal``: the group, or the transactional id, is not allowed)
answers that code on every partition; otherwise each topic needs READ
(TOPIC_AUTHORIZATION_FAILED), then must exist (UNKNOWN_TOPIC_OR_PARTITION).
It returns the codes of the partitions not committed and the commits of the
rest, each with its leader epoch when the request version carries one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from broker.authorized_operations import ALL_NAMES, denied, split_denied
from broker.context import RequestContext
from broker.groups.coordinator import OffsetCommit
from broker.groups.model import TopicPartition
from broker.security.acls import AclOperation, ResourceType
from broker.topic_results import split_unknown
from protocol.errors import ErrorCode


def commit_requests(
    ctx: RequestContext, topics: Sequence[Any], refusal: ErrorCode | None, leader_epochs: bool
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetCommit]]:
    """(codes of the partitions not committed, commits of the others); see the module docstring."""
    if refusal is not None:
        refused, _ = split_denied(topics, ALL_NAMES, refusal)
        return refused, {}
    forbidden = denied(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in topics))
    refused, allowed = split_denied(topics, forbidden)
    codes, present = split_unknown(ctx.broker.cluster.topics(), allowed)
    codes.update(refused)
    commits = {
        tp: OffsetCommit(
            p.committed_offset, p.committed_metadata, p.committed_leader_epoch if leader_epochs else -1
        )
        for tp, p in present
    }
    return codes, commits
